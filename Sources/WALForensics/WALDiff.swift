import CoreDataStore
import Foundation
import SQLiteAccess
import StoreFormats

/// What changed between two states of a store — the main file alone and
/// the WAL view, or any two commits — per Core Data entity (per table for
/// tables without `Z_ENT`): rows inserted, updated (with the columns that
/// changed) and deleted, and how many stayed the same.
///
/// The two images are compared inside SQLite (one attached to the other),
/// set against set: `EXCEPT` finds the rows that differ, and only those
/// are read into Swift.
public struct WALDiff: Sendable {
    /// The commit compared from (0: the main file alone).
    public let from: Int
    /// The commit compared to.
    public let to: Int
    /// One group per entity (Z_ENT order), then one per table without `Z_ENT`
    /// (by name). Entities and tables empty in both states are left out.
    public let groups: [Group]
    /// Tables that exist only in the later state.
    public let tablesAdded: [String]
    /// Tables that exist only in the earlier state.
    public let tablesRemoved: [String]

    /// A row's key: the values of `Group.keyColumns`.
    public typealias RowKey = [DatabaseValue]

    public struct Group: Sendable {
        /// The Core Data entity name, or nil for a table without `Z_ENT`.
        public let entity: String?
        /// The entity's `Z_ENT`, or nil.
        public let entityNumber: Int?
        public let table: String
        /// The columns rows are matched on (`Z_PK` for entity tables); empty
        /// when the table has no key and rows are compared whole (then no keys are listed).
        public let keyColumns: [String]
        public var inserted: [RowKey] = []
        public var updated: [UpdatedRow] = []
        public var deleted: [RowKey] = []
        /// Rows inserted; equals `inserted.count` unless rows are compared whole.
        public var insertedCount = 0
        /// Rows deleted; equals `deleted.count` unless rows are compared whole.
        public var deletedCount = 0
        /// Rows present and identical in both states.
        public var unchanged = 0

        public var isUnchanged: Bool { insertedCount == 0 && deletedCount == 0 && updated.isEmpty }
    }

    public struct UpdatedRow: Sendable {
        public let key: RowKey
        /// Columns whose value differs (`Z_OPT`, Core Data's version counter, included).
        public let changedColumns: [String]
        /// The changed attributes and to-one relationships by name, when a column-to-attribute map
        /// was given (Core Data's `Z_OPT` version counter left out); nil otherwise.
        public let changedAttributes: [String]?
    }

    /// Compares the store after commit `from` with the store after commit `to`.
    ///
    /// - Parameters:
    ///   - from: 0 (the main file alone, the default) up to the number of commits.
    ///   - to: the later state; nil is the last valid commit (the WAL view).
    ///   - attributeNames: table → column → attribute name, from the Core Data
    ///     model when one is known; unmapped columns are reported as they are.
    ///   - onlyTables: compare only these tables (and tables added or removed), for a caller that
    ///     knows which b-trees the pages in between belong to; the others are left out of `groups`.
    public static func compute(_ evidence: WALEvidence, from: Int? = nil, to: Int? = nil,
                               attributeNames: [String: [String: String]] = [:],
                               onlyTables: Set<String>? = nil) throws(WALForensicsError) -> WALDiff {
        let available = evidence.commitCount
        let fromCommit = from ?? 0
        let toCommit = to ?? available
        for (option, value) in [("--from", fromCommit), ("--to", toCommit)] where value < 0 || value > available {
            throw .commitOutOfRange(path: evidence.displayPath, option: option, requested: value, available: available)
        }
        do {
            let connection: Connection
            if let folder = evidence.imageFolder {
                // Both states as files in the working folder (see PointInTime.open).
                connection = try PointInTime.open(evidence, commit: fromCommit, option: "--from")
                try connection.execute("PRAGMA query_only = 0")
                if !attachWorkingCopy(evidence, commit: toCommit, to: connection) {
                    let later = try PointInTime.imageFile(evidence, commit: toCommit, folder: folder)
                    try connection.attachFile(later, as: Schema.later)
                }
            } else {
                let earlier = try PointInTime.image(evidence, commit: fromCommit, option: "--from")
                let later = try PointInTime.image(evidence, commit: toCommit, option: "--to")
                connection = try PointInTime.open(image: earlier, name: evidence.displayPath, commit: fromCommit)
                try connection.execute("PRAGMA query_only = 0")
                try connection.attachImage(later, as: Schema.later)
            }
            try connection.makeQueryOnly()
            _ = try connection.scalar("SELECT count(*) FROM \(Schema.later).sqlite_master")
            var differ = Differ(connection: connection, attributeNames: attributeNames)
            differ.onlyTables = onlyTables
            return try differ.run(from: fromCommit, to: toCommit)
        } catch {
            throw WALForensicsError.reading(error, path: evidence.displayPath)
        }
    }

