import Foundation
import StoreFormats

/// The sample app container `make demo` inspects: a to-do app's data container whose
/// SwiftData store still has its most recent transactions only in the `-wal`.
public enum DemoContainer {
    static let epoch = Date(timeIntervalSinceReferenceDate: 785_000_000) // 2025-11-16
    static let app = StoreWriter.Writer(bundleID: "com.example.todo", processName: "Todo")

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
        let store = try StoreWriter(url: support.appendingPathComponent("default.store"), model: SampleModels.todo,
                                    options: .init(uuid: UUID(uuidString: "6F1C2A53-9B0E-4C7D-8E21-3D5A7B9C0E14")!))
        var itemNumber = 0
        func item(_ title: String, list: Int, done: Bool = false, in writer: StoreWriter) throws -> Int {
            itemNumber += 1
            return try writer.insert("TodoItem", [
                "id": .uuid(UUID(uuidString: String(format: "00000000-0000-4000-8000-%012d", itemNumber))!),
                "title": .string(title), "isCompleted": .bool(done),
                "createdAt": .date(epoch.addingTimeInterval(Double(itemNumber) * 3600)),
                "list": .object(entity: "TodoList", pk: list),
            ])
        }
        // Checkpointed history: what the main file already holds.
        try store.transaction(app, at: epoch) { w in
            let home = try w.insert("TodoList", ["name": .string("Home")])
            let work = try w.insert("TodoList", ["name": .string("Work")])
            for title in ["Buy milk", "Water the plants", "Fix the bike"] { _ = try item(title, list: home, in: w) }
            for title in ["Send the report", "Book the meeting room"] { _ = try item(title, list: work, in: w) }
        }
        try store.transaction(app, at: epoch.addingTimeInterval(86_400)) { w in
            try w.update("TodoItem", pk: 1, ["isCompleted": .bool(true)])
        }
        try store.checkpoint()
        // Only in the WAL: the app was still running when the container was downloaded.
        try store.transaction(app, at: epoch.addingTimeInterval(2 * 86_400)) { w in
            let errands = try w.insert("TodoList", ["name": .string("Errands")])
            for title in ["Post the parcel", "Pick up the keys"] { _ = try item(title, list: errands, in: w) }
        }
        try store.transaction(app, at: epoch.addingTimeInterval(3 * 86_400)) { w in
            try w.update("TodoItem", pk: 4, ["isCompleted": .bool(true), "title": .string("Send the Q4 report")])
            try w.delete("TodoItem", pk: 3)
        }
        try store.close(leavingWAL: true)
    }
}
