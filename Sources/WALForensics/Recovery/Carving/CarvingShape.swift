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
        /// A Binary, Transformable or UUID attribute's BLOB column: Core Data writes only a blob or
        /// NULL there (an external reference is a blob too).
        case blob

        /// Whether a stored value fits a column of this kind (the table's and its indexes' rule).
        func admits(_ value: RecordValue) -> Bool {
            switch (self, value) {
            case (_, .null), (.any, _), (.blob, .blob): return true
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
        var kind: Kind
        /// A to-one foreign key or entity key: NULL or a positive integer.
        var isKey = false
        /// For a to-one's foreign key: the largest key its destination can have (`IndexShape.bound`).
        var keyBound: Int64?
    }

    let table: String
    let columns: [Column]
    /// The `Z_ENT` values of the entities stored in this table (the table's entity tree).
    let entities: Set<Int>
    let pkIndex: Int
    let entIndex: Int
    let optIndex: Int?
    /// The largest key a record of this table can have: its root's `Z_MAX`, or the table's
    /// largest `Z_PK` where that fell behind (`IndexShape.bound`); nil when none is known.
    var rowidBound: Int64?
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

    /// The rules that turn away a reading the record format allows, as nothing Core Data could
    /// have written of its entity (docs/recover.md); counted on their own in `turnedAway`.
    static let entityRules: Set<String> = ["pk-over-z-max", "key-over-z-max", "blob-type", "all-null", "entity-never-had-rows"]

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
        // Core Data gives keys in order and never reuses one: a key past the entity's Z_MAX was
        // never a record's (an entity whose Z_MAX is 0 never had one). Held against free bytes'
        // readings only: a cell of an uncommitted frame may carry a key its own, uncommitted,
        // Z_MAX gave, past the last state's.
        if rebuilt, let rowid, let rowidBound, rowid > rowidBound { return "pk-over-z-max" }
        // A table whose entities never had a row (Z_MAX 0, no rows) holds no record's bytes.
        if rebuilt, rowidBound == 0 { return "entity-never-had-rows" }
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
                case .integer(let v) where v > 0:
                    if rebuilt, let bound = column.keyBound, v > bound { return "key-over-z-max:\(column.name)" }
                    continue
                default: return "key:\(column.name)"
                }
            }
            guard column.kind.admits(value) || (!rebuilt && column.kind == .blob && Kind.any.admits(value)) else {
                return column.kind == .blob ? "blob-type:\(column.name)" : "affinity:\(column.name)"
            }
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
        // A reading of free bytes with no property stored is nothing Core Data wrote that could be
        // told from noise (the middle of another record's header reads so).
        if rebuilt, values.enumerated().allSatisfy({ i, v in i == pkIndex || i == entIndex || i == optIndex || v == .null }) {
            return "all-null"
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
        // A to-one's foreign key → its destination's largest key; a Binary, Transformable or UUID
        // attribute's column → blobs only.
        var keyBounds: [String: [String: Int64]] = [:]
        var blobs: [String: Set<String>] = [:]
        let mappings = state.map?.entities ?? []
        for mapping in mappings where mapping.tableExists {
            if let number = mapping.number { entities[mapping.table, default: []].insert(number) }
            for r in mapping.relationships {
                for column in [r.column, r.entityKeyColumn].compactMap({ $0 }) { keys[mapping.table, default: []].insert(column.uppercased()) }
                if r.kind == .toOne, let column = r.column,
                   let destination = mappings.first(where: { $0.entity.name == r.relationship.destination }), destination.tableExists,
                   let number = destination.number, let bound = try IndexShape.bound(of: number, table: destination.table, state: state) {
                    keyBounds[mapping.table, default: [:]][column.uppercased()] = bound
                }
            }
            func blobColumns(_ a: AttributeMapping) -> [String] {
                guard a.elements.isEmpty else { return a.elements.flatMap(blobColumns) }
                switch a.attribute.type {
                case .binary, .transformable, .uuid: return a.column.map { [$0.uppercased()] } ?? []
                default: return []
                }
            }
            for a in mapping.attributes where a.declaredType?.uppercased() == "BLOB" { blobs[mapping.table, default: []].formUnion(blobColumns(a)) }
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
            let columns = info.map { row -> Column in
                let name = (row[0].string ?? "").uppercased()
                var column = Column(name: row[0].string ?? "", kind: kind(ofDeclared: row[1].string ?? ""),
                                    isKey: keys[table]?.contains(name) ?? false, keyBound: keyBounds[table]?[name])
                if column.kind == .any, blobs[table]?.contains(name) == true { column.kind = .blob }
                return column
            }
            let names = columns.map { $0.name.uppercased() }
            guard let pk = names.firstIndex(of: "Z_PK"), let ent = names.firstIndex(of: "Z_ENT"),
                  info[pk][1].string?.uppercased() == "INTEGER", info[pk][2].int == 1,
                  info.filter({ ($0[2].int ?? 0) > 0 }).count == 1,
                  let numbers = entities[table], !numbers.isEmpty else { continue }
            var shape = CarvingShape(table: table, columns: columns, entities: numbers, pkIndex: pk, entIndex: ent,
                                     optIndex: names.firstIndex(of: "Z_OPT"))
            // The table's bound: the largest over its entities' roots (one root per table).
            shape.rowidBound = try numbers.compactMap { try IndexShape.bound(of: $0, table: table, state: state) }.max()
            out.append(shape)
        }
        return out
    }
}