    /// Attaches the working copy itself as the later state when it shows `commit` as an image
    /// would (the last commit: `PointInTime.workingCopyShowing`), read-only and never checkpointed,
    /// instead of writing that image (the main file's size, again, for every `recover` and
    /// `wal --diff`). False, with nothing attached, when it cannot be read so: the image then is.
    static func attachWorkingCopy(_ evidence: WALEvidence, commit: Int, to connection: Connection) -> Bool {
        guard let copy = PointInTime.workingCopyShowing(evidence, commit: commit) else { return false }
        do {
            // The connection is read-only (so is what it attaches); and it must never checkpoint.
            try connection.disableCheckpointOnClose()
            try copy.attachWALView(to: connection, as: Schema.later)
        } catch {
            return false
        }
        do {
            _ = try connection.scalar("SELECT count(*) FROM \(Schema.later).sqlite_master")
            return true
        } catch {
            try? connection.execute("DETACH DATABASE \(Schema.later)")
            return false
        }
    }

    enum Schema {
        static let earlier = "main"
        static let later = "later"
    }
}

/// The SQL behind `WALDiff`.
private struct Differ {
    let connection: Connection
    let attributeNames: [String: [String: String]]
    var entityNames: [Int: String] = [:]
    var onlyTables: Set<String>?

    init(connection: Connection, attributeNames: [String: [String: String]]) {
        self.connection = connection
        self.attributeNames = attributeNames
    }

    struct Column { let name: String; let primaryKeyIndex: Int }

    /// Core Data's own columns, which are not attributes: the key, the entity number, the version counter.
    static let bookkeeping: Set<String> = ["Z_PK", "Z_ENT", "Z_OPT"]

    mutating func run(from: Int, to: Int) throws -> WALDiff {
        let earlierTables = try tables(in: WALDiff.Schema.earlier)
        let laterTables = try tables(in: WALDiff.Schema.later)
        entityNames = try entities(in: WALDiff.Schema.earlier)
        entityNames.merge(try entities(in: WALDiff.Schema.later)) { _, later in later }

        var entityGroups: [Int: WALDiff.Group] = [:]
        var tableGroups: [WALDiff.Group] = []
        let all = Set(earlierTables).union(laterTables).sorted().filter { table in
            onlyTables.map { $0.contains(table) || !earlierTables.contains(table) || !laterTables.contains(table) } ?? true
        }
        for table in all {
            let earlierColumns = earlierTables.contains(table) ? try columns(of: table, in: WALDiff.Schema.earlier) : nil
            let laterColumns = laterTables.contains(table) ? try columns(of: table, in: WALDiff.Schema.later) : nil
            for group in try compare(table: table, earlier: earlierColumns, later: laterColumns) {
                if let number = group.entityNumber {
                    entityGroups[number] = merge(entityGroups[number], group)
                } else {
                    tableGroups.append(group)
                }
            }
        }
        let groups = entityGroups.keys.sorted().compactMap { entityGroups[$0] } + tableGroups
        return WALDiff(from: from, to: to,
                       groups: groups.filter { !$0.isUnchanged || $0.unchanged > 0 },
                       tablesAdded: laterTables.filter { !earlierTables.contains($0) },
                       tablesRemoved: earlierTables.filter { !laterTables.contains($0) })
    }

    /// Two groups of one entity (an entity's rows can sit in two tables only in a damaged store).
    func merge(_ a: WALDiff.Group?, _ b: WALDiff.Group) -> WALDiff.Group {
        guard var a else { return b }
        a.inserted += b.inserted
        a.updated += b.updated
        a.deleted += b.deleted
        a.insertedCount += b.insertedCount
        a.deletedCount += b.deletedCount
        a.unchanged += b.unchanged
        return a
    }

    // MARK: - Schema

    func tables(in schema: String) throws -> [String] {
        try connection.rows("""
            SELECT name FROM \(schema).sqlite_master
            WHERE type = 'table' AND rootpage > 0 AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'
            ORDER BY name
            """).compactMap { $0[0].string }
    }

