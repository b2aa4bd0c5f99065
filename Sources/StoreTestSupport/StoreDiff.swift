import Foundation
import SQLiteAccess

/// Copies of a store family that SQLite itself reads: the truth a test holds storelens against,
/// never the originals (opening those could checkpoint or rewrite their `-shm`).
public enum SQLiteCopies {
    /// A one-file copy of the family at `url` (main file and `-wal`, when there is one) in
    /// `folder`, with the `-wal` applied by SQLite's own checkpoint: what a reader of the family
    /// sees, with no `-wal` left to read.
    public static func walApplied(_ url: URL, in folder: URL, name: String = "applied.store") throws -> URL {
        let copy = folder.appendingPathComponent(name)
        try FileManager.default.copyItem(at: url, to: copy)
        if FileManager.default.fileExists(atPath: url.path + "-wal") {
            try FileManager.default.copyItem(atPath: url.path + "-wal", toPath: copy.path + "-wal")
        }
        try checkpointed(copy)
        return copy
    }

    /// A copy of the main file alone, without its `-wal`: what the file holds by itself.
    public static func mainFileOnly(_ url: URL, in folder: URL, name: String = "main-only.store") throws -> URL {
        let copy = folder.appendingPathComponent(name)
        try FileManager.default.copyItem(at: url, to: copy)
        try checkpointed(copy)
        return copy
    }

    /// Frames in a `-wal`, from its own bytes: (size − 32-byte header) / (24-byte frame header +
    /// the page size stored at offset 8, big-endian).
    public static func walFrames(_ wal: URL) throws -> Int {
        let bytes = try Data(contentsOf: wal)
        guard bytes.count >= 32 else { return 0 }
        let pageSize = bytes[8..<12].reduce(0) { $0 << 8 | Int($1) }
        return pageSize > 0 ? (bytes.count - 32) / (pageSize + 24) : 0
    }

    /// Checkpoints the copy and closes it, so its `-wal` (if any) is merged and removed.
    static func checkpointed(_ copy: URL) throws {
        do {
            let db = try Connection.open(path: copy.path, mode: .readWrite)
            if try db.journalMode() == "wal" { try db.execute("PRAGMA wal_checkpoint(TRUNCATE)") }
        }
        for suffix in ["-wal", "-shm"] { try? FileManager.default.removeItem(atPath: copy.path + suffix) }
    }
}

/// One difference between two databases, found by SQLite: a row only in one of them (by its
/// primary key, the rowid when it has none), or one value of a row in both.
public struct RowChange: Hashable, Sendable, CustomStringConvertible {
    public enum Kind: Hashable, Sendable {
        case deleted, inserted
        case changed(column: String, to: DatabaseValue)
    }
    public let table: String
    /// The key's values, comma-separated (`1`, `999,1`).
    public let key: String
    public let kind: Kind

    public init(table: String, key: String, kind: Kind) {
        self.table = table
        self.key = key
        self.kind = kind
    }

    public static func changed(_ table: String, _ key: String, _ column: String, to value: DatabaseValue) -> RowChange {
        RowChange(table: table, key: key, kind: .changed(column: column, to: value))
    }
    public static func deleted(_ table: String, _ key: String) -> RowChange { RowChange(table: table, key: key, kind: .deleted) }
    public static func inserted(_ table: String, _ key: String) -> RowChange { RowChange(table: table, key: key, kind: .inserted) }

    public var column: String? {
        if case .changed(let column, _) = kind { return column }
        return nil
    }

    public var description: String {
        switch kind {
        case .deleted: return "\(table)[\(key)] deleted"
        case .inserted: return "\(table)[\(key)] inserted"
        case .changed(let column, let value): return "\(table)[\(key)].\(column) = \(StoreDiff.render(value))"
        }
    }
}

