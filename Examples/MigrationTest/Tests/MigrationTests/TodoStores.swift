import Foundation
import StoreBuilder

/// The to-do app's two stores, written with storelens's store builder in Apple's exact layout:
/// the Core Data store version 1 shipped (`Model.sqlite`, entity `CDTodo`) and the SwiftData
/// store version 2 migrates it into (`default.store`, entity `TodoItem`, `done` renamed
/// `isCompleted`). In an app's own suite the second store would come from running the app's
/// migration code on the first; here the test says what that code wrote.
enum TodoStores {
    static let epoch = Date(timeIntervalSinceReferenceDate: 790_000_000)

    /// Who writes: version 1 tagged its context's author; version 2 writes as the app's bundle;
    /// the widget has a context of its own.
    static let legacyApp = StoreWriter.Writer(author: "legacy", bundleID: "com.example.todo", processName: "Todo")
    static let app = StoreWriter.Writer(bundleID: "com.example.todo", processName: "Todo")
    static let widget = StoreWriter.Writer(bundleID: "com.example.todo.widget", processName: "TodoWidget", contextName: "WidgetContext")

    static let legacyModel = ModelDescription(entities: [
        EntityDescription("CDTodo", className: "CDTodo",
                          attributes: [AttributeDescription("id", .uuid), AttributeDescription("title", .string),
                                       AttributeDescription("done", .boolean), AttributeDescription("createdAt", .date)]),
    ], versionIdentifiers: [""])

    static let newModel: ModelDescription = {
        var item = EntityDescription("TodoItem",
                                     attributes: [AttributeDescription("id", .uuid, optional: false),
                                                  AttributeDescription("title", .string, optional: false),
                                                  AttributeDescription("isCompleted", .boolean, optional: false, default: .bool(false)),
                                                  AttributeDescription("createdAt", .date, optional: false)])
        // SwiftData's @Attribute(originalName:) and the entity's renaming identifier.
        item.renamingIdentifier = "CDTodo"
        item.attributes[2].renamingIdentifier = "done"
        return ModelDescription(entities: [item], versionIdentifiers: ["2.0.0"])
    }()

    /// The team's manifest (docs/manifest.md): which stack writes what, and how names moved.
    static let manifest = """
    {"manifestVersion": 1,
     "stacks": [
       {"name": "legacy", "kind": "coredata", "store": "Model.sqlite", "writers": {"authors": ["legacy"]}},
       {"name": "app", "kind": "swiftdata", "store": "default.store", "writers": {"bundleIDs": ["com.example.todo"]}},
       {"name": "widget", "kind": "swiftdata", "store": "default.store", "writers": {"bundleIDs": ["com.example.todo.widget"]}}
     ],
     "entities": [
       {"legacy": "CDTodo", "current": "TodoItem", "writer": "app", "attributes": {"done": "isCompleted"}, "identity": ["id"]}
     ]}
    """

    struct Todo {
        let n: Int
        let title: String
        let done: Bool
        var id: UUID { UUID(uuidString: String(format: "00000000-0000-4000-8000-%012d", n))! }
        var created: Date { TodoStores.epoch.addingTimeInterval(Double(n) * 3600) }
    }

    static let todos = [Todo(n: 1, title: "Buy milk", done: true), Todo(n: 2, title: "Water the plants", done: false),
                        Todo(n: 3, title: "Fix the bike", done: false), Todo(n: 4, title: "Send the report", done: true),
                        Todo(n: 5, title: "Book the meeting room", done: false)]

    /// Version 1's store, as users have it.
    static func writeLegacy(in folder: URL, todos: [Todo] = todos) throws {
        let store = try StoreWriter(url: folder.appendingPathComponent("Model.sqlite"), model: legacyModel)
        try store.transaction(legacyApp, at: epoch) { w in
            for t in todos {
                try w.insert("CDTodo", ["id": .uuid(t.id), "title": .string(t.title), "done": .bool(t.done), "createdAt": .date(t.created)])
            }
        }
        try store.close()
    }

    /// Version 2's store after the migration imported `imported`, one transaction per record (as
    /// the app's importer saves), then anything `afterwards` writes.
    static func writeNew(in folder: URL, imported: [Todo], afterwards: ((StoreWriter) throws -> Void)? = nil) throws {
        let store = try StoreWriter(url: folder.appendingPathComponent("default.store"), model: newModel)
        for (i, t) in imported.enumerated() {
            try store.transaction(app, at: epoch.addingTimeInterval(86_400 + Double(i))) { w in
                try w.insert("TodoItem", ["id": .uuid(t.id), "title": .string(t.title), "isCompleted": .bool(t.done), "createdAt": .date(t.created)])
            }
        }
        try afterwards?(store)
        try store.close()
    }
}