    func columns(of table: String, in schema: String) throws -> [Column] {
        try connection.rows("SELECT name, pk FROM pragma_table_info(?, ?) ORDER BY cid", [.text(table), .text(schema)]).map {
            Column(name: $0[0].string ?? "", primaryKeyIndex: $0[1].int ?? 0)
        }
    }

    func entities(in schema: String) throws -> [Int: String] {
        guard try connection.scalar("SELECT count(*) FROM \(schema).sqlite_master WHERE type = 'table' AND name = 'Z_PRIMARYKEY'").int ?? 0 > 0,
              try connection.scalar("SELECT count(*) FROM pragma_table_info('Z_PRIMARYKEY', ?) WHERE name IN ('Z_ENT', 'Z_NAME')",
                                    [.text(schema)]).int == 2
        else { return [:] }
        var names: [Int: String] = [:]
        for row in try connection.rows("SELECT Z_ENT, Z_NAME FROM \(schema).Z_PRIMARYKEY") {
            if let number = row[0].int, let name = row[1].string { names[number] = name }
        }
        return names
    }

    // MARK: - Comparing one table

    func compare(table: String, earlier: [Column]?, later: [Column]?) throws -> [WALDiff.Group] {
        let quotedTable = Identifier.quoted(table)
        let a = "\(WALDiff.Schema.earlier).\(quotedTable)"
        let b = "\(WALDiff.Schema.later).\(quotedTable)"

        // Present on one side only: every row is inserted, or deleted.
        guard let earlier, let later else {
            return try oneSided(table: table, columns: (earlier ?? later)!, source: earlier == nil ? b : a, inserted: earlier == nil)
        }

        let laterNames = Set(later.map(\.name))
        let common = earlier.map(\.name).filter { laterNames.contains($0) }
        guard !common.isEmpty else { return [] }
        let key = keyColumns(earlier, later)
        // An entity table has Z_PK and Z_ENT (Z_PRIMARYKEY has Z_ENT as its key, and is not one).
        let hasEnt = key == ["Z_PK"] && common.contains("Z_ENT")
        var groups: [Int?: WALDiff.Group] = [:]
        func withGroup(_ ent: Int?, _ body: (inout WALDiff.Group) -> Void) {
            // In place: a copy taken out of the dictionary copied its key arrays on every row.
            if groups[ent] == nil { groups[ent] = newGroup(table: table, entity: ent, key: key) }
            body(&groups[ent]!)
        }
        let list = common.map(Identifier.quoted).joined(separator: ", ")

        guard !key.isEmpty else {
            // No key: compare whole rows as sets.
            let inserted = try connection.scalar("SELECT count(*) FROM (SELECT \(list) FROM \(b) EXCEPT SELECT \(list) FROM \(a))").int ?? 0
            let deleted = try connection.scalar("SELECT count(*) FROM (SELECT \(list) FROM \(a) EXCEPT SELECT \(list) FROM \(b))").int ?? 0
            let same = try connection.scalar("SELECT count(*) FROM (SELECT \(list) FROM \(b) INTERSECT SELECT \(list) FROM \(a))").int ?? 0
            withGroup(nil) { $0.insertedCount = inserted; $0.deletedCount = deleted; $0.unchanged = same }
            return sortedGroups(groups)
        }

        let keyList = key.map { "n.\(Identifier.quoted($0))" }.joined(separator: ", ")
        let match = key.map { "o.\(Identifier.quoted($0)) IS n.\(Identifier.quoted($0))" }.joined(separator: " AND ")
        let newEnt = hasEnt ? "n.Z_ENT" : "NULL"

        // Inserted: keys only in the later state.
        for row in try connection.rows("""
            SELECT \(newEnt), \(keyList) FROM \(b) AS n
            WHERE NOT EXISTS (SELECT 1 FROM \(a) AS o WHERE \(match)) ORDER BY \(keyList)
            """) {
            withGroup(hasEnt ? row[0].int : nil) { $0.inserted.append(Array(row.values.dropFirst())); $0.insertedCount += 1 }
        }
        // Deleted: keys only in the earlier state (n names the earlier table here).
        for row in try connection.rows("""
            SELECT \(newEnt), \(keyList) FROM \(a) AS n
            WHERE NOT EXISTS (SELECT 1 FROM \(b) AS o WHERE \(match)) ORDER BY \(keyList)
            """) {
            withGroup(hasEnt ? row[0].int : nil) { $0.deleted.append(Array(row.values.dropFirst())); $0.deletedCount += 1 }
        }
        // Updated: rows of the later state that differ from every earlier row, yet whose key exists earlier.
        let valueColumns = common.filter { !key.contains($0) }
        var updatedByEnt: [Int?: Int] = [:]
        if !valueColumns.isEmpty {
            let (keys, flags) = try changedRows(table: table, valueColumns: valueColumns, list: list, earlier: a, later: b, key: key,
                                                keyList: keyList, match: match, newEnt: newEnt, hasEnt: hasEnt)
            let attributes = attributeNames[table]
            for (index, entry) in keys.enumerated() {
                let changed = zip(valueColumns, flags[index]).filter(\.1).map(\.0)
                guard !changed.isEmpty else { continue }
                let attributeList = attributes.map { map in
                    changed.filter { !Differ.bookkeeping.contains($0) }.map { map[$0] ?? $0 }
                }
                withGroup(entry.ent) {
                    $0.updated.append(.init(key: entry.key, changedColumns: changed, changedAttributes: attributeList))
                }
                updatedByEnt[entry.ent, default: 0] += 1
            }
        }
        // Unchanged: keys in both states, minus the updated ones.
        for row in try connection.rows("SELECT \(newEnt), count(*) FROM \(b) AS n JOIN \(a) AS o ON \(match) GROUP BY 1") {
            let ent = hasEnt ? row[0].int : nil
            let both = row[1].int ?? 0
            withGroup(ent) { $0.unchanged = max(0, both - (updatedByEnt[ent] ?? 0)) }
        }
        return sortedGroups(groups)
    }

