import CoreDataStore
import Foundation
import SQLiteAccess
import StoreFormats

/// What a record of one Core Data entity table must look like to count: the false-positive rules
/// of docs/recover.md, applied to serial types and values read from free bytes.
struct CarvingShape: Sendable {
    /// A column's declared type reduced to what the carver checks.
    enum Kind: Sendable, Equatable {
        /// INTEGER affinity: NULL or an integer (a real only when the value has a fraction).
        case integer
        /// TEXT affinity (VARCHAR, TEXT, CHAR, CLOB): NULL or text.
        case text
        /// REAL affinity (FLOAT, DOUBLE, REAL): NULL or a number (SQLite writes whole reals as integers).
        case real
        /// Core Data's TIMESTAMP: NULL or a number of seconds since 2001 between 1970 and 2100.
        case timestamp
        /// NUMERIC affinity (DECIMAL, BOOLEAN, …): anything but a blob.
        case numeric
        /// BLOB or no declared type: anything.
        case any

        /// Whether a stored value fits a column of this kind (the table's and its indexes' rule).
        func admits(_ value: RecordValue) -> Bool {
            switch (self, value) {
            case (_, .null), (.any, _): return true
            case (.integer, .integer), (.text, .text), (.real, .integer), (.real, .real), (.numeric, .integer),
                 (.numeric, .real), (.numeric, .text), (.timestamp, .integer): return true
            case (.integer, .real(let d)): return d != d.rounded()
            case (.timestamp, .real(let d)): return CarvingShape.dateRange.contains(d)
            default: return false
            }
        }
    }

    struct Column: Sendable {
        let name: String
        let kind: Kind
        /// A to-one foreign key or entity key: NULL or a positive integer.
        var isKey = false
    }

    let table: String
    let columns: [Column]
    /// The `Z_ENT` values of the entities stored in this table (the table's entity tree).
    let entities: Set<Int>
    let pkIndex: Int
    let entIndex: Int
    let optIndex: Int?
    /// The database's text encoding (header offset 56).
    var encoding: UInt32 = 1

    /// `bytes` decoded strictly, or nil when they are not valid in the encoding.
    static func decodedText(_ bytes: [UInt8], encoding: UInt32) -> String? {
        switch encoding {
        case 2, 3:
            guard bytes.count % 2 == 0 else { return nil }
            var units: [UInt16] = []
            units.reserveCapacity(bytes.count / 2)
            for i in stride(from: 0, to: bytes.count, by: 2) {
                let a = UInt16(bytes[i]), b = UInt16(bytes[i + 1])
                units.append(encoding == 2 ? (b << 8 | a) : (a << 8 | b))
            }
            var out = String.UnicodeScalarView()
            var iterator = units.makeIterator()
            var decoder = UTF16()
            while true {
                switch decoder.decode(&iterator) {
                case .scalarValue(let s): out.append(s)
                case .emptyInput: return String(out)
                case .error: return nil
                }
            }
        default:
            return String(validating: bytes, as: UTF8.self)
        }
    }

    /// Seconds since 2001-01-01 for 1970-01-01 and 2100-01-01.
    static let dateRange = -978_307_200.0 ... 3_124_137_600.0

    static func kind(ofDeclared type: String) -> Kind {
        let t = type.uppercased()
        if t == "TIMESTAMP" { return .timestamp }
        if t.contains("INT") { return .integer }
        if t.contains("CHAR") || t.contains("CLOB") || t.contains("TEXT") { return .text }
        if t.isEmpty || t.contains("BLOB") { return .any }
        if t.contains("REAL") || t.contains("FLOA") || t.contains("DOUB") { return .real }
        return .numeric
    }

