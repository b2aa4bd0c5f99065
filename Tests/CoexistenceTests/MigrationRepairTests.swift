import Acquisition
import Coexistence
import Foundation
import Repair
import SQLiteAccess
import StoreBuilder
import StoreTestSupport
import Testing

@Suite("Cross-store repair")
struct MigrationRepairLibraryTests {
    static let legacyModel = ModelDescription(entities: [
        EntityDescription("CDList", attributes: [AttributeDescription("title", .string)],
                          relationships: [RelationshipDescription("todos", to: "CDTodo", inverse: "list", toMany: true)]),
        EntityDescription("CDTodo", attributes: [AttributeDescription("uuid", .uuid), AttributeDescription("text", .string)],
                          relationships: [RelationshipDescription("list", to: "CDList", inverse: "todos")]),
    ], versionIdentifiers: [""])

    static let manifest = """
    {"manifestVersion": 1,
     "stacks": [
       {"name": "legacy", "kind": "coredata", "store": "Library/Application Support/Legacy.sqlite", "writers": {"authors": ["legacy"]}},
       {"name": "modern", "kind": "swiftdata", "store": "Library/Application Support/default.store", "writers": {"bundleIDs": ["com.example.todo"]}}
     ],
     "entities": [
       {"legacy": "CDList", "current": "TodoList", "writer": "modern", "attributes": {"title": "name"}, "identity": ["name"]},
       {"legacy": "CDTodo", "current": "TodoItem", "writer": "modern", "attributes": {"uuid": "id", "text": "title"}, "identity": ["id"]}
     ]}
    """

    @Test("imported records point at the new store's rows with the same identity as their legacy targets")
    func relationshipsRemapped() throws {
        let folder = try TemporaryFolder("migration-relationships")
        let support = folder.path("Library/Application Support")
        try FileManager.default.createDirectory(at: support, withIntermediateDirectories: true)
        let epoch = Date(timeIntervalSinceReferenceDate: 780_000_000)
        let ids = (1...3).map { UUID(uuidString: "00000000-0000-4000-8000-00000000000\($0)")! }
        let legacy = try StoreWriter(url: support.appendingPathComponent("Legacy.sqlite"), model: Self.legacyModel)
        try legacy.transaction(.init(author: "legacy"), at: epoch) { w in
            try w.insert("CDList", ["title": .string("Home")])
            try w.insert("CDList", ["title": .string("Work")])
            try w.insert("CDTodo", ["uuid": .uuid(ids[0]), "text": .string("milk"), "list": .object(entity: "CDList", pk: 1)])
            try w.insert("CDTodo", ["uuid": .uuid(ids[1]), "text": .string("report"), "list": .object(entity: "CDList", pk: 2)])
            try w.insert("CDTodo", ["uuid": .uuid(ids[2]), "text": .string("plants"), "list": .object(entity: "CDList", pk: 1)])
        }
        try legacy.close()
        let modern = try StoreWriter(url: support.appendingPathComponent("default.store"), model: SampleModels.todo)
        try modern.transaction(.init(bundleID: "com.example.todo"), at: epoch.addingTimeInterval(60)) { w in
            try w.insert("TodoList", ["name": .string("Work")])   // pk 1: numbering differs from the legacy store
            try w.insert("TodoList", ["name": .string("Home")])   // pk 2
            try w.insert("TodoItem", ["id": .uuid(ids[0]), "title": .string("milk"), "isCompleted": .bool(false),
                                      "createdAt": .date(epoch), "list": .object(entity: "TodoList", pk: 2)])
        }
        try modern.close()

        let session = try EvidenceSession()
        defer { session.scratch.remove() }
        let auditor = Auditor(manifest: try Manifest.parse(Self.manifest, path: "m.json"), session: session)
        let migration = try auditor.migrationRepair(inputs: [folder.url.path])
        let importAction = try #require(migration.plan.actions.first { $0.name == "import-missing-records" })
        #expect(importAction.count == 2)
        #expect(importAction.summary.contains("Relationships list point at the new store's rows"))
        var repairer = Repairer(session: session, store: migration.store)
        repairer.givenPlan = migration.plan
        let out = try TemporaryFolder("migration-relationships-out")
        let outcome = try repairer.run(output: out.path("default.store"))
        #expect(outcome.written)

        let db = try Connection.open(path: out.path("default.store").path, mode: .readOnly)
        let rows = try db.rows("SELECT i.ZTITLE, l.ZNAME FROM ZTODOITEM i LEFT JOIN ZTODOLIST l ON l.Z_PK = i.ZLIST ORDER BY i.ZTITLE")
        #expect(rows.map { "\($0[0].string ?? "?"):\($0[1].string ?? "nil")" } == ["milk:Home", "plants:Home", "report:Work"])
        #expect(try db.scalar("SELECT count(*) FROM ZTODOITEM WHERE ZISCOMPLETED IS NULL OR ZCREATEDAT IS NULL").int == 0,
                "required attributes the legacy side lacks got values")
    }
}
