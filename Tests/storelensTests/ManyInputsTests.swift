import Foundation
import StoreBuilder
import StoreFormats
import StoreTestSupport
import Testing

/// The ordinary mess of many inputs: a folder of many containers, the same input given twice, a
/// batch results file cut off mid-line, JSON consumers wanting an archive's hash.
@Suite("many inputs")
struct ManyInputsTests {
    /// `count` copies of the demo container, as a simulator's Containers/Data/Application folder.
    static func containers(_ count: Int, in folder: TemporaryFolder) throws -> URL {
        let template = folder.path("template")
        try DemoContainer.write(into: template)
        let root = folder.path("Application")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        for i in 1...count { try FileManager.default.copyItem(at: template, to: root.appendingPathComponent(String(format: "APP-%03d", i))) }
        return root
    }

    @Test("a long scan's progress line says which store of how many; a report of many stores links a grouped, capped index instead of one link per store")
    func progressAndStoreIndex() throws {
        let folder = try TemporaryFolder("many")
        let root = try Self.containers(8, in: folder)
        let stores = try #require(try JSONSerialization.jsonObject(with: Data(CLI.run(["scan", root.path, "--format", "json"]).stdout.utf8)) as? [String: Any])["stores"] as? [Any]
        let count = try #require(stores?.count)
        #expect(count == 16)
        let scan = try CLI.run(["scan", root.path], environment: ["STORELENS_PROGRESS": "always"])
        #expect(scan.status == 0, "\(scan.stderr)")
        #expect(scan.stderr.contains("store 1 of \(count)"), "\(scan.stderr.prefix(500))")
        #expect(scan.stderr.contains("store \(count) of \(count)"))

        let html = try CLI.run(["report", "--out", "-", root.path])
        #expect(html.stdout.contains("<a href=\"#stores\">Stores (\(count))</a>"))
        let nav = try #require(html.stdout.range(of: "<nav>").flatMap { start in html.stdout.range(of: "</nav>", range: start.upperBound..<html.stdout.endIndex).map { html.stdout[start.lowerBound..<$0.upperBound] } })
        #expect(!nav.contains("#store-1\""), "no per-store links above the summary: \(nav)")
        #expect(html.stdout.contains("<section id=\"stores\">"))
        #expect(html.stdout.contains("com.example.todo (app): \(count) stores"), "grouped by container identity")
        for i in 1...count { #expect(html.stdout.contains("<section id=\"store-\(i)\" class=\"store\">")) }
    }

    @Test("the same input given twice, or through another path, is read once: --store can still be satisfied")
    func sameInputTwice() throws {
        let folder = try TemporaryFolder("twice")
        let container = folder.path("c")
        try DemoContainer.write(into: container)
        try FileManager.default.createSymbolicLink(atPath: folder.path("link").path, withDestinationPath: container.path)
        let once = try CLI.run(["inspect", container.path, "--store", "default.store"])
        #expect(once.status == 0, "\(once.stderr)")
        let twice = try CLI.run(["inspect", container.path, container.path + "/", folder.path("link").path, "--store", "default.store"])
        #expect(twice.status == 0, "\(twice.stderr)")
        #expect(twice.stdout == once.stdout)
        let scan = try CLI.run(["scan", container.path, folder.path("c/../c").path, "--format", "json"])
        let json = try #require(try JSONSerialization.jsonObject(with: Data(scan.stdout.utf8)) as? [String: Any])
        #expect((json["inputs"] as? [Any])?.count == 1)
        #expect((json["stores"] as? [Any])?.count == 2)
    }

    @Test("a results file cut off mid-line is mended on --resume: the partial line is set aside with a warning and its input runs again")
    func partialResultsLine() throws {
        let folder = try TemporaryFolder("partial-jsonl")
        let tickets = folder.path("tickets")
        try FileManager.default.createDirectory(at: tickets, withIntermediateDirectories: true)
        for name in ["a", "b"] { try DemoContainer.write(into: tickets.appendingPathComponent(name)) }
        let results = folder.path("scan.jsonl")
        let first = try CLI.run(["scan", tickets.path, "--each", "--jsonl", results.path])
        #expect(first.status == 0, "\(first.stderr)")
        // A run killed while writing b's line: a's line whole, b's cut in the middle.
        let lines = try String(contentsOf: results, encoding: .utf8).split(separator: "\n").map(String.init)
        #expect(lines.count == 2)
        let whole = try #require(lines.first { $0.contains("/a\"") })
        let cut = try #require(lines.first { $0.contains("/b\"") }).prefix(40)
        try Data((whole + "\n" + cut).utf8).write(to: results)

        let resumed = try CLI.run(["scan", tickets.path, "--each", "--jsonl", results.path, "--resume"])
        #expect(resumed.status == 0, "\(resumed.stderr)")
        #expect(resumed.stderr.contains("was cut off"), "\(resumed.stderr)")
        #expect(resumed.stderr.contains("skipped 1 already done"))
        let after = try String(contentsOf: results, encoding: .utf8)
        #expect(after.hasSuffix("\n"))
        let parsed = after.split(separator: "\n").map { try? JSONSerialization.jsonObject(with: Data($0.utf8)) }
        #expect(parsed.count == 2 && parsed.allSatisfy { $0 != nil }, "every line is JSON again (jq reads the file): \(after)")
        #expect(try String(contentsOf: folder.path("scan.jsonl.partial"), encoding: .utf8) == cut + "\n")
    }

    @Test("scan --format json gives an archive's SHA-256, as docs/json-output.md promises")
    func archiveHashInJSON() throws {
        let folder = try TemporaryFolder("archive-hash")
        try DemoContainer.write(into: folder.path("c"))
        let archive = folder.path("c.tar.gz")
        try ArchiveMaker.write(try ArchiveMaker.entries(of: folder.path("c"), prefix: "c"), to: archive, format: .paxTar, filter: .gzip)
        let r = try CLI.run(["scan", archive.path, "--format", "json"])
        let json = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
        let input = try #require((json["inputs"] as? [[String: Any]])?.first)
        #expect(input["sha256"] as? String == (try SHA256.hexOfFile(at: archive)))
    }
}
