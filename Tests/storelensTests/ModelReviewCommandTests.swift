import Foundation
import SQLiteAccess
import StoreBuilder
import StoreTestSupport
import Testing

/// `storelens migration` and `storelens lint` as a user runs them: exit codes, formats, errors.
@Suite("migration and lint commands")
struct ModelReviewCommandTests {
    static let v1 = ModelDescription(entities: [
        EntityDescription("Note", attributes: [AttributeDescription("title", .string), AttributeDescription("body", .string)],
                          relationships: [RelationshipDescription("folder", to: "Folder", inverse: "notes")]),
        EntityDescription("Folder", attributes: [AttributeDescription("name", .string)],
                          relationships: [RelationshipDescription("notes", to: "Note", inverse: "folder", toMany: true)]),
    ], versionIdentifiers: ["1"])

    static func store(_ model: ModelDescription, at url: URL, rows: Bool = true) throws {
        let w = try StoreWriter(url: url, model: model, options: .init(journalMode: .delete))
        if rows {
            try w.insert("Note", ["title": .string("a"), "body": .string("x")])
            try w.insert("Note", ["title": .string("a"), "body": .string("y")])
        }
        try w.close()
    }

    @Test("a lightweight hop exits 0; one that would fail exits 1 and names the rows")
    func migrationExitCodes() throws {
        let folder = try TemporaryFolder("migration-cli")
        let old = folder.path("old.store")
        try Self.store(Self.v1, at: old)
        var lightweight = Self.v1
        lightweight.versionIdentifiers = ["2"]
        lightweight.entities[0].attributes.append(AttributeDescription("pinned", .boolean))
        let target = try XcodeModelWriter.write(versions: [("V2", lightweight)], to: folder.path("V2.xcdatamodeld"))
        let ok = try CLI.run(["migration", old.path, "--to", target.path])
        #expect(ok.status == 0, "\(ok.stdout)\(ok.stderr)")
        #expect(ok.stdout.contains("attribute-added-optional"))
        #expect(ok.stdout.contains("verdict: lightweight"))

        var failing = Self.v1
        failing.entities[0].uniqueConstraints = [["title"]]
        let bad = try CompiledModelWriter.writeBundle(failing, to: folder.path("V3.momd"))
        let run = try CLI.run(["migration", old.path, "--to", bad.path, "--format", "json"])
        #expect(run.status == 1, "\(run.stderr)")
        let top = try CommandJSON.object(run.stdout)
        #expect(top["failsOrLosesData"] as? Bool == true)
        let hops = try #require(top["hops"] as? [[String: Any]])
        let findings = try #require(hops.first?["findings"] as? [[String: Any]])
        let unique = try #require(findings.first { $0["id"] as? String == "unique-constraint-added" })
        let evidence = try #require(unique["evidence"] as? [String: Any])
        // Both notes are titled "a": SQLite on a copy says which keys.
        let copy = folder.path("copy.store")
        try FileManager.default.copyItem(at: old, to: copy)
        let keys = try Connection.open(path: copy.path, mode: .readOnly).rows("SELECT Z_PK FROM ZNOTE WHERE ZTITLE = 'a' ORDER BY Z_PK").compactMap { $0[0].int }
        #expect(evidence["keys"] as? [Int] == keys)
        #expect(evidence["rows"] as? Int == keys.count)
        let markdown = try CLI.run(["migration", old.path, "--to", bad.path, "--format", "markdown"])
        #expect(markdown.status == 1 && markdown.stdout.contains("`unique-constraint-added`"))
    }

    @Test("bad targets are input errors, each said in one sentence")
    func migrationBadInput() throws {
        let folder = try TemporaryFolder("migration-cli")
        let old = folder.path("old.store")
        try Self.store(Self.v1, at: old)
        let missing = try CLI.run(["migration", old.path])
        #expect(missing.status == 2 && missing.stderr.contains("--to"))
        let noCache = folder.path("nocache.store")
        let w = try StoreWriter(url: noCache, model: Self.v1, options: .init(journalMode: .delete, modelCache: false))
        try w.close()
        let run = try CLI.run(["migration", old.path, "--to", noCache.path])
        #expect(run.status == 2 && run.stderr.contains("no cached model"), "\(run.stderr)")
        let nowhere = try CLI.run(["migration", old.path, "--to", folder.path("nothing.xcdatamodeld").path])
        #expect(nowhere.status == 2, "\(nowhere.stderr)")
        let junk = folder.path("junk.mom")
        try Data("not a model".utf8).write(to: junk)
        let bad = try CLI.run(["migration", old.path, "--to", junk.path])
        #expect(bad.status == 2 && bad.stderr.contains("junk.mom"), "\(bad.stderr)")
    }