    /// A table present in one state only: every row is inserted (`inserted`) or deleted.
    func oneSided(table: String, columns: [Column], source: String, inserted: Bool) throws -> [WALDiff.Group] {
        let key = keyColumns(columns, columns)
        let hasEnt = key == ["Z_PK"] && columns.contains { $0.name == "Z_ENT" }
        let keySQL = key.isEmpty ? "rowid" : key.map(Identifier.quoted).joined(separator: ", ")
        let entSQL = hasEnt ? "Z_ENT" : "NULL"
        var groups: [Int?: WALDiff.Group] = [:]
        for row in try connection.rows("SELECT \(entSQL), \(keySQL) FROM \(source) ORDER BY \(keySQL)") {
            let ent = hasEnt ? row[0].int : nil
            // Changed in place: a copy taken out of the dictionary copied its key arrays on every row.
            if groups[ent] == nil { groups[ent] = newGroup(table: table, entity: ent, key: key) }
            let rowKey = Array(row.values.dropFirst())
            if inserted {
                if !key.isEmpty { groups[ent]!.inserted.append(rowKey) }
                groups[ent]!.insertedCount += 1
            } else {
                if !key.isEmpty { groups[ent]!.deleted.append(rowKey) }
                groups[ent]!.deletedCount += 1
            }
        }
        return sortedGroups(groups)
    }

