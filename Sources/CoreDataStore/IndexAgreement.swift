import Foundation
import SQLiteAccess

/// Whether every index of a table holds exactly the table's rows: what `PRAGMA
/// integrity_check(T)` adds to `quick_check`, read in sequential passes.
///
/// SQLite's own check seeks every row's entry in every index (a million rows, three indexes: three
/// million b-tree descents). Here the table is read once in rowid order and each index once in its
/// own order (a covering scan: the values come from the index's pages, never from the table), and
/// each side's entries are summed as a multiset: a count and the wrapping sum of a keyed hash of
/// (key values, rowid) per entry. Equal counts and sums for every index, and no two entries of a
/// unique index with one non-NULL key, mean the indexes agree with the table. Anything else (a
/// difference, an error, a table or index of a kind not read here) answers `false`, and the
/// caller asks SQLite's own check, whose words the finding then quotes. So this only ever saves
/// time on a sound table; it never writes a problem of its own.
///
/// The entry hash is keyed with a seed drawn at random per run (`EntryHash`), so a store's bytes
/// cannot be written in advance to make a missing entry and an extra one cancel out; two
/// different multisets agree with a probability of the order of 2⁻⁶⁴.
public enum IndexAgreement {
    /// One index of the table, as far as this check reads it.
    struct IndexShape {
        let name: String
        /// The table's columns the index holds, in index order (the rowid follows them).
        let columns: [String]
        let unique: Bool
    }

    /// True when every index of `table` holds one entry per row, with the row's values, and every
    /// unique index no duplicate key; false when that does not hold or was not shown (see above).
    ///
    /// - Parameter read: the table's side already read, by a scan of the table made for other
    ///   questions too (`check`'s row screen); nil reads it here.
    public static func holds(_ connection: Connection, table: String, read: TableSide? = nil) -> Bool {
        do {
            let side: TableSide
            if let read {
                side = read
            } else {
                guard var fresh = try TableSide(connection, table: table) else { return false }
                if fresh.indexes.isEmpty { return true }
                let sql = "SELECT \(fresh.aggregates(alias: nil).joined(separator: ", ")) FROM \(Identifier.quoted(table)) NOT INDEXED"
                guard try plan(connection, sql).allSatisfy({ !$0.contains(" USING ") }),
                      let row = try connection.rows(sql).first, fresh.take(row.values) else { return false }
                side = fresh
            }
            guard side.table == table, let sums = side.sums else { return false }
            for (i, index) in side.indexes.enumerated() {
                guard let indexSum = try indexSide(connection, table: table, index: index), indexSum == sums[i] else { return false }
            }
        } catch {
            return false
        }
        return true
    }

    /// The multiset of one index's entries read from its own pages, or nil when SQLite's plan would
    /// not read them there, or a unique index holds two entries with one non-NULL key.
    static func indexSide(_ connection: Connection, table: String, index: IndexShape) throws -> Multiset? {
        try defineEntries(on: connection)
        let sql = "SELECT \(entries(of: index, alias: nil, unique: index.unique)) FROM \(Identifier.quoted(table)) INDEXED BY \(Identifier.quoted(index.name))"
        // The values must come from the index's own pages: a plan that reads the table for them
        // would compare the table with itself.
        guard try plan(connection, sql).contains(where: { $0.contains("COVERING INDEX") }),
              let value = try connection.rows(sql).first?.values.first, let result = EntriesResult(value), !result.duplicate else { return nil }
        return result.entries
    }

    /// The SQL function that sums a scan's entries (`EntriesState`): `storelens_index_entries(unique,
    /// key values…, rowid)`, whose value `EntriesResult` reads. An aggregate, so a pass over a
    /// million rows stays inside SQLite's loop instead of handing each row out.
    static let entriesFunction = "storelens_index_entries"

    static func defineEntries(on connection: Connection) throws {
        try connection.defineAggregate(entriesFunction, initial: { EntriesState() }, step: { $0.add($1) }, result: { $0.result })
    }

