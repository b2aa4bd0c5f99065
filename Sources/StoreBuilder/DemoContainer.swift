import Foundation
import StoreFormats

/// The sample app container `make demo` uses: a to-do app that moved from a Codable
/// `todos.json` (now `todos.imported.json`) and a Core Data store (`Model.sqlite`, entity
/// `CDTodo`) to SwiftData (`default.store`, entity `TodoItem`, `done` renamed `isCompleted`),
/// with a widget extension writing through its own context. Its SwiftData store still has its
/// latest transactions only in the `-wal`.
///
/// Planted problems, and nothing else: two Core Data records never imported, one record
/// imported twice, one JSON record never imported, and the widget writing `TodoList`, an entity
/// it does not own.
public enum DemoContainer {
    static let epoch = Date(timeIntervalSinceReferenceDate: 785_000_000) // 2025-11-16
    static let app = StoreWriter.Writer(bundleID: "com.example.todo", processName: "Todo")
    static let widget = StoreWriter.Writer(bundleID: "com.example.todo.widget", processName: "TodoWidget", contextName: "WidgetContext")
    static let legacyApp = StoreWriter.Writer(author: "legacy", bundleID: "com.example.todo", processName: "Todo")

    /// The legacy Core Data model (an Xcode model: no version identifier).
    public static let legacyModel = ModelDescription(entities: [
        EntityDescription("CDTodo", className: "CDTodo",
                          attributes: [AttributeDescription("id", .uuid), AttributeDescription("title", .string),
                                       AttributeDescription("done", .boolean), AttributeDescription("createdAt", .date)]),
    ], versionIdentifiers: [""])

    /// The SwiftData model, with the renames declared through `originalName`.
    public static let modernModel: ModelDescription = {
        var model = SampleModels.todo
        if let i = model.entities.firstIndex(where: { $0.name == "TodoItem" }) {
            model.entities[i].renamingIdentifier = "CDTodo"
            if let a = model.entities[i].attributes.firstIndex(where: { $0.name == "isCompleted" }) {
                model.entities[i].attributes[a].renamingIdentifier = "done"
            }
        }
        return model
    }()

    /// The manifest for this container (docs/manifest.md).
    public static let manifest = """
    {
      "manifestVersion": 1,
      "stacks": [
        {"name": "legacy", "kind": "coredata", "store": "Library/Application Support/Model.sqlite",
         "writers": {"authors": ["legacy"]}},
        {"name": "modern", "kind": "swiftdata", "store": "Library/Application Support/default.store",
         "writers": {"bundleIDs": ["com.example.todo"]}},
        {"name": "widget", "kind": "swiftdata", "store": "Library/Application Support/default.store",
         "writers": {"bundleIDs": ["com.example.todo.widget"], "contextNames": ["WidgetContext"]}},
        {"name": "json", "kind": "json", "store": "Documents/todos.imported.json", "entity": "TodoItem"}
      ],
      "entities": [
        {"legacy": "CDTodo", "current": "TodoItem", "writer": "modern",
         "attributes": {"done": "isCompleted"}, "identity": ["id"], "cutover": "2025-11-16T00:00:00Z"},
        {"current": "TodoList", "writer": "modern"}
      ]
    }

    """

    static func id(_ n: Int) -> UUID { UUID(uuidString: String(format: "00000000-0000-4000-8000-%012d", n))! }
    static func created(_ n: Int) -> Date { epoch.addingTimeInterval(Double(n) * 3600 - 40 * 86_400) }

