import Foundation
import StoreBuilder
import StorelensKit
import StoreTestSupport
import Testing

/// The batch docs/library.md runs from the library, against `storelens scan --each --jsonl` on
/// the same folder: the same line for every input (but where, when and by which build it ran).
@Suite("docs/library.md: a batch and its merge from the library")
struct BatchExampleTests {
    /// A line without what differs between two runs of one batch.
    static func comparable(_ file: URL) throws -> [String: String] {
        var lines: [String: String] = [:]
        for text in try String(contentsOf: file, encoding: .utf8).split(separator: "\n") {
            var object = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
            for key in ["host", "startedAt", "seconds", "storelensVersion"] { object.removeValue(forKey: key) }
            let input = try #require(object["input"] as? String)
            lines[input] = String(decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self)
        }
        return lines
    }

    @Test("Storelens.batch over a folder of tickets writes the command's lines; merge sums them up as the command does")
    func sameAsCommand() throws {
        let folder = try TemporaryFolder("batch-example")
        let tickets = folder.path("tickets")
        try FileManager.default.createDirectory(at: tickets, withIntermediateDirectories: true)
        _ = try SampleStores.todo(in: tickets, rows: 3, name: "4711.sqlite")
        try DemoContainer.write(into: tickets.appendingPathComponent("4712"))
        try Data("not an archive".utf8).write(to: tickets.appendingPathComponent("4713.tar.gz"))
        let results = try TemporaryFolder("batch-example-results")
        let library = results.path("scan.jsonl"), command = results.path("command.jsonl")

        // As in docs/library.md (with the folder's and the file's paths):
        let options = Storelens.BatchOptions(command: "scan", results: library.path, jobs: 2, resume: true, each: true)
        let run = try Storelens.batch([tickets.path], options) { input, evidence in
            try evidence.reading { session in
                let result = try Storelens.scan([input], Storelens.ScanOptions(), in: session)
                try session.finish()
                return Storelens.BatchOutcome(exitCode: 0, summary: ScanReport.batchSummary(inventories: result.inventories, stores: result.stores))
            }
        }
        let merged = try Storelens.merge(files: [library])

        let cli = try CLI.run(["scan", tickets.path, "--each", "--jsonl", command.path, "--jobs", "2"])
        #expect(cli.status == Int32(run.exitCode), "\(cli.stderr)")
        #expect(cli.stderr.contains("scan batch: 3 inputs; ran 3 (\(run.ok) ok, 0 with findings, \(run.failed) failed)"), "\(cli.stderr)")
        #expect(run.ran == 3 && run.ok == 2 && run.failed == 1)
        let fromLibrary = try Self.comparable(library), fromCommand = try Self.comparable(command)
        #expect(fromLibrary.count == 3)
        #expect(fromLibrary == fromCommand)

        let mergedByCommand = try CLI.run(["merge", library.path])
        #expect(mergedByCommand.stdout == MergeReport.text(merged) && mergedByCommand.status == Int32(merged.exitCode))
    }
}
