import Foundation
import StoreBuilder

/// Small stores the command tests read, built with the project's builder.
public enum SampleStores {
    /// A to-do store (`SampleModels.todo`): one list and `rows` items written in one transaction by
    /// com.example.todo; `extra` writes more before the store is closed.
    public static func todo(in folder: URL, journal: StoreWriter.Options.JournalMode = .delete, rows: Int = 50,
                            name: String = "Store.sqlite", _ extra: ((StoreWriter) throws -> Void)? = nil) throws -> URL {
        let url = folder.appendingPathComponent(name)
        let writer = try StoreWriter(url: url, model: SampleModels.todo, options: .init(journalMode: journal))
        try writer.transaction(.init(bundleID: "com.example.todo")) { w in
            let list = try w.insert("TodoList", ["name": .string("Home")])
            for i in 0..<rows {
                try w.insert("TodoItem", ["title": .string(String(repeating: "task \(i) ", count: 20)),
                                          "list": .object(entity: "TodoList", pk: list)])
            }
        }
        try extra?(writer)
        try writer.close()
        return url
    }

    /// The demo container (`DemoContainer`) written into `folder`; returns its SwiftData store,
    /// whose latest transactions are only in its -wal.
    public static func demo(in folder: TemporaryFolder) throws -> URL {
        try DemoContainer.write(into: folder.url)
        return folder.url.appendingPathComponent("Library/Application Support/default.store")
    }
}