    public static func write(into container: URL) throws {
        let support = container.appendingPathComponent("Library/Application Support")
        for folder in ["Documents", "Library/Caches", "Library/Preferences", "tmp"] {
            try FileManager.default.createDirectory(at: container.appendingPathComponent(folder), withIntermediateDirectories: true)
        }
        try FileManager.default.createDirectory(at: support, withIntermediateDirectories: true)
        // iOS marks every data container with its owner's bundle id.
        try BinaryPlistWriter.encode(.dictionary([
            "MCMMetadataIdentifier": .string("com.example.todo"),
            "MCMMetadataContentClass": .integer(2),
        ])).write(to: container.appendingPathComponent(".com.apple.mobile_container_manager.metadata.plist"))

        // The first app version kept to-dos in a Codable JSON file; the import renamed it.
        let jsonItems: [(Int, String, Bool)] = [(6, "Post the parcel", false), (7, "Pick up the keys", false), (10, "Buy stamps", false)]
        let json = "[\n" + jsonItems.map { n, title, done in
            "  {\"id\": \"\(id(n).uuidString)\", \"title\": \"\(title)\", \"done\": \(done), \"createdAt\": \(created(n).timeIntervalSinceReferenceDate)}"
        }.joined(separator: ",\n") + "\n]\n"
        try Data(json.utf8).write(to: container.appendingPathComponent("Documents/todos.imported.json"))

        // The second version used Core Data, with history tracking on for the coming coexistence.
        let legacy = try StoreWriter(url: support.appendingPathComponent("Model.sqlite"), model: legacyModel,
                                     options: .init(frameworkVersion: 1240, uuid: UUID(uuidString: "3C9A1F0B-6E2D-4B8A-9C1E-7F5D2A4B6C8E")!))
        try legacy.transaction(legacyApp, at: epoch.addingTimeInterval(-20 * 86_400)) { w in
            for (n, title, done) in [(1, "Buy milk", true), (2, "Water the plants", false), (5, "Book the meeting room", false),
                                     (8, "Call the plumber", false), (9, "Renew the passport", true)] {
                try w.insert("CDTodo", ["id": .uuid(id(n)), "title": .string(title), "done": .bool(done), "createdAt": .date(created(n))])
            }
        }
        try legacy.close()

        let store = try StoreWriter(url: support.appendingPathComponent("default.store"), model: modernModel,
                                    options: .init(uuid: UUID(uuidString: "6F1C2A53-9B0E-4C7D-8E21-3D5A7B9C0E14")!))
        func item(_ n: Int, _ title: String, list: Int, done: Bool = false, in writer: StoreWriter) throws {
            try writer.insert("TodoItem", [
                "id": .uuid(id(n)), "title": .string(title), "isCompleted": .bool(done),
                "createdAt": .date(created(n)), "list": .object(entity: "TodoList", pk: list),
            ])
        }
        // Checkpointed history: what the main file already holds.
        try store.transaction(app, at: epoch) { w in
            let home = try w.insert("TodoList", ["name": .string("Home")])
            let work = try w.insert("TodoList", ["name": .string("Work")])
            try item(1, "Buy milk", list: home, in: w)
            try item(2, "Water the plants", list: home, in: w)
            try item(3, "Fix the bike", list: home, in: w)
            try item(4, "Send the report", list: work, in: w)
            try item(5, "Book the meeting room", list: work, in: w)
        }
        try store.transaction(app, at: epoch.addingTimeInterval(86_400)) { w in
            try w.update("TodoItem", pk: 1, ["isCompleted": .bool(true)])
        }
        // The import ran a second time for one record after a crash.
        try store.transaction(app, at: epoch.addingTimeInterval(86_400 + 3600)) { w in
            try item(2, "Water the plants", list: 1, in: w)
        }
        try store.checkpoint()
        // Only in the WAL: the app was still running when the container was downloaded.
        try store.transaction(app, at: epoch.addingTimeInterval(2 * 86_400)) { w in
            let errands = try w.insert("TodoList", ["name": .string("Errands")])
            try item(6, "Post the parcel", list: errands, in: w)
            try item(7, "Pick up the keys", list: errands, in: w)
        }
        try store.transaction(app, at: epoch.addingTimeInterval(3 * 86_400)) { w in
            try w.update("TodoItem", pk: 4, ["isCompleted": .bool(true), "title": .string("Send the Q4 report")])
            try w.delete("TodoItem", pk: 3)
        }
        // The widget adds a list through its own context: it does not own TodoList.
        try store.transaction(widget, at: epoch.addingTimeInterval(3 * 86_400 + 600)) { w in
            try w.insert("TodoList", ["name": .string("Quick adds")])
        }
        try store.close(leavingWAL: true)
    }
}
