import Foundation
import SQLiteAccess
import StoreTestSupport

/// The genuine SwiftData store (4096-byte pages) with its WAL cut after a frame, as SQLite reads it:
/// the truth `wal --diff` and `recover` are compared with.
enum WALCuts {
    /// A copy of the genuine store's main file and WAL, with the WAL cut after `frames` frames
    /// (0: the main file alone), opened by SQLite in its own scratch folder.
    static func sqlite(_ store: URL, frames: Int, in folder: TemporaryFolder) throws -> Connection {
        let target = folder.path("cut-\(frames)")
        try FileManager.default.createDirectory(at: target, withIntermediateDirectories: true)
        let db = target.appendingPathComponent("db.sqlite")
        try Data(contentsOf: store).write(to: db)
        let wal = try Data(contentsOf: URL(fileURLWithPath: store.path + "-wal"))
        try wal.prefix(32 + frames * (24 + 4096)).write(to: URL(fileURLWithPath: db.path + "-wal"))
        let connection = try Connection.open(path: db.path, mode: .readWrite)
        try connection.disableCheckpointOnClose()
        return connection
    }

    /// The commit frames of the genuine WAL, read from its own bytes (frame headers: page number,
    /// then the database size, non-zero on a commit frame).
    static func commitFrames(_ store: URL) throws -> [Int] {
        let wal = [UInt8](try Data(contentsOf: URL(fileURLWithPath: store.path + "-wal")))
        var frames: [Int] = []
        var frame = 1
        while 32 + frame * (24 + 4096) <= wal.count {
            let at = 32 + (frame - 1) * (24 + 4096) + 4
            if wal[at ..< at + 4].contains(where: { $0 != 0 }) { frames.append(frame) }
            frame += 1
        }
        return frames
    }

    /// Z_PK → ZNAME of every Item SQLite shows through `db`.
    static func items(_ db: Connection) throws -> [Int64: String] {
        var names: [Int64: String] = [:]
        for row in try db.rows("SELECT Z_PK, ZNAME FROM ZITEM") { if let pk = row[0].int64 { names[pk] = row[1].string ?? "" } }
        return names
    }
}