    @Test("lint: --fail-on decides the exit; a model alone can be linted; text, json and markdown agree")
    func lint() throws {
        let folder = try TemporaryFolder("lint-cli")
        let url = folder.path("notes.store")
        try Self.store(Self.v1, at: url)
        // Every relationship has an inverse and every attribute is optional: nothing above info.
        let clean = try CLI.run(["lint", url.path])
        #expect(clean.status == 0, "\(clean.stdout)")
        var unready = Self.v1
        unready.entities[0].uniqueConstraints = [["title"]]
        let model = try XcodeModelWriter.write(versions: [("V", unready)], to: folder.path("V.xcdatamodeld"))
        let alone = try CLI.run(["lint", "--model", model.path, "--format", "json"])
        #expect(alone.status == 1)
        let findings = try #require(try CommandJSON.object(alone.stdout)["findings"] as? [[String: Any]])
        #expect(findings.map { $0["id"] as? String } == ["cloudkit-unique-constraint"])
        let text = try CLI.run(["lint", "--model", model.path])
        #expect(text.stdout.contains("ERROR cloudkit-unique-constraint [Note]"))
        let markdown = try CLI.run(["lint", "--model", model.path, "--format", "markdown"])
        #expect(markdown.stdout.contains("`cloudkit-unique-constraint`"))
        // history-off is information: --fail-on info turns it into exit 1.
        let old = folder.path("old.store")
        let w = try StoreWriter(url: old, model: Self.v1, options: .init(journalMode: .delete, historyTracking: false))
        try w.close()
        #expect(try CLI.run(["lint", old.path]).status == 0)
        let strict = try CLI.run(["lint", old.path, "--fail-on", "info"])
        #expect(strict.status == 1 && strict.stdout.contains("history-off"), "\(strict.stdout)")
        #expect(try CLI.run(["lint"]).status == 2)
    }

    @Test("report --lint --migration-to puts the same findings in the HTML")
    func report() throws {
        let folder = try TemporaryFolder("report-review")
        let old = folder.path("old.store")
        try Self.store(Self.v1, at: old)
        var target = Self.v1
        target.entities[0].uniqueConstraints = [["title"]]
        let model = try XcodeModelWriter.write(versions: [("V2", target)], to: folder.path("V2.xcdatamodeld"))
        let html = folder.path("r.html")
        let run = try CLI.run(["report", old.path, "--lint", "--migration-to", model.path, "--out", html.path])
        #expect(run.status == 1, "\(run.stderr)")
        let text = try String(contentsOf: html, encoding: .utf8)
        let migration = try CLI.run(["migration", old.path, "--to", model.path, "--format", "json"])
        let ids = try #require((try CommandJSON.object(migration.stdout)["hops"] as? [[String: Any]])?.first?["findings"] as? [[String: Any]]).compactMap { $0["id"] as? String }
        #expect(!ids.isEmpty)
        for id in ids { #expect(text.contains(id), "\(id) is not in the report") }
        // Without the flags the report has neither.
        let plain = folder.path("plain.html")
        _ = try CLI.run(["report", old.path, "--out", plain.path])
        #expect(!(try String(contentsOf: plain, encoding: .utf8)).contains("unique-constraint-added"))
    }

    @Test("lint on every genuine Core Data store: no crash, and what it says is about the store's own model",
          .enabled(if: ProjectPaths.hasRealFixtures, Comment(rawValue: ProjectPaths.realFixturesMissing)))
    func lintRealStores() throws {
        let real = try #require(ProjectPaths.realFixtures())
        for name in try FileManager.default.contentsOfDirectory(atPath: real.path).sorted() where !name.hasSuffix(".md") {
            let run = try CLI.run(["lint", real.appendingPathComponent(name).path, "--format", "json"])
            // backup-manifest-db holds no store a container scan finds: an input error, said so.
            #expect([0, 1, 2].contains(run.status), "\(name): \(run.stderr)")
            #expect(!run.stderr.contains("internal error"), "\(name): \(run.stderr)")
            guard run.status != 2 else { continue }
            let findings = try #require(try CommandJSON.object(run.stdout)["findings"] as? [[String: Any]], "\(name)")
            for f in findings {
                // Core Data's own mirroring entities are never linted as the app's.
                #expect(!((f["entity"] as? String)?.hasPrefix("NSCK") ?? false), "\(name): \(f)")
            }
        }
    }
}
