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
    public static func holds(_ connection: Connection, table: String) -> Bool {
        guard let indexes = indexShapes(connection, table: table) else { return false }
        if indexes.isEmpty { return true }
        let quoted = Identifier.quoted(table)
        // Every column some index holds, read once from the table.
        var tableColumns: [String] = []
        for column in indexes.flatMap(\.columns) where !tableColumns.contains(column) { tableColumns.append(column) }
        let positions = indexes.map { index in index.columns.map { tableColumns.firstIndex(of: $0)! } }
        let rowidColumn = Int32(tableColumns.count)
        let tableSQL = "SELECT \(tableColumns.map(Identifier.quoted).joined(separator: ", ")), rowid FROM \(quoted) NOT INDEXED"
        var tableSums = [Multiset](repeating: Multiset(), count: indexes.count)
        do {
            guard try plan(connection, tableSQL).allSatisfy({ !$0.contains(" USING ") }) else { return false }
            let statement = try connection.prepare(tableSQL)
            try statement.forEachCursor { row in
                let rowid = row.int64(rowidColumn)
                for (i, columns) in positions.enumerated() {
                    var entry = EntryHash()
                    for column in columns { entry.add(row, Int32(column)) }
                    entry.add(tag: 6, UInt64(bitPattern: rowid))
                    tableSums[i].add(entry.value)
                }
            }
            for (i, index) in indexes.enumerated() {
                let names = index.columns.map(Identifier.quoted).joined(separator: ", ")
                let sql = "SELECT \(names), rowid FROM \(quoted) INDEXED BY \(Identifier.quoted(index.name))"
                // The values must come from the index's own pages: a plan that reads the table
                // for them would compare the table with itself.
                guard try plan(connection, sql).contains(where: { $0.contains("COVERING INDEX") }) else { return false }
                var sum = Multiset()
                var duplicate = false
                var previous: [DatabaseValue]? = nil
                let width = Int32(index.columns.count)
                try connection.prepare(sql).forEachCursor { row in
                    var entry = EntryHash()
                    for column in 0..<width { entry.add(row, column) }
                    entry.add(tag: 6, UInt64(bitPattern: row.int64(width)))
                    sum.add(entry.value)
                    if index.unique {
                        // The scan is in key order: a duplicate key is the entry just before.
                        let key = (0..<Int(width)).map { row.value($0) }
                        if !key.contains(.null), let previous, keysEqual(previous, key) { duplicate = true }
                        previous = key
                    }
                }
                if duplicate || sum != tableSums[i] { return false }
            }
        } catch {
            return false
        }
        return true
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
        var state = EntryHash.seed

        static func mix(_ x: UInt64) -> UInt64 {
            var z = x
            z = (z ^ (z >> 33)) &* 0xff51_afd7_ed55_8ccd
            z = (z ^ (z >> 33)) &* 0xc4ce_b9fe_1a85_ec53
            return z ^ (z >> 33)
        }

        mutating func add(tag: UInt64, _ bits: UInt64) {
            state = Self.mix(state &+ (tag &* 0x9e37_79b9_7f4a_7c15) ^ bits) &+ bits
        }

        /// A value as SQLite compares it: 1 and 1.0 are one key (an index may hold either form of
        /// a REAL column's integral value), text and blobs by their bytes.
        mutating func add(_ row: RowCursor, _ column: Int32) {
            switch row.storageClass(column) {
            case .null:
                add(tag: 1, 0)
            case .integer:
                add(tag: 2, UInt64(bitPattern: row.int64(column)))
            case .real:
                let d = row.double(column)
                if d == d.rounded(), abs(d) < 9.2e18 {
                    add(tag: 2, UInt64(bitPattern: Int64(d)))
                } else {
                    add(tag: 3, d.bitPattern)
                }
            case .text:
                var hasher = Hasher()
                hasher.combine(bytes: UnsafeRawBufferPointer(row.textBytes(column)))
                add(tag: 4, UInt64(bitPattern: Int64(hasher.finalize())))
            case .blob:
                var hasher = Hasher()
                hasher.combine(bytes: row.blobBytes(column))
                add(tag: 5, UInt64(bitPattern: Int64(hasher.finalize())))
            }
        }

        var value: UInt64 { Self.mix(state ^ Self.seed) }
    }

    static func keysEqual(_ a: [DatabaseValue], _ b: [DatabaseValue]) -> Bool {
        zip(a, b).allSatisfy { $0.equalsAsSQLite($1) }
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
