import Foundation
import StoreBuilder
import StoreTestSupport
import Testing

/// `lint` and `migration` on every item of the hostile corpus (read from HostileCorpus.swift, not
/// changed): as old store, and as the migration's target store. The same promises as every other
/// command: no crash, no hang, exit 0/1/2, one line naming the input for 2, TMPDIR left empty and
/// the input unchanged.
@Suite("hostile corpus: lint and migration")
struct ModelReviewHostileTests {
    @Test("no crash, no hang, input unchanged; exit 2 is one line naming the input", arguments: HostileCorpus.items)
    func lintAndMigration(_ item: HostileCorpus.Item) throws {
        let root = try TemporaryFolder("hostile-review")
        let folder = root.path("input"), work = root.path("work"), tmp = root.path("tmp")
        for url in [folder, work, tmp] { try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true) }
        let input = try item.make(folder, work).path
        try? FileManager.default.removeItem(at: work)
        let target = try CompiledModelWriter.writeBundle(SampleModels.todo, to: root.path("Target.momd"))
        let good = root.path("good.store")
        try StoreWriter(url: good, model: SampleModels.todo, options: .init(journalMode: .delete)).close()
        let before = try FolderSnapshot(folder)
        let runs: [[String]] = [
            ["lint", input],
            ["lint", input, "--format", "json"],
            ["migration", input, "--to", target.path],
            ["migration", good.path, "--to", input],
        ]
        for arguments in runs {
            let run = try BoundedRun.run(arguments, environment: ["TMPDIR": tmp.path], timeout: HostileRuns.timeout)
            let what = "\(item.name) — storelens \(arguments.joined(separator: " ")) (exit \(run.status))\nstderr: \(run.stderr.prefix(2000))"
            #expect(!run.timedOut, "hang: \(what)")
            #expect(!run.crashed, "crash: \(what)")
            #expect([0, 1, 2].contains(run.status), "\(what)")
            if item.expectation == .rejected && arguments[1] == input {
                #expect(run.status == 2, "an unreadable input must be refused: \(what)")
            }
            if run.status == 2 {
                // A plain SQLite store beside the stores is noted on stderr before the error line.
                let lines = run.stderr.split(separator: "\n").filter { !$0.hasPrefix("Note: ") }
                #expect(lines.count == 1, "one line: \(what)")
                #expect(lines.first?.hasPrefix("Error: ") == true, "\(what)")
                #expect(HostileRuns.names(run.stderr, input), "the error must name the input: \(what)")
            }
            #expect(try FileManager.default.contentsOfDirectory(atPath: tmp.path).isEmpty, "left in TMPDIR: \(what)")
            #expect(try FolderSnapshot(folder) == before, "the input folder changed: \(what)")
        }
    }
}
