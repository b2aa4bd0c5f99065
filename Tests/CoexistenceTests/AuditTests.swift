import Acquisition
import Coexistence
import Findings
import Foundation
import StoreBuilder
import StoreTestSupport
import Testing

@Suite("Coexistence audit")
struct AuditTests {
    static let epoch = Date(timeIntervalSinceReferenceDate: 790_000_000)

    static func audit(_ container: URL, manifest text: String) throws -> AuditResult {
        let manifest = try Manifest.parse(text, path: "storelens.json")
        let session = try EvidenceSession()
        defer { session.scratch.remove() }
        let before = try FolderSnapshot(container)
        let result = try Auditor(manifest: manifest, session: session).run(inputs: [container.path])
        try session.finish()
        #expect(try FolderSnapshot(container) == before, "the audit leaves its input byte-identical")
        return result
    }

    static func ids(_ r: AuditResult) -> [String] { r.findings.map(\.id).sorted() }

    static func support(_ container: URL) throws -> URL {
        let url = container.appendingPathComponent("Library/Application Support")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    @Test("the demo container shows its planted problems and nothing else")
    func demo() throws {
        let folder = try TemporaryFolder("audit-demo")
        try DemoContainer.write(into: folder.url)
        let r = try Self.audit(folder.url, manifest: DemoContainer.manifest)
        #expect(Self.ids(r) == ["duplicate-import", "json-not-imported", "not-migrated", "writer-violation"])
        let violation = try #require(r.findings.first { $0.id == "writer-violation" })
        #expect(violation.entity == "TodoList")
        #expect(violation.evidence["stack"] == .string("widget"))
        let missing = try #require(r.findings.first { $0.id == "not-migrated" })
        #expect(missing.evidence["count"] == .int(2))
        let items = try #require(r.entities.first { $0.current == "TodoItem" })
        #expect(items.sides.map { "\($0.stack):\($0.entity):\($0.records)" } == ["legacy:CDTodo:5", "modern:TodoItem:7", "json:TodoItem:3"])
        #expect(items.writersSeen.map { "\($0.stack):\($0.transactions)" } == ["legacy:1", "modern:5"])
    }

    static let sharedManifest = """
    {"manifestVersion": 1,
     "stacks": [
       {"name": "app", "kind": "coredata", "store": "Library/Application Support/Shared.sqlite", "writers": {"authors": ["app"], "contextNames": ["AppContext"]}},
       {"name": "swiftdata", "kind": "swiftdata", "store": "Library/Application Support/Shared.sqlite", "writers": {"bundleIDs": ["com.example.notes"]}}
     ],
     "entities": [
       {"current": "TodoList", "writer": "app"},
       {"current": "TodoItem", "writer": "swiftdata", "identity": ["id"]}
     ]}
    """

    static func sharedStore(in container: URL, appWritesItems: Bool, stranger: Bool) throws {
        let w = try StoreWriter(url: try support(container).appendingPathComponent("Shared.sqlite"), model: SampleModels.todo)
        let app = StoreWriter.Writer(author: "app", bundleID: "com.example.notes", processName: "Notes", contextName: "AppContext")
        let modern = StoreWriter.Writer(bundleID: "com.example.notes", processName: "Notes")
        try w.transaction(app, at: epoch) { try $0.insert("TodoList", ["name": .string("Inbox")]) }
        try w.transaction(modern, at: epoch.addingTimeInterval(60)) {
            try $0.insert("TodoItem", ["id": .uuid(UUID()), "title": .string("a"), "list": .object(entity: "TodoList", pk: 1),
                                       "isCompleted": .bool(false), "createdAt": .date(epoch)])
        }
        if appWritesItems {
            for i in 0..<3 {
                try w.transaction(app, at: epoch.addingTimeInterval(Double(120 + i))) {
                    try $0.insert("TodoItem", ["id": .uuid(UUID()), "title": .string("from app \(i)"), "isCompleted": .bool(false), "createdAt": .date(epoch)])
                }
            }
        }
        if stranger {
            try w.transaction(.init(bundleID: "com.example.notes.share", processName: "ShareExtension"), at: epoch.addingTimeInterval(500)) {
                try $0.update("TodoList", pk: 1, ["name": .string("Shared inbox")])
            }
        }
        try w.close()
    }

    @Test("one shared store, two stacks: clean when each writes only its own entities")
    func sharedClean() throws {
        let folder = try TemporaryFolder("audit-shared-clean")
        try Self.sharedStore(in: folder.url, appWritesItems: false, stranger: false)
        let r = try Self.audit(folder.url, manifest: Self.sharedManifest)
        #expect(r.findings.isEmpty, "\(r.findings.map(\.message))")
        let items = try #require(r.entities.first { $0.current == "TodoItem" })
        #expect(items.writersSeen.map(\.stack) == ["swiftdata"])
    }

    @Test("one shared store: a stack writing another's entity, and a writer nobody claims")
    func sharedViolations() throws {
        let folder = try TemporaryFolder("audit-shared")
        try Self.sharedStore(in: folder.url, appWritesItems: true, stranger: true)
        let r = try Self.audit(folder.url, manifest: Self.sharedManifest)
        #expect(Self.ids(r) == ["unattributed-write", "writer-violation"])
        let v = try #require(r.findings.first { $0.id == "writer-violation" })
        #expect(v.entity == "TodoItem")
        #expect(v.evidence["stack"] == .string("app"))
        #expect(v.evidence["transactions"] == .list([.int(3), .int(4), .int(5)]))
        #expect(v.evidence["transactionCount"] == .int(3))
        let u = try #require(r.findings.first { $0.id == "unattributed-write" })
        #expect(u.evidence["writerValues"] == .string("bundleID=com.example.notes.share process=ShareExtension"))
        #expect(u.evidence["entities"] == .list([.string("TodoList")]))
    }

    /// A legacy store whose entity and attribute names differ, beside the new store.
    static func legacyAndNew(in container: URL, legacyAfterCutover: Bool, changedTitle: Bool, renamingIdentifier: String = "Task") throws {
        let legacyModel = ModelDescription(entities: [
            EntityDescription("Task", attributes: [AttributeDescription("uuid", .uuid), AttributeDescription("name", .string),
                                                   AttributeDescription("finished", .boolean)]),
        ], versionIdentifiers: [""])
        var modern = ModelDescription(entities: [
            EntityDescription("TodoItem", renamingIdentifier: renamingIdentifier,
                              attributes: [AttributeDescription("id", .uuid), AttributeDescription("title", .string, renamingIdentifier: "name"),
                                           AttributeDescription("isCompleted", .boolean, renamingIdentifier: "finished")]),
        ])
        modern.versionIdentifiers = ["1.0.0"]
        let ids = (1...5).map { UUID(uuidString: String(format: "00000000-0000-4000-8000-%012d", $0))! }
        let legacy = try StoreWriter(url: try support(container).appendingPathComponent("Legacy.sqlite"), model: legacyModel)
        try legacy.transaction(.init(author: "legacy"), at: epoch) { w in
            for (i, id) in ids.enumerated() { try w.insert("Task", ["uuid": .uuid(id), "name": .string("task \(i)"), "finished": .bool(i % 2 == 0)]) }
        }
        if legacyAfterCutover {
            try legacy.transaction(.init(author: "legacy"), at: epoch.addingTimeInterval(10 * 86_400)) { w in
                try w.update("Task", pk: 1, ["name": .string("task 0 edited late")])
            }
        }
        try legacy.close()
        let new = try StoreWriter(url: try support(container).appendingPathComponent("default.store"), model: modern)
        try new.transaction(.init(bundleID: "com.example.todo"), at: epoch.addingTimeInterval(86_400)) { w in
            for (i, id) in ids.prefix(3).enumerated() {
                try w.insert("TodoItem", ["id": .uuid(id), "title": .string(changedTitle && i == 1 ? "renamed in new app" : "task \(i)"),
                                          "isCompleted": .bool(i % 2 == 0)])
            }
        }
        try new.close()
    }

    static let legacyManifest = """
    {"manifestVersion": 1,
     "stacks": [
       {"name": "legacy", "kind": "coredata", "store": "Library/Application Support/Legacy.sqlite", "writers": {"authors": ["legacy"]}},
       {"name": "modern", "kind": "swiftdata", "store": "Library/Application Support/default.store", "writers": {"bundleIDs": ["com.example.todo"]}}
     ],
     "entities": [
       {"legacy": "Task", "current": "TodoItem", "writer": "modern",
        "attributes": {"uuid": "id", "name": "title", "finished": "isCompleted"}, "identity": ["id"], "cutover": "2026-01-14T00:00:00Z"}
     ]}
    """

    @Test("legacy and new store with renamed entity and attributes: missing records, changed values, late writes")
    func legacyStore() throws {
        let folder = try TemporaryFolder("audit-legacy")
        try Self.legacyAndNew(in: folder.url, legacyAfterCutover: true, changedTitle: true)
        let r = try Self.audit(folder.url, manifest: Self.legacyManifest)
        #expect(Self.ids(r) == ["not-migrated", "value-mismatch", "write-after-cutover"])
        let missing = try #require(r.findings.first { $0.id == "not-migrated" })
        #expect(missing.evidence["identities"] == .list([.string("00000000-0000-4000-8000-000000000004"), .string("00000000-0000-4000-8000-000000000005")]))
        let mismatch = try #require(r.findings.first { $0.id == "value-mismatch" })
        #expect(mismatch.evidence["count"] == .int(2), "record 1 was edited late on the legacy side, record 2 renamed in the new app")
        #expect(mismatch.message.contains("title"))
        #expect(!mismatch.message.contains("isCompleted"), "finished → isCompleted compares through the rename")
        let items = try #require(r.entities.first)
        #expect(items.sides.map { "\($0.stack):\($0.entity):\($0.records)" } == ["legacy:Task:5", "modern:TodoItem:3"])
    }

    @Test("the clean migration has no findings")
    func legacyClean() throws {
        let folder = try TemporaryFolder("audit-legacy-clean")
        try Self.legacyAndNew(in: folder.url, legacyAfterCutover: false, changedTitle: false)
        var r = try Self.audit(folder.url, manifest: Self.legacyManifest)
        r.findings.removeAll { $0.id == "not-migrated" }  // records 4 and 5 were never imported in this store
        #expect(r.findings.isEmpty, "\(r.findings.map(\.message))")
    }

    @Test("a renaming identifier that disagrees with the manifest is a finding; the manifest wins")
    func nameConflict() throws {
        let folder = try TemporaryFolder("audit-conflict")
        try Self.legacyAndNew(in: folder.url, legacyAfterCutover: false, changedTitle: false, renamingIdentifier: "Chore")
        let r = try Self.audit(folder.url, manifest: Self.legacyManifest)
        let conflict = try #require(r.findings.first { $0.id == "name-conflict" })
        #expect(conflict.evidence["renamingIdentifier"] == .string("Chore"))
        #expect(r.entities.first?.sides.first?.entity == "Task", "the legacy side was still found under the manifest's name")
    }

    @Test("a legacy JSON file whose records were not all imported")
    func jsonLegacy() throws {
        let folder = try TemporaryFolder("audit-json")
        try Self.legacyAndNew(in: folder.url, legacyAfterCutover: false, changedTitle: false)
        try FileManager.default.createDirectory(at: folder.path("Documents"), withIntermediateDirectories: true)
        try Data("""
        {"items": [{"uuid": "00000000-0000-4000-8000-000000000001", "name": "task 0", "finished": true},
                   {"uuid": "00000000-0000-4000-8000-000000000002", "name": "task 1", "finished": 0},
                   {"uuid": "00000000-0000-4000-8000-000000000099", "name": "never imported", "finished": false}]}
        """.utf8).write(to: folder.path("Documents/todos.imported.json"))
        let manifest = Self.legacyManifest.replacingOccurrences(of: #""writers": {"bundleIDs": ["com.example.todo"]}}"#,
            with: #""writers": {"bundleIDs": ["com.example.todo"]}}, {"name": "json", "kind": "json", "store": "Documents/todos.imported.json", "entity": "TodoItem"}"#)
        let r = try Self.audit(folder.url, manifest: manifest)
        let json = try #require(r.findings.first { $0.id == "json-not-imported" })
        #expect(json.evidence["identities"] == .list([.string("00000000-0000-4000-8000-000000000099")]))
        #expect(!r.findings.contains { $0.id == "value-mismatch" && $0.store?.hasSuffix(".json") == true },
                "JSON true/0 compare equal to the stored Booleans")
    }

    @Test("an App Group copy of the store that diverged")
    func appGroupCopy() throws {
        let folder = try TemporaryFolder("audit-group")
        let app = folder.path("app"), group = folder.path("group")
        for (root, extra) in [(app, false), (group, true)] {
            let w = try StoreWriter(url: try Self.support(root).appendingPathComponent("default.store"), model: SampleModels.todo)
            try w.transaction(.init(bundleID: "com.example.todo"), at: Self.epoch) { w in
                for n in 1...3 { try w.insert("TodoItem", ["id": .uuid(UUID(uuidString: "00000000-0000-4000-8000-00000000000\(n)")!), "title": .string("t\(n)"),
                                                    "isCompleted": .bool(false), "createdAt": .date(Self.epoch)]) }
                if extra { try w.insert("TodoItem", ["id": .uuid(UUID(uuidString: "00000000-0000-4000-8000-000000000009")!), "title": .string("only in group"),
                                                     "isCompleted": .bool(false), "createdAt": .date(Self.epoch)]) }
            }
            try w.close()
        }
        let manifest = """
        {"manifestVersion": 1,
         "stacks": [
           {"name": "app", "kind": "swiftdata", "store": "app/Library/Application Support/default.store", "writers": {"bundleIDs": ["com.example.todo"]}},
           {"name": "groupCopy", "kind": "swiftdata", "store": "group/Library/Application Support/default.store"}
         ],
         "entities": [{"current": "TodoItem", "writer": "app", "identity": ["id"]}, {"current": "TodoList", "writer": "app"}]}
        """
        let r = try Self.audit(folder.url, manifest: manifest)
        let diverged = try #require(r.findings.first { $0.id == "copy-diverged" })
        #expect(diverged.evidence["identities"] == .list([.string("00000000-0000-4000-8000-000000000009")]))
        #expect(diverged.severity == .warning)
    }

    @Test("a manifest entity that no store has is an error at its line")
    func unknownEntity() throws {
        let folder = try TemporaryFolder("audit-unknown")
        try Self.sharedStore(in: folder.url, appWritesItems: false, stranger: false)
        let manifest = Self.sharedManifest.replacingOccurrences(of: #"{"current": "TodoList", "writer": "app"},"#,
                                                                with: #"{"current": "TodoList", "writer": "app"}, {"current": "Gadget", "writer": "app"},"#)
        let error = try #require(throws: ManifestError.self) { _ = try Self.audit(folder.url, manifest: manifest) }
        #expect(error.line == 7)
        #expect(error.field == "entities[1].current")
        #expect(error.problem.contains("no store in the input has an entity named \"Gadget\""))
    }
}