    /// The call of `entriesFunction` that sums `index`'s entries as the scanned rows (named
    /// `alias`) give them; `unique` also looks for two entries in a row with one non-NULL key.
    static func entries(of index: IndexShape, alias: String?, unique: Bool) -> String {
        let prefix = alias.map { "\($0)." } ?? ""
        let arguments = [unique ? "1" : "0"] + index.columns.map { prefix + Identifier.quoted($0) } + [prefix + "rowid"]
        return "\(entriesFunction)(\(arguments.joined(separator: ", ")))"
    }

    /// One scan's running sum of entries, and for a unique index's scan (in key order) whether
    /// an entry's key equals the one before.
    struct EntriesState {
        var entries = Multiset()
        var duplicate = false
        var malformed = false
        var first = true
        var key: [ValuePart] = []
        var previous: [ValuePart] = []

        mutating func add(_ arguments: FunctionArguments) {
            let width = Int(arguments.count) - 2
            guard width >= 1, arguments.storageClass(0) == .integer else {
                malformed = true
                return
            }
            let unique = arguments.int64(0) != 0
            if key.count != width {
                key = Array(repeating: ValuePart(tag: 0, bits: 0), count: width)
                previous = key
            }
            var entry = EntryHash()
            var hasNull = false
            key.withUnsafeMutableBufferPointer { key in
                for column in 0..<width {
                    let part = ValuePart(arguments, Int32(column + 1))
                    key[column] = part
                    hasNull = hasNull || part.tag == ValuePart.null
                    entry.add(part)
                }
            }
            entry.add(tag: 6, UInt64(bitPattern: arguments.int64(Int32(width + 1))))
            entries.add(entry.value)
            if unique {
                // The scan is in key order: a duplicate key is the entry just before. Equal keys
                // have equal parts (1 and 1.0 alike, text by its bytes' hash); parts equal by a
                // hash collision alone only send the table to SQLite's own check.
                if !hasNull, !first, key == previous { duplicate = true }
                swap(&key, &previous)
                first = false
            }
        }

        var result: DatabaseValue {
            malformed ? .null : .text("\(entries.count) \(entries.sum) \(duplicate ? 1 : 0)")
        }
    }

    /// The value of one `entriesFunction` call, read back.
    struct EntriesResult {
        let entries: Multiset
        let duplicate: Bool

        init?(_ value: DatabaseValue) {
            guard let text = value.string else { return nil }
            let fields = text.split(separator: " ")
            guard fields.count == 3, let count = Int(fields[0]), let sum = UInt64(fields[1]), let duplicate = Int(fields[2]) else { return nil }
            entries = Multiset(count: count, sum: sum)
            self.duplicate = duplicate != 0
        }
    }

    /// Count and wrapping sum of the entries' hashes: equal for equal multisets, whatever the order.
    struct Multiset: Equatable {
        var count = 0
        var sum: UInt64 = 0
        mutating func add(_ hash: UInt64) {
            count += 1
            sum &+= hash
        }
    }

    /// The hash of one entry, (key values…, rowid), built a value at a time. Integers and reals,
    /// the bulk of Core Data's keys, go through a multiply-xorshift mix keyed with a random seed
    /// (SipHash per value cost as much as SQLite's own stepping); text and blobs through
    /// `Hasher`, whose seed is random per process too.
    struct EntryHash {
        static let seed = UInt64.random(in: .min ... .max) | 1
        /// The seed, held by each entry: read from the global once per entry, not once per value
        /// (a global's lazy initialisation is checked on every access).
        let seed: UInt64
        var state: UInt64

        init(seed: UInt64 = EntryHash.seed) {
            self.seed = seed
            state = seed
        }

        static func mix(_ x: UInt64) -> UInt64 {
            var z = x
            z = (z ^ (z >> 33)) &* 0xff51_afd7_ed55_8ccd
            z = (z ^ (z >> 33)) &* 0xc4ce_b9fe_1a85_ec53
            return z ^ (z >> 33)
        }

