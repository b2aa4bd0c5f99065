import Acquisition
import Foundation
import SQLiteAccess

/// A timeline's lines kept in a scratch SQLite file in a private working folder of its own until
/// every store is read, then handed back sorted by time: memory follows the page cache and the sorter's
/// buffers, not the number of events (a store with ten million dated rows once held them all).
///
/// Ties keep the order the lines were added in (`rowid`), which is the order the events were read:
/// the same order the stable sort of the collected events gave. Any failure of this file is
/// storelens' own (`WorkingFolderFailure`), never the evidence's.
public final class TimelineSpool {
    private let connection: Connection
    private let insert: Statement
    /// Its own folder, not the session's: the session's is removed when the evidence is verified,
    /// before the sorted lines are written (nothing is printed before the originals are checked).
    private let folder: ScratchFolder
    private var writing = false

    /// Makes the scratch file in a new private folder under `parent` (removed when this is released).
    public init(parent: URL) throws {
        folder = try ScratchFolder(parent: parent)
        do {
            (connection, insert) = try Self.create(in: folder.url)
        } catch {
            throw Self.ours(error)
        }
    }

    private static func create(in folder: URL) throws -> (Connection, Statement) {
        let path = folder.appendingPathComponent("timeline-events.sqlite").path
        let connection = try Connection.open(path: path, mode: .create, label: "timeline events")
        // Nothing else opens this file; losing it on a crash loses nothing. `t` has no affinity so
        // a time stays the REAL it was given.
        try connection.execute("PRAGMA locking_mode = EXCLUSIVE; PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA cache_size = -2048; PRAGMA temp_store = FILE")
        try connection.execute("CREATE TABLE e (t, line TEXT NOT NULL)")
        return (connection, try connection.prepare("INSERT INTO e (t, line) VALUES (?, ?)"))
    }

    private static func ours(_ error: Error) -> Error {
        WorkingFolderFailure.from(error) ?? WorkingFolderFailure(code: EIO)
    }

    /// Keeps one event's rendered `line`, dated `referenceSeconds` (finite).
    public func add(referenceSeconds: Double, line: String) throws {
        do {
            if !writing {
                try connection.execute("BEGIN")
                writing = true
            }
            try insert.bind([.real(referenceSeconds), .text(line)])
            while try insert.step() != nil {}
        } catch {
            throw Self.ours(error)
        }
    }

    /// The lines by time, ties in the order they were added, `chunk` lines at a time.
    public func forEachSorted(chunk: Int = 512, _ body: (String) throws -> Void) throws {
        do {
            try sorted(chunk: chunk, body)
        } catch let error as SQLiteError {
            throw Self.ours(error)
        }
    }

    private func sorted(chunk: Int, _ body: (String) throws -> Void) throws {
        if writing {
            try connection.execute("COMMIT")
            writing = false
        }
        // SQLite's sorter spills to temporary files past its memory budget: they go to the private
        // working folder, never to memory or elsewhere on the machine.
        let previous = try connection.scalar("PRAGMA temp_store_directory").string ?? ""
        try connection.execute("PRAGMA temp_store_directory = \(Self.literal(folder.url.path))")
        defer { try? connection.execute("PRAGMA temp_store_directory = \(Self.literal(previous))") }
        let select = try connection.prepare("SELECT line FROM e ORDER BY t, rowid")
        var text = ""
        var count = 0
        try select.forEach { row in
            text += row[0].string ?? ""
            count += 1
            if count == chunk {
                try body(text)
                text = ""
                count = 0
            }
        }
        if !text.isEmpty { try body(text) }
    }

    /// `text` as an SQL string literal (a folder's path may hold a quote).
    static func literal(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "'", with: "''") + "'"
    }
}