    /// The rows of the later state whose key is in the earlier one and some value differs, with a
    /// flag per value column saying whether it differs.
    func changedRows(table: String, valueColumns: [String], list: String, earlier a: String, later b: String, key: [String],
                     keyList: String, match: String, newEnt: String, hasEnt: Bool) throws
        -> (keys: [(ent: Int?, key: WALDiff.RowKey)], flags: [[Bool]]) {
        let differing = "(SELECT \(list) FROM \(b) EXCEPT SELECT \(list) FROM \(a))"
        // With one rowid key under one declaration, a row differs from every earlier row exactly
        // when a column differs from its key's earlier row: the join alone finds it, without
        // the EXCEPT's temporary b-tree of every row (most of recover's diff time on a large table).
        let direct = try valueColumns.count <= Self.directComparisonLimit && sameRowidTable(table, key: key)
        var flags: [[Bool]] = []
        var keys: [(ent: Int?, key: WALDiff.RowKey)] = []
        do {
            // SQL compares two values only whole: a value over `LongValue.window` stops this
            // (SQLITE_TOOBIG) before SQLite loads it, and the table is compared in pieces.
            try connection.withLengthLimit(LongValue.window) {
                // Result columns are limited (2000 by default): ask for the change flags in slices.
                let slice = 500
                for start in stride(from: 0, to: valueColumns.count, by: slice) {
                    let part = valueColumns[start ..< min(start + slice, valueColumns.count)]
                    let tests = part.map { "n.\(Identifier.quoted($0)) IS NOT o.\(Identifier.quoted($0))" }.joined(separator: ", ")
                    let rows = direct ? try connection.rows("""
                        SELECT \(newEnt), \(keyList), \(tests) FROM \(b) AS n JOIN \(a) AS o ON \(match)
                        WHERE \(part.map { "n.\(Identifier.quoted($0)) IS NOT o.\(Identifier.quoted($0))" }.joined(separator: " OR "))
                        ORDER BY \(keyList)
                        """) : try connection.rows("""
                        SELECT \(newEnt), \(keyList), \(tests) FROM \(differing) AS n JOIN \(a) AS o ON \(match)
                        ORDER BY \(keyList)
                        """)
                    for (index, row) in rows.enumerated() {
                        let values = row.values
                        let rowFlags = values.suffix(part.count).map { ($0.int64 ?? 0) != 0 }
                        if start == 0 {
                            keys.append((hasEnt ? row[0].int : nil, Array(values[1 ... key.count])))
                            flags.append(rowFlags)
                        } else if index < flags.count {
                            flags[index] += rowFlags
                        }
                    }
                }
            }
        } catch let error as SQLiteError where error.isTooBig {
            (keys, flags) = try changedInPieces(table: table, valueColumns: valueColumns, keyList: keyList, match: match,
                                                newEnt: newEnt, keyCount: key.count, hasEnt: hasEnt)
        }
        return (keys, flags)
    }

    /// The rows of the later state whose key is in the earlier one and some value differs, with
    /// the flags of the columns that differ, for a table holding a text or blob over
    /// `LongValue.window`: two texts or blobs are compared by length, then byte by byte in pieces
    /// of that size (`sqlite3_blob_open`), never whole; other values by SQL (`IS NOT`).
    func changedInPieces(table: String, valueColumns: [String], keyList: String, match: String, newEnt: String,
                         keyCount: Int, hasEnt: Bool) throws -> ([(ent: Int?, key: WALDiff.RowKey)], [[Bool]]) {
        let quotedTable = Identifier.quoted(table)
        let a = "\(WALDiff.Schema.earlier).\(quotedTable)", b = "\(WALDiff.Schema.later).\(quotedTable)"
        var keys: [(ent: Int?, key: WALDiff.RowKey)] = []
        var flags: [[Bool]] = []
        let pairs = try connection.rows("SELECT \(newEnt), \(keyList), n.rowid, o.rowid FROM \(b) AS n JOIN \(a) AS o ON \(match) ORDER BY \(keyList)")
        let large = "('text', 'blob')"
        for pair in pairs {
            guard let later = pair[keyCount + 1].int64, let earlier = pair[keyCount + 2].int64 else { continue }
            var rowFlags: [Bool] = []
            for start in stride(from: 0, to: valueColumns.count, by: 500) {
                let part = valueColumns[start ..< min(start + 500, valueColumns.count)]
                // typeof never reads a value; IS NOT runs only where neither side can be long.
                let tests = part.map { column -> String in
                    let n = "n.\(Identifier.quoted(column))", o = "o.\(Identifier.quoted(column))"
                    return "typeof(\(n)), typeof(\(o)), CASE WHEN typeof(\(n)) IN \(large) OR typeof(\(o)) IN \(large) THEN NULL ELSE \(n) IS NOT \(o) END"
                }.joined(separator: ", ")
                guard let row = try connection.withLengthLimit(LongValue.window, {
                    try connection.rows("SELECT \(tests) FROM \(b) AS n, \(a) AS o WHERE n.rowid = ? AND o.rowid = ?", [.integer(later), .integer(earlier)]).first
                }) else { continue }
                for (i, column) in part.enumerated() {
                    let typeN = row[3 * i].string ?? "", typeO = row[3 * i + 1].string ?? ""
                    if let same = row[3 * i + 2].int64 { rowFlags.append(same != 0); continue }
                    guard typeN == typeO else { rowFlags.append(true); continue }
                    rowFlags.append(try !sameStoredValue(table: table, column: column, later: later, earlier: earlier))
                }
            }
            guard rowFlags.contains(true) else { continue }
            keys.append((hasEnt ? pair[0].int : nil, Array(pair.values[1 ... keyCount])))
            flags.append(rowFlags)
        }
        return (keys, flags)
    }