        mutating func add(tag: UInt64, _ bits: UInt64) {
            state = Self.mix(state &+ (tag &* 0x9e37_79b9_7f4a_7c15) ^ bits) &+ bits
        }

        mutating func add(_ part: ValuePart) { add(tag: part.tag, part.bits) }

        var value: UInt64 { Self.mix(state ^ seed) }
    }

    /// One value of an entry as the hash takes it, a tag for its kind and 64 bits: values SQLite
    /// compares as equal have equal parts (1 and 1.0 are one key, as an index may hold either
    /// form of a REAL column's integral value; text and blobs by a keyed hash of their bytes).
    struct ValuePart: Equatable {
        static let null: UInt64 = 1
        let tag: UInt64
        let bits: UInt64

        init(tag: UInt64, bits: UInt64) {
            self.tag = tag
            self.bits = bits
        }

        init(_ row: some ValueReading, _ column: Int32) {
            switch row.storageClass(column) {
            case .null:
                self.init(tag: Self.null, bits: 0)
            case .integer:
                self.init(tag: 2, bits: UInt64(bitPattern: row.int64(column)))
            case .real:
                let d = row.double(column)
                if d == d.rounded(), abs(d) < 9.2e18 {
                    self.init(tag: 2, bits: UInt64(bitPattern: Int64(d)))
                } else {
                    self.init(tag: 3, bits: d.bitPattern)
                }
            case .text:
                var hasher = Hasher()
                hasher.combine(bytes: UnsafeRawBufferPointer(row.textBytes(column)))
                self.init(tag: 4, bits: UInt64(bitPattern: Int64(hasher.finalize())))
            case .blob:
                var hasher = Hasher()
                hasher.combine(bytes: row.blobBytes(column))
                self.init(tag: 5, bits: UInt64(bitPattern: Int64(hasher.finalize())))
            }
        }
    }

    /// The table's indexes, or nil when the table or one of its indexes is of a kind this check
    /// does not read: WITHOUT ROWID, virtual, a partial index, an index on an expression, a key
    /// column with a collation other than BINARY (its duplicates are not byte-equal).
    static func indexShapes(_ connection: Connection, table: String) -> [IndexShape]? {
        // SQLite's plan is read as text to prove which b-tree a statement reads, and a name with a
        // space or parenthesis could write plan words of its own ("x USING COVERING INDEX y"):
        // such a table is left to SQLite's check (Core Data never makes one).
        func plain(_ name: String) -> Bool { !name.contains { $0.isWhitespace || $0 == "(" || $0 == ")" } }
        guard plain(table) else { return nil }
        guard let kind = try? connection.scalar("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", [.text(table)]).string else { return nil }
        let declaration = kind.uppercased()
        if declaration.hasPrefix("CREATE VIRTUAL") { return nil }
        guard (try? connection.prepare("SELECT rowid FROM \(Identifier.quoted(table)) LIMIT 0")) != nil else { return nil }
        guard let list = try? connection.rows("SELECT name, \"unique\", partial FROM pragma_index_list(?)", [.text(table)]) else { return nil }
        var shapes: [IndexShape] = []
        for entry in list {
            guard let name = entry[0].string, plain(name), entry[2].int64 == 0 else { return nil }
            guard let info = try? connection.rows("SELECT cid, name, coll FROM pragma_index_xinfo(?) WHERE key = 1 ORDER BY seqno", [.text(name)]),
                  !info.isEmpty else { return nil }
            var columns: [String] = []
            for column in info {
                guard let cid = column[0].int64, cid >= 0, let columnName = column[1].string, plain(columnName),
                      (column[2].string ?? "BINARY").uppercased() == "BINARY" else { return nil }
                columns.append(columnName)
            }
            shapes.append(IndexShape(name: name, columns: columns, unique: entry[1].int64 == 1))
        }
        return shapes
    }

    /// SQLite's plan for `sql`, one line per step.
    static func plan(_ connection: Connection, _ sql: String) throws -> [String] {
        try connection.rows("EXPLAIN QUERY PLAN \(sql)").compactMap { $0[3].string?.uppercased() }
    }
}