/// Every difference between two store families, computed by SQLite on WAL-applied copies of
/// both: the schema (`sqlite_master`), and every table row by row, value by value (a value
/// differs when `IS NOT` or its storage class says so, so 1 and 1.0 differ).
public struct StoreDiff {
    public let changes: Set<RowChange>
    /// `sqlite_master` entries present in only one of the two.
    public let schemaChanges: [String]

    /// Tables with a changed, deleted or inserted row.
    public var tables: Set<String> { Set(changes.map(\.table)) }
    /// The changes, sorted, for failure messages.
    public var listed: String { changes.map(\.description).sorted().joined(separator: "; ") }

    public init(before: URL, after: URL) throws {
        let work = try TemporaryFolder("store-diff")
        let b = try SQLiteCopies.walApplied(before, in: work.url, name: "before.store")
        let a = try SQLiteCopies.walApplied(after, in: work.url, name: "after.store")
        let db = try Connection.open(path: a.path, mode: .readOnly)
        try db.attachFile(b.path, as: "before")
        defer { try? db.execute("DETACH DATABASE before") }
        func q(_ s: String) -> String { Identifier.quoted(s) }

        func schema(_ s: String) throws -> Set<String> {
            Set(try db.rows("SELECT type, name, tbl_name, sql FROM \(s).sqlite_master").map { $0.values.map(Self.render).joined(separator: " | ") })
        }
        let (schemaBefore, schemaAfter) = (try schema("before"), try schema("main"))
        schemaChanges = schemaBefore.symmetricDifference(schemaAfter).map { (schemaBefore.contains($0) ? "only before: " : "only after: ") + $0 }.sorted()

        func tables(_ s: String) throws -> Set<String> {
            Set(try db.rows("SELECT name FROM \(s).sqlite_master WHERE type = 'table'").compactMap { $0[0].string })
        }
        var changes = Set<RowChange>()
        for table in try tables("before").intersection(tables("main")).sorted() {
            let info = try db.rows("PRAGMA before.table_info(\(q(table)))")
            let columns = info.compactMap { $0[1].string }
            let key = info.filter { ($0[5].int ?? 0) > 0 }.sorted { ($0[5].int ?? 0) < ($1[5].int ?? 0) }.compactMap { $0[1].string }
            let keyColumns = key.isEmpty ? ["rowid"] : key.map(q)
            let keyList = keyColumns.joined(separator: ", ")
            func keyString(_ row: Row) -> String { row.values.prefix(keyColumns.count).map(Self.render).joined(separator: ",") }
            for row in try db.rows("SELECT \(keyList) FROM before.\(q(table)) EXCEPT SELECT \(keyList) FROM main.\(q(table))") {
                changes.insert(.deleted(table, keyString(row)))
            }
            for row in try db.rows("SELECT \(keyList) FROM main.\(q(table)) EXCEPT SELECT \(keyList) FROM before.\(q(table))") {
                changes.insert(.inserted(table, keyString(row)))
            }
            let on = keyColumns.map { "o.\($0) IS n.\($0)" }.joined(separator: " AND ")
            let keyOfOld = keyColumns.map { "o.\($0)" }.joined(separator: ", ")
            for column in columns {
                let c = q(column)
                for row in try db.rows("""
                    SELECT \(keyOfOld), n.\(c) FROM before.\(q(table)) o JOIN main.\(q(table)) n ON \(on)
                    WHERE o.\(c) IS NOT n.\(c) OR typeof(o.\(c)) != typeof(n.\(c))
                    """) {
                    changes.insert(.changed(table, keyString(row), column, to: row.values[keyColumns.count]))
                }
            }
        }
        self.changes = changes
    }

    static func render(_ value: DatabaseValue) -> String {
        switch value {
        case .null: return "NULL"
        case .integer(let i): return String(i)
        case .real(let d): return "\(d)"
        case .text(let s): return "'\(s)'"
        case .blob(let b): return "x'\(b.map { String(format: "%02x", $0) }.joined())'"
        }
    }
}