    /// Whether a text or blob is byte for byte the same in both states, read in pieces.
    func sameStoredValue(table: String, column: String, later: Int64, earlier: Int64) throws -> Bool {
        let n = try connection.storedValue(table: table, column: column, rowid: later, schema: WALDiff.Schema.later)
        let o = try connection.storedValue(table: table, column: column, rowid: earlier, schema: WALDiff.Schema.earlier)
        guard n.count == o.count else { return false }
        var offset = 0
        while offset < n.count {
            let end = min(n.count, offset + LongValue.window)
            if try n.bytes(offset ..< end) != o.bytes(offset ..< end) { return false }
            offset = end
        }
        return true
    }

    /// Value columns up to which a changed row is found by the join alone (`sameRowidTable`):
    /// one slice of flags, and an `OR` chain well inside SQLite's expression depth limit (1000).
    static let directComparisonLimit = 200

    /// Whether `table` is declared the same in both states with `key` as its only primary-key
    /// column, an `INTEGER PRIMARY KEY` (the rowid): each key is then one row on each side, and
    /// every column compares with the same affinity and collation on both, so `IS NOT` column by
    /// column against the row of the same key tells exactly the rows `EXCEPT` leaves.
    func sameRowidTable(_ table: String, key: [String]) throws -> Bool {
        guard key.count == 1 else { return false }
        let sql = "SELECT sql FROM %@.sqlite_master WHERE type = 'table' AND name = ?"
        let earlier = try connection.scalar(sql.replacingOccurrences(of: "%@", with: WALDiff.Schema.earlier), [.text(table)])
        let later = try connection.scalar(sql.replacingOccurrences(of: "%@", with: WALDiff.Schema.later), [.text(table)])
        guard let declaration = earlier.string, declaration == later.string else { return false }
        let primary = try connection.rows("SELECT name, type FROM pragma_table_info(?, ?) WHERE pk > 0", [.text(table), .text(WALDiff.Schema.earlier)])
        guard primary.count == 1, primary[0][0].string == key[0], primary[0][1].string?.uppercased() == "INTEGER" else { return false }
        // An index made for the key means it is not the rowid (`INTEGER PRIMARY KEY DESC`, or a
        // table without rowid), and a rowid table's such key may hold NULL more than once.
        return try connection.scalar("SELECT count(*) FROM pragma_index_list(?, ?) WHERE origin = 'pk'",
                                     [.text(table), .text(WALDiff.Schema.earlier)]).int == 0
    }

    /// `Z_PK` when both sides have it, else the declared primary key when both
    /// sides declare the same one, else nothing (rows are compared whole).
    func keyColumns(_ earlier: [Column], _ later: [Column]) -> [String] {
        if earlier.contains(where: { $0.name == "Z_PK" }) && later.contains(where: { $0.name == "Z_PK" }) { return ["Z_PK"] }
        func declared(_ columns: [Column]) -> [String] {
            columns.filter { $0.primaryKeyIndex > 0 }.sorted { $0.primaryKeyIndex < $1.primaryKeyIndex }.map(\.name)
        }
        let key = declared(earlier)
        return !key.isEmpty && key == declared(later) ? key : []
    }

    func newGroup(table: String, entity: Int?, key: [String]) -> WALDiff.Group {
        WALDiff.Group(entity: entity.map { entityNames[$0] ?? "Z_ENT \($0)" }, entityNumber: entity, table: table, keyColumns: key)
    }

    func sortedGroups(_ groups: [Int?: WALDiff.Group]) -> [WALDiff.Group] {
        groups.values.sorted { ($0.entityNumber ?? -1) < ($1.entityNumber ?? -1) }
    }
}

extension WALDiff {
    /// Persistent history's own tables: what a commit wrote there is about the other tables.
    public static let historyTables: Set<String> = ["ATRANSACTION", "ACHANGE", "ATRANSACTIONSTRING"]
}

extension WALDiff.Group {
    /// "3 inserted, 1 updated, 2 deleted, 40 unchanged" (the kinds with none are left out,
    /// unchanged always said).
    public var countsText: String {
        var parts: [String] = []
        if insertedCount > 0 { parts.append("\(insertedCount) inserted") }
        if !updated.isEmpty { parts.append("\(updated.count) updated") }
        if deletedCount > 0 { parts.append("\(deletedCount) deleted") }
        parts.append("\(unchanged) unchanged")
        return parts.joined(separator: ", ")
    }
}
