import Foundation
import StoreBuilder
import StoreTestSupport
import Testing

/// What `check --format json` says it ran.
@Suite("check command")
struct CheckCommandTests {
    static func documentedFindingIDs() throws -> Set<String> {
        let doc = try String(contentsOf: ProjectPaths.root().appendingPathComponent("docs/check.md"), encoding: .utf8)
        // Rows of the findings table: | `id` | severity | …
        return Set(doc.split(separator: "\n").compactMap { line -> String? in
            guard line.hasPrefix("| `"), let end = line.dropFirst(3).firstIndex(of: "`") else { return nil }
            return String(line[line.index(line.startIndex, offsetBy: 3)..<end])
        })
    }

    @Test("`checks` lists the checks run: each documented in docs/check.md, check-not-run (a finding about a check) never, --only narrows it")
    func checksRun() throws {
        let folder = try TemporaryFolder("check-json")
        let url = folder.path("Todo.sqlite")
        let writer = try StoreWriter(url: url, model: SampleModels.todo, options: .init(journalMode: .delete))
        try writer.transaction(.init(bundleID: "com.example.todo")) { w in
            try w.insert("TodoList", ["name": .string("Home")])
        }
        try writer.close()
        let documented = try Self.documentedFindingIDs()

        let all = try CLI.run(["check", url.path, "--format", "json"])
        #expect(all.status == 0, "\(all.stderr)")
        let checks = try #require((try JSONSerialization.jsonObject(with: Data(all.stdout.utf8)) as? [String: Any])?["checks"] as? [String])
        #expect(!checks.isEmpty)
        #expect(!checks.contains("check-not-run"))
        for id in checks { #expect(documented.contains(id), "\(id) is run but not documented in docs/check.md") }

        let only = try CLI.run(["check", url.path, "--format", "json", "--only", "zmax-below-max-pk"])
        #expect(only.status == 0, "\(only.stderr)")
        let narrowed = (try JSONSerialization.jsonObject(with: Data(only.stdout.utf8)) as? [String: Any])?["checks"] as? [String]
        #expect(narrowed == ["zmax-below-max-pk"])
    }
}
