import Foundation
import StoreBuilder
import StoreTestSupport
import Testing

@Suite("audit command")
struct AuditCommandTests {
    static func manifest(itemWriter: String) -> String {
        """
        {"manifestVersion": 1,
         "stacks": [
           {"name": "app", "kind": "swiftdata", "store": "default.store", "writers": {"bundleIDs": ["com.sdsoftware.ResourcesManager"]}},
           {"name": "other", "kind": "swiftdata", "store": "default.store", "writers": {"bundleIDs": ["com.example.other"]}}
         ],
         "entities": [
           {"current": "Item", "writer": "\(itemWriter)"},
           {"current": "Component", "writer": "app"},
           {"current": "CraftingRecipe", "writer": "app"}
         ]}
        """
    }

    @Test("the real SwiftData store: clean when the app writes all three entities, violations when Item belongs to another bundle", .enabled(if: ProjectPaths.hasRealFixtures, Comment(rawValue: ProjectPaths.realFixturesMissing)))
    func realStore() throws {
        let real = try #require(ProjectPaths.realFixtures())
        let folder = try TemporaryFolder("audit-real")
        let source = real.appendingPathComponent("swiftdata-resources")
        let before = try FolderSnapshot(source)
        try Data(Self.manifest(itemWriter: "app").utf8).write(to: folder.path("clean.json"))
        try Data(Self.manifest(itemWriter: "other").utf8).write(to: folder.path("violation.json"))

        let clean = try CLI.run(["audit", source.path, "--manifest", folder.path("clean.json").path, "--format", "json"])
        #expect(clean.status == 0, "\(clean.stdout)\n\(clean.stderr)")
        let cleanJSON = try #require(try JSONSerialization.jsonObject(with: Data(clean.stdout.utf8)) as? [String: Any])
        #expect((cleanJSON["findings"] as? [Any])?.isEmpty == true, "\(clean.stdout)")
        let entities = try #require(cleanJSON["entities"] as? [[String: Any]])
        let item = try #require(entities.first { $0["current"] as? String == "Item" })
        let seen = try #require(item["writersSeen"] as? [[String: Any]])
        #expect(seen.first?["stack"] as? String == "app")
        #expect(seen.first?["changes"] as? Int == 24, "Item: 12 inserts, 7 updates, 5 deletes")

        let bad = try CLI.run(["audit", source.path, "--manifest", folder.path("violation.json").path, "--format", "json"])
        #expect(bad.status == 1, "findings give exit code 1")
        let badJSON = try #require(try JSONSerialization.jsonObject(with: Data(bad.stdout.utf8)) as? [String: Any])
        let findings = try #require(badJSON["findings"] as? [[String: Any]])
        #expect(findings.map { $0["id"] as? String } == ["writer-violation"])
        #expect(findings.first?["entity"] as? String == "Item")
        let evidence = try #require(findings.first?["evidence"] as? [String: Any])
        #expect(evidence["changes"] as? Int == 24)
        #expect(try FolderSnapshot(source) == before)
    }

    @Test("the demo: exit 1, Markdown for a ticket, --fail-on")
    func demo() throws {
        let folder = try TemporaryFolder("audit-demo-cli")
        try DemoContainer.write(into: folder.path("c"))
        try Data(DemoContainer.manifest.utf8).write(to: folder.path("m.json"))
        let md = try CLI.run(["audit", folder.path("c").path, "-m", folder.path("m.json").path, "--format", "markdown"])
        #expect(md.status == 1)
        #expect(md.stdout.contains("**4 error, 0 warning, 0 info**"))
        #expect(md.stdout.contains("| error | `writer-violation` | TodoList |"))
        let lenient = try CLI.run(["audit", folder.path("c").path, "-m", folder.path("m.json").path, "--fail-on", "error"])
        #expect(lenient.status == 1)
        let text = try CLI.run(["audit", folder.path("c").path, "-m", folder.path("m.json").path])
        #expect(text.stdout.contains("ERROR not-migrated [TodoItem]"))
    }

    @Test("a bad manifest is an input error naming the line and field")
    func badManifest() throws {
        let folder = try TemporaryFolder("audit-bad-manifest")
        try DemoContainer.write(into: folder.path("c"))
        try Data(DemoContainer.manifest.replacingOccurrences(of: #""writer": "modern","#, with: #""writer": "nobody","#).utf8).write(to: folder.path("m.json"))
        let r = try CLI.run(["audit", folder.path("c").path, "-m", folder.path("m.json").path])
        #expect(r.status == 2)
        #expect(r.stderr.contains("m.json:13:59:"))
        #expect(r.stderr.contains("entities[0].writer: no stack is named \"nobody\""))
        let missing = try CLI.run(["audit", folder.path("c").path])
        #expect(missing.status == 2)
        #expect(missing.stderr.contains("--manifest"))
    }
}
