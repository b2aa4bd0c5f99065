import Foundation
import SQLiteAccess
import StoreBuilder

/// A store of the bench corpus's shape pulled as `cp default.store*` pulls it while the app runs:
/// the app has written notes (in its -wal) when the main file is copied, then checkpoints,
/// writes more, and only then is the -wal copied. Every frame is valid; SQLite applies the -wal
/// without a word and shows rows the copied main file's indexes do not hold.
public enum LateWAL {
    /// - Parameters:
    ///   - before: notes (copies of the first ones) written before the main file is copied.
    ///   - after: notes written between the checkpoint and the copy of the -wal.
    ///   - tags: also copy those notes' rows of the join table `Z_2TAGS`, so that two tables
    ///     contradict their indexes.
    public static func pull(from bench: URL, in folder: TemporaryFolder, before: Int, after: Int, tags: Bool = false) throws -> URL {
        let name = "\(before)-\(after)\(tags ? "-tags" : "")"
        let live = folder.path("live-\(name)/default.store")
        let pulled = folder.path("pulled-\(name)/default.store")
        for url in [live, pulled] {
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        }
        for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: bench.path + suffix) {
            try FileManager.default.copyItem(atPath: bench.path + suffix, toPath: live.path + suffix)
        }
        let app = try Connection.open(path: live.path, mode: .readWrite)
        try app.set(.noCheckpointOnClose, true)
        try app.execute("PRAGMA wal_autocheckpoint = 0; PRAGMA wal_checkpoint(TRUNCATE)")
        let columns = try app.columns(of: "ZNOTE").map(\.name)
        func add(from offset: Int, count: Int) throws {
            let values = columns.map { $0 == "Z_PK" ? "Z_PK + \(100_000 + offset)" : "\"\($0)\"" }.joined(separator: ", ")
            try app.execute("INSERT INTO ZNOTE (\(columns.map { "\"\($0)\"" }.joined(separator: ", "))) SELECT \(values) FROM ZNOTE WHERE Z_PK <= \(count)")
            if tags {
                try app.execute("INSERT INTO Z_2TAGS (Z_2NOTES, Z_4TAGS) SELECT Z_2NOTES + \(100_000 + offset), Z_4TAGS FROM Z_2TAGS WHERE Z_2NOTES <= \(count)")
            }
        }
        try add(from: 0, count: before)
        try FileManager.default.copyItem(at: live, to: pulled)                     // cp copies default.store first …
        try app.execute("PRAGMA wal_checkpoint")                                    // … the app checkpoints …
        try add(from: 10_000, count: after)                                         // … and writes more …
        for suffix in ["-shm", "-wal"] {                                            // … before the -shm and -wal are copied.
            try FileManager.default.copyItem(atPath: live.path + suffix, toPath: pulled.path + suffix)
        }
        return pulled
    }

    public struct Pulled {
        public let root: TemporaryFolder
        public var store: URL { root.path("pulled/default.store") }
    }

    /// - Parameter afterCheckpoint: what the app writes between the checkpoint and the copy of the
    ///   -wal: `.update` rewrites one row in place (its table's leaf only), `.insert` adds rows
    ///   (new pages the copied main file does not have).
    public enum Later: Sendable { case update, insert }

    /// The to-do store of `SampleModels.todo` pulled with a late -wal (`pull` for the bench corpus):
    /// the pulled family is `store` in `root`.
    public static func pulledTodo(_ later: Later) throws -> Pulled {
        let root = try TemporaryFolder("late-wal")
        try FileManager.default.createDirectory(at: root.path("live"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: root.path("pulled"), withIntermediateDirectories: true)
        let live = root.path("live/default.store")
        let app = try StoreWriter(url: live, model: SampleModels.todo)
        func add(_ pks: ClosedRange<Int>) throws {
            try app.transaction { w in
                for pk in pks {
                    _ = try w.insert("TodoItem", ["id": .uuid(UUID()), "title": .string("item \(pk) " + String(repeating: "x", count: 200)),
                                                  "createdAt": .date(Date(timeIntervalSinceReferenceDate: Double(pk))),
                                                  "list": .object(entity: "TodoList", pk: 1)], pk: pk)
                }
            }
        }
        try app.transaction { w in _ = try w.insert("TodoList", ["name": .string("Inbox")], pk: 1) }
        try add(1...5)
        try app.checkpoint()
        try add(6...(later == .update ? 12 : 60))              // in the -wal when the main file is copied
        let copy = { (suffix: String) in
            try FileManager.default.copyItem(at: URL(fileURLWithPath: live.path + suffix), to: URL(fileURLWithPath: root.path("pulled/default.store").path + suffix))
        }
        try copy("")                                              // cp copies default.store first …
        try app.checkpoint()                                      // … the app checkpoints …
        switch later {                                            // … and writes more …
        case .update: try app.update("TodoItem", pk: 12, ["isCompleted": .bool(true)])
        case .insert: try add(61...120)
        }
        try copy("-shm")                                          // … before the -shm and -wal are copied.
        try copy("-wal")
        try app.close(leavingWAL: true)
        return Pulled(root: root)
    }
}
