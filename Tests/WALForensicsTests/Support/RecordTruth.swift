import CoreDataStore
import Foundation
import SQLiteAccess
import StoreTestSupport
import WALForensics

/// Records as SQLite itself shows them on a copy of the store cut after a commit: the truth the
/// WAL's record diffs and recovered versions are compared with.
enum RecordTruth {
    /// Every entity table's rows as SQLite shows them after one commit: table → Z_PK → column → value.
    typealias Image = [String: [Int64: [String: DatabaseValue]]]

    /// The rows of every table with a `Z_PK`, read by SQLite from a copy whose WAL ends at `frames`.
    static func sqliteImage(_ copy: SQLiteWALBuilder.Copy, frames: Int, pageSize: Int) throws -> Image {
        let folder = try TemporaryFolder("record-truth")
        let scratch = try SQLiteWALBuilder.truncated(copy, frames: frames, pageSize: pageSize, in: folder)
        let db = try Connection.open(path: scratch.db.path, mode: .readWrite)
        try db.disableCheckpointOnClose()
        var image: Image = [:]
        for table in try db.rows("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite%'").compactMap({ $0[0].string }) {
            let columns = try db.rows("SELECT name FROM pragma_table_info(?)", [.text(table)]).compactMap { $0[0].string }
            guard columns.contains("Z_PK") else { continue }
            var rows: [Int64: [String: DatabaseValue]] = [:]
            for row in try db.rows("SELECT \(columns.map(Identifier.quoted).joined(separator: ", ")) FROM \(Identifier.quoted(table))") {
                var values: [String: DatabaseValue] = [:]
                for (i, c) in columns.enumerated() { values[c] = row[i] }
                if let pk = values["Z_PK"]?.int64 { rows[pk] = values }
            }
            image[table] = rows
        }
        return image
    }

    /// Whether a decoded value is the stored one: the truth is SQLite's raw value.
    static func matches(_ value: FieldValue, _ stored: DatabaseValue?) -> Bool {
        guard let stored else { return false }
        switch value {
        case .null: return stored.isNull
        case .integer(let i): return stored.int64 == i
        case .real(let d): return stored.double == d
        case .bool(let b): return stored.int64 == (b ? 1 : 0)
        case .text(let s): return stored == .text(s)
        case .longText: return stored.string != nil
        case .date(_, let seconds): return stored.double == seconds
        case .uuid(let s):
            guard let uuid = UUID(uuidString: s) else { return false }
            return stored == .blob(withUnsafeBytes(of: uuid.uuid) { Data($0) }) || stored == .text(s)
        case .decimal: return !stored.isNull
        case .binary(let b): return stored.data.map { b.size == nil || $0.count >= (b.size ?? 0) } ?? false
        case .archived: return stored.data != nil
        case .composite: return true
        case .object(_, let pk): return stored.int64 == pk
        }
    }

    /// table → shown name → the columns it is read from, for every entity's fields (the rows reader's mapping).
    static func fieldColumns(_ connection: Connection) throws -> [String: [String: [String]]] {
        guard let store = try CoreDataStore.read(connection) else { return [:] }
        let map = try SchemaMap.build(model: try ModelLoader.load(connection: connection, store: store), store: store, connection: connection)
        var out: [String: [String: [String]]] = [:]
        for mapping in map.entities {
            for field in RowReader(map: map, entity: mapping, decoder: ValueDecoder()).fields {
                let columns = RowReader.columns(of: field).compactMap { $0 }
                out[mapping.table, default: [:]][field.name, default: []] += columns.filter { !(out[mapping.table]?[field.name] ?? []).contains($0) }
            }
        }
        return out
    }
}
