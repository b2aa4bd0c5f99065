import Foundation
import SQLiteAccess

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
}