    /// Why a record with these serial types and values is not a record of this table, or nil when
    /// it passes every rule. `rowid` is nil when the cell's rowid was overwritten.
    /// `rebuilt`: a reading of free bytes, not a cell a page points to (a rebuilt header, or a
    /// whole cell in free space), whose text must also hold no control character.
    func rejection(types: [UInt64], values: [RecordValue], rowid: Int64?, rebuilt: Bool = false) -> String? {
        guard types.count == columns.count, values.count == columns.count else { return "column-count" }
        if let rowid, rowid <= 0 { return "rowid" }
        // Z_PK is the rowid alias: SQLite stores NULL in the record and the key in the cell.
        guard types[pkIndex] == 0 else { return "pk-not-null" }
        guard case .integer(let ent) = values[entIndex], ent <= Int64(Int.max), entities.contains(Int(ent)) else { return "entity" }
        if let optIndex {
            guard case .integer(let opt) = values[optIndex], opt >= 0 else { return "opt" }
        }
        for (i, column) in columns.enumerated() where i != pkIndex && i != entIndex && i != optIndex {
            let value = values[i]
            if column.isKey {
                switch value {
                case .null: continue
                case .integer(let v) where v > 0: continue
                default: return "key:\(column.name)"
                }
            }
            guard column.kind.admits(value) else { return "affinity:\(column.name)" }
        }
        // Text must be text: valid in the database's encoding (Core Data writes nothing else); a
        // reading of free bytes must also hold no control characters but tab, newline and return,
        // the mark of a reading whose column boundaries are off by a byte or two, or of a stale
        // copy whose last bytes a later freeblock header overwrote.
        for value in values {
            guard case .text(let bytes) = value else { continue }
            guard let text = Self.decodedText(bytes, encoding: encoding) else { return "text-encoding" }
            // A NUL inside text is where later bytes (zeros, a freeblock header) overwrote a record.
            if text.unicodeScalars.contains(where: { $0.value == 0 }) { return "text-nul" }
            if rebuilt, text.unicodeScalars.contains(where: { $0.value < 0x20 && $0 != "\t" && $0 != "\n" && $0 != "\r" || $0.value == 0x7f }) {
                return "text-control"
            }
        }
        // Timestamps written as integers must be in range too.
        for (i, column) in columns.enumerated() where column.kind == .timestamp {
            if case .integer(let v) = values[i], !Self.dateRange.contains(Double(v)) { return "affinity:\(column.name)" }
        }
        return nil
    }

    /// The shapes of every entity table of a state: each table holding `Z_PK` (the rowid alias),
    /// `Z_ENT` and `Z_OPT`, with the entity numbers the model (or `Z_PRIMARYKEY` and the rows) put there.
    static func shapes(of state: StateReader, entityTables: [(Int, String, String)]) throws -> [CarvingShape] {
        var entities: [String: Set<Int>] = [:]
        for (number, _, table) in entityTables { entities[table, default: []].insert(number) }
        var keys: [String: Set<String>] = [:]
        for mapping in state.map?.entities ?? [] where mapping.tableExists {
            if let number = mapping.number { entities[mapping.table, default: []].insert(number) }
            for r in mapping.relationships {
                for column in [r.column, r.entityKeyColumn].compactMap({ $0 }) { keys[mapping.table, default: []].insert(column.uppercased()) }
            }
        }
        // Entities whose rows are all gone: Z_PRIMARYKEY's tree names their root, and so their table.
        let c = state.connection
        if try c.tableExists("Z_PRIMARYKEY"),
           try c.scalar("SELECT count(*) FROM pragma_table_info('Z_PRIMARYKEY') WHERE name IN ('Z_ENT', 'Z_NAME', 'Z_SUPER')").int == 3 {
            var rows: [Int: (name: String, parent: Int)] = [:]
            for row in try c.rows("SELECT Z_ENT, Z_NAME, Z_SUPER FROM Z_PRIMARYKEY LIMIT 100000") {
                if let n = row[0].int, let name = row[1].string { rows[n] = (name, row[2].int ?? 0) }
            }
            let tables = Set(try c.rows("SELECT name FROM sqlite_master WHERE type = 'table'").compactMap { $0[0].string?.uppercased() })
            for number in rows.keys {
                var root = number, steps = 0
                while let parent = rows[root]?.parent, parent != 0, rows[parent] != nil, steps < 64 { root = parent; steps += 1 }
                guard let name = rows[root]?.name else { continue }
                let table = "Z" + name.uppercased()
                if tables.contains(table), let existing = entities.keys.first(where: { $0.uppercased() == table }) ?? Optional(table) {
                    entities[existing, default: []].insert(number)
                }
            }
        }
        var out: [CarvingShape] = []
        for table in entities.keys.sorted() where !RecordRecovery.historyTables.contains(table.uppercased()) {
            let info = try state.connection.rows("SELECT name, type, pk FROM pragma_table_info(?) ORDER BY cid", [.text(table)])
            let columns = info.map { row in
                Column(name: row[0].string ?? "", kind: kind(ofDeclared: row[1].string ?? ""),
                       isKey: keys[table]?.contains((row[0].string ?? "").uppercased()) ?? false)
            }
            let names = columns.map { $0.name.uppercased() }
            guard let pk = names.firstIndex(of: "Z_PK"), let ent = names.firstIndex(of: "Z_ENT"),
                  info[pk][1].string?.uppercased() == "INTEGER", info[pk][2].int == 1,
                  info.filter({ ($0[2].int ?? 0) > 0 }).count == 1,
                  let numbers = entities[table], !numbers.isEmpty else { continue }
            out.append(CarvingShape(table: table, columns: columns, entities: numbers, pkIndex: pk, entIndex: ent,
                                    optIndex: names.firstIndex(of: "Z_OPT")))
        }
        return out
    }
}
