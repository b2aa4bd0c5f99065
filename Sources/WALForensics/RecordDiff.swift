import CoreDataStore
import Foundation
import SQLiteAccess
import StoreFormats

/// One changed record between two states of a store, with its values decoded as `rows` shows them.
public struct RecordChange: Sendable {
    public enum Kind: String, Sendable {
        case inserted, updated, deleted
    }

    /// A property (or, for a table without a model, a column) and its value.
    public struct Value: Sendable {
        public let name: String
        public let value: FieldValue
    }

    /// A property whose stored value changed.
    public struct Change: Sendable {
        public let name: String
        public let old: FieldValue
        public let new: FieldValue
    }

    public let kind: Kind
    /// The Core Data entity (the row's own `Z_ENT`), or nil for a table without `Z_ENT`.
    public let entity: String?
    public let table: String
    /// The values of the group's key columns (`Z_PK` for entity tables).
    public let key: WALDiff.RowKey
    /// Inserted: the values after; deleted: the last values before the delete; updated: empty.
    public let values: [Value]
    /// Updated: old → new for each property whose columns changed (`Z_OPT` left out).
    public let changes: [Change]
    /// Updated: the raw columns that differ, `Z_OPT` included.
    public let changedColumns: [String]

    /// The primary key, when the record is matched on a single integer key.
    public var pk: Int64? {
        guard key.count == 1, case .integer(let value) = key[0] else { return nil }
        return value
    }
}

/// What changed between two states of a store, record by record: every inserted, updated and
/// deleted row with its decoded values (through the store's model and `RowReader`, as `rows`
/// decodes them; tables the model does not describe are shown column by column as stored).
public struct RecordDiff: Sendable {
    /// The key-level diff the records were read for.
    public let diff: WALDiff
    /// One entry per `diff.groups` element, in the same order.
    public let groups: [GroupRecords]
    /// The persistent-history transactions the later state holds that the earlier one does not
    /// (the ATRANSACTION rows inserted between them); nil when the later state has no history.
    public let transactions: [HistoryTransaction]?

    public struct GroupRecords: Sendable {
        public let group: WALDiff.Group
        /// Inserted, then updated, then deleted, each in key order. Tables compared whole (no key)
        /// have no records, only counts.
        public let records: [RecordChange]
    }

    /// The store after commit `from` against the store after commit `to`, record by record.
    ///
    /// - Parameters:
    ///   - from: 0 (the main file alone, the default) up to the number of commits.
    ///   - to: the later state; nil is the last valid commit.
    ///   - decoder: how values are decoded (points at the original's support folder for external data).
    public static func compute(_ evidence: WALEvidence, from: Int? = nil, to: Int? = nil,
                               decoder: ValueDecoder = ValueDecoder()) throws(WALForensicsError) -> RecordDiff {
        let earlier = try StateReader(evidence, commit: from ?? 0, option: "--from", decoder: decoder)
        let later = try StateReader(evidence, commit: to ?? evidence.commitCount, option: "--to", decoder: decoder)
        return try compute(evidence, earlier: earlier, later: later)
    }

    /// Every commit's diff in one pass: commit k against commit k − 1, from the first commit to the
    /// last, handed to `body` one at a time. Only two states are open at once; each state's image
    /// (in the working folder when the evidence has one) is removed as soon as it is no longer needed.
    ///
    /// Only the tables whose b-trees hold the pages a commit wrote are compared (the pages are
    /// mapped to tables as `wal` maps them, commit by commit), so a commit that touched one small
    /// table costs little however large the others are; groups of other tables are left out. When
    /// the pages cannot be mapped (damage, pages nothing reaches) or the schema changed, every
    /// table is compared.
    public static func forEachCommit(_ evidence: WALEvidence, decoder: ValueDecoder = ValueDecoder(),
                                     _ body: (_ commit: Int, RecordDiff) throws -> Void) throws {
        try forEachCommitStates(evidence, decoder: decoder) { commit, diff, _, _ in try body(commit, diff) }
    }

    /// `forEachCommit` with the two states compared, for callers that read more of them
    /// (`RecordRecovery` reads an updated record's whole values on both sides).
    ///
    /// With `entityRecordsOnly` (what `RecordRecovery` uses), only entity records
    /// (`RecordRecovery.isRecordGroup`) carry records, by key alone (no values, no changes: the
    /// caller reads them, a few at a time); the other groups keep their keys and counts only.
    static func forEachCommitStates(_ evidence: WALEvidence, decoder: ValueDecoder, entityRecordsOnly: Bool = false,
                                    _ body: (_ commit: Int, RecordDiff, _ earlier: StateReader, _ later: StateReader) throws -> Void) throws {
        let count = evidence.commitCount
        guard count > 0, let wal = evidence.wal else { return }
        let tracker = try? PageOwnershipTracker(mainFile: evidence.mainFile, wal: wal, walData: evidence.walData, files: evidence.files)
        var earlier = try StateReader(evidence, commit: 0, option: "--from", decoder: decoder)
        for commit in 1...count {
            let later = try StateReader(evidence, commit: commit, option: "--to", decoder: decoder)
            var touched: Set<String>?
            if let tracker, tracker.advance(), tracker.commit == commit, tracker.problems.isEmpty, tracker.unaccountedPages.isEmpty {
                touched = Set(wal.transactions[commit - 1].pages.compactMap { tracker.use(of: $0)?.object?.tableName })
            }
            let diff = try compute(evidence, earlier: earlier, later: later, onlyTables: touched, entityRecordsOnly: entityRecordsOnly)
            try body(commit, diff, earlier, later)
            let previous = earlier.commit
            earlier = later
            PointInTime.discardImage(evidence, commit: previous)
        }
        PointInTime.discardImage(evidence, commit: count)
    }

    static func compute(_ evidence: WALEvidence, earlier: StateReader, later: StateReader,
                        onlyTables: Set<String>? = nil, entityRecordsOnly: Bool = false) throws(WALForensicsError) -> RecordDiff {
        let names = later.map.map(AttributeNames.of) ?? [:]
        do {
            // A schema change (a table created, dropped or altered) is compared in full.
            let same = try earlier.schema() == later.schema()
            var only = same ? onlyTables : nil
            if entityRecordsOnly {
                // Entity tables and ATRANSACTION (its new keys name the commit's transactions) are
                // all that is read: the other tables' comparisons (whole-table EXCEPTs) would be dropped.
                let wanted = try earlier.recordTables().union(later.recordTables())
                only = only.map { $0.intersection(wanted) } ?? wanted
            }
            let diff = try WALDiff.compute(evidence, from: earlier.commit, to: later.commit, attributeNames: names,
                                           onlyTables: only)
            var groups: [GroupRecords] = []
            var transactionIDs: [Int64] = []
            for group in diff.groups {
                if entityRecordsOnly && !RecordRecovery.isRecordGroup(group) {
                    groups.append(GroupRecords(group: group, records: []))
                } else if entityRecordsOnly {
                    groups.append(GroupRecords(group: group, records: keysOnly(of: group)))
                } else {
                    groups.append(GroupRecords(group: group, records: try records(of: group, earlier: earlier, later: later,
                                                                                  updatedChanges: !entityRecordsOnly)))
                }
                if group.table == "ATRANSACTION", group.keyColumns == ["Z_PK"] {
                    transactionIDs += group.inserted.compactMap { $0.first?.int64 }
                }
            }
            // Damaged history tables leave the transactions out (null), not the diff.
            let transactions = (try? later.transactions(transactionIDs)) ?? nil
            return RecordDiff(diff: diff, groups: groups, transactions: transactions)
        } catch {
            throw WALForensicsError.reading(error, path: evidence.displayPath)
        }
    }

    /// The group's records by key alone, for a caller that reads their values itself (`recover`,
    /// a bounded number at a time): inserted, updated (with the columns that changed), deleted.
    static func keysOnly(of group: WALDiff.Group) -> [RecordChange] {
        guard !group.keyColumns.isEmpty else { return [] }
        func change(_ kind: RecordChange.Kind, _ key: WALDiff.RowKey, _ columns: [String]) -> RecordChange {
            RecordChange(kind: kind, entity: group.entity, table: group.table, key: key, values: [], changes: [], changedColumns: columns)
        }
        return group.inserted.map { change(.inserted, $0, []) } + group.updated.map { change(.updated, $0.key, $0.changedColumns) }
            + group.deleted.map { change(.deleted, $0, []) }
    }

    /// The group's records: inserted and deleted with their values, updated with their changes
    /// (old → new for each changed property) unless `updatedChanges` is false.
    static func records(of group: WALDiff.Group, earlier: StateReader, later: StateReader,
                        updatedChanges: Bool = true) throws -> [RecordChange] {
        guard !group.keyColumns.isEmpty else { return [] }
        var out: [RecordChange] = []
        out.reserveCapacity(group.inserted.count + group.updated.count + group.deleted.count)
        for (key, values) in try later.values(of: group, keys: group.inserted) {
            out.append(RecordChange(kind: .inserted, entity: group.entity, table: group.table, key: key, values: values,
                                    changes: [], changedColumns: []))
        }
        if !group.updated.isEmpty && !updatedChanges {
            for row in group.updated {
                out.append(RecordChange(kind: .updated, entity: group.entity, table: group.table, key: row.key, values: [],
                                        changes: [], changedColumns: row.changedColumns))
            }
        } else if !group.updated.isEmpty {
            let keys = group.updated.map(\.key)
            let before = Dictionary(try earlier.columnValues(of: group, keys: keys), uniquingKeysWith: { a, _ in a })
            let after = Dictionary(try later.columnValues(of: group, keys: keys), uniquingKeysWith: { a, _ in a })
            for row in group.updated {
                let changed = Set(row.changedColumns)
                let old = before[row.key] ?? []
                let new = after[row.key] ?? []
                var changes: [RecordChange.Change] = []
                var oldByName: [String: StateReader.ColumnValue] = [:]
                for value in old where oldByName[value.name] == nil { oldByName[value.name] = value }
                for value in new where !value.columns.isEmpty && value.columns.contains(where: changed.contains) {
                    changes.append(.init(name: value.name, old: oldByName[value.name]?.value ?? .null, new: value.value))
                }
                out.append(RecordChange(kind: .updated, entity: group.entity, table: group.table, key: row.key, values: [],
                                        changes: changes, changedColumns: row.changedColumns))
            }
        }
        for (key, values) in try earlier.values(of: group, keys: group.deleted) {
            out.append(RecordChange(kind: .deleted, entity: group.entity, table: group.table, key: key, values: values,
                                    changes: [], changedColumns: []))
        }
        return out
    }
}

/// One state of a store opened for reading values: its connection and, for a Core Data store whose
/// model can be read, its schema map, so rows decode exactly as `rows` decodes them.
final class StateReader {
    let commit: Int
    let connection: Connection
    let store: CoreDataStore?
    let map: SchemaMap?
    let decoder: ValueDecoder
    private var rowReaders: [Int: RowReader?] = [:]
    private var tableColumns: [String: [String]] = [:]
    private var shown: [String: Set<String>] = [:]
    private var recordTableNames: Set<String>?
    private var fieldScans: [FieldScanKey: (RowReader.FieldScan, String)?] = [:]

    /// A value with the stored columns it was decoded from (empty: not compared).
    struct ColumnValue {
        let name: String
        let value: FieldValue
        let columns: [String]
    }

    init(_ evidence: WALEvidence, commit: Int, option: String, decoder: ValueDecoder) throws(WALForensicsError) {
        let available = evidence.commitCount
        guard commit >= 0, commit <= available else {
            throw .commitOutOfRange(path: evidence.displayPath, option: option, requested: commit, available: available)
        }
        self.commit = commit
        self.decoder = decoder
        connection = try PointInTime.open(evidence, commit: commit, option: option)
        // A store whose model cannot be read is still diffed, column by column.
        let store = (try? CoreDataStore.read(connection)) ?? nil
        self.store = store
        if let store, let model = try? ModelLoader.load(connection: connection, store: store) {
            map = try? SchemaMap.build(model: model, store: store, connection: connection, path: evidence.displayPath)
        } else {
            map = nil
        }
    }

    /// Another database (carved rows laid into a scratch table) read through `other`'s model, so
    /// its rows decode exactly as `other`'s do.
    init(connection: Connection, like other: StateReader) {
        commit = other.commit
        decoder = other.decoder
        self.connection = connection
        store = other.store
        map = other.map
    }

    /// The schema's rows, to tell whether two states share one schema.
    func schema() throws -> [[DatabaseValue]] {
        try connection.rows("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name").map(\.values)
    }

    /// The reader for one concrete entity of `table`, or nil when the model does not describe it there.
    func rowReader(entity number: Int?, table: String) -> RowReader? {
        guard let number, let map else { return nil }
        if let cached = rowReaders[number] { return cached }
        var reader: RowReader?
        if let mapping = map.entity(number: number), mapping.table == table, mapping.tableExists {
            reader = RowReader(map: map, entity: mapping, decoder: decoder)
        }
        rowReaders[number] = reader
        return reader
    }

    /// The rows of `group` with these keys, decoded; keys this state lacks are left out.
    func values(of group: WALDiff.Group, keys: [WALDiff.RowKey]) throws -> [(WALDiff.RowKey, [RecordChange.Value])] {
        try columnValues(of: group, keys: keys).map { key, values in
            (key, values.map { RecordChange.Value(name: $0.name, value: $0.value) })
        }
    }

    func columnValues(of group: WALDiff.Group, keys: [WALDiff.RowKey]) throws -> [(WALDiff.RowKey, [ColumnValue])] {
        guard !keys.isEmpty else { return [] }
        if group.keyColumns == ["Z_PK"], let reader = rowReader(entity: group.entityNumber, table: group.table) {
            // A model that does not fit the table (a column it maps is missing) must not cost the
            // diff: the rows are then shown column by column, as for a table without a model.
            if let decoded = try? decodedValues(of: group, keys: keys, reader: reader) { return decoded }
        }
        let all = try columns(of: group.table)
        let bookkeeping: Set<String> = group.keyColumns == ["Z_PK"] ? ["Z_PK", "Z_ENT", "Z_OPT"] : []
        return try rawValues(table: group.table, keyColumns: group.keyColumns, columns: all.filter { !bookkeeping.contains($0) }, keys: keys)
    }

    /// Tables whose rows can be entity records (`Z_PK` and `Z_ENT` columns, not persistent
    /// history's), and ATRANSACTION.
    func recordTables() throws -> Set<String> {
        if let recordTableNames { return recordTableNames }
        var out: Set<String> = []
        let names = try connection.rows("SELECT name FROM sqlite_master WHERE type = 'table' AND rootpage > 0 AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'")
            .compactMap { $0[0].string }
        for table in names {
            let upper = table.uppercased()
            if upper == "ATRANSACTION" { out.insert(table); continue }
            guard !RecordRecovery.historyTables.contains(upper) else { continue }
            let columns = Set(try columns(of: table).map { $0.uppercased() })
            if columns.contains("Z_PK") && columns.contains("Z_ENT") { out.insert(table) }
        }
        recordTableNames = out
        return out
    }

    /// How many values `values(of:keys:)` decodes through the model for a row of entity
    /// `group.entityNumber` (the fields that apply to it, before any column no property shows),
    /// or nil when that entity's rows are not read through the model.
    func decodedFieldCount(of group: WALDiff.Group) -> Int? {
        applicableFields(of: group)?.fields.count
    }

    private func applicableFields(of group: WALDiff.Group) -> (reader: RowReader, fields: [Int])? {
        guard group.keyColumns == ["Z_PK"], let number = group.entityNumber, let map,
              let reader = rowReader(entity: number, table: group.table) else { return nil }
        let lineage = Set(map.entity(number: number)?.lineage ?? reader.entity.lineage)
        return (reader, reader.fields.indices.filter { lineage.contains(reader.fields[$0].declaredBy) })
    }

    /// For rows of entity `group.entityNumber` with these keys, the value at `position` of what
    /// `values(of:keys:)` gives them, read and decoded alone, handed to `keep`; the keys of the
    /// rows it turns away, or nil when the rows would not be read through the model there. Equal
    /// fingerprints of whole values need equal pieces: rows whose piece no carved record has
    /// cannot fold with one. Rows of another entity, or missing, have no piece (none turned away).
    func turnedAway(of group: WALDiff.Group, keys: [Int64], position: Int, keep: (RecordChange.Value) -> Bool) -> Set<Int64>? {
        guard let low = keys.min(), let high = keys.max() else { return [] }
        let id = FieldScanKey(entity: group.entityNumber ?? -1, table: group.table, position: position)
        if fieldScans[id] == nil {
            // Made once per entity and value (nil inside: not read through the model).
            var made: (RowReader.FieldScan, String)?
            if let (reader, fields) = applicableFields(of: group), fields.indices.contains(position),
               let scan = try? reader.values(of: fields[position], connection) {
                made = (scan, reader.fields[fields[position]].name)
            }
            fieldScans[id] = .some(made)
        }
        guard let (scan, name) = fieldScans[id] ?? nil else { return nil }
        let wanted = Set(keys)
        var out: Set<Int64> = []
        do {
            try scan.forEach(keys: low ... high) { pk, value in
                if let value, wanted.contains(pk), !keep(RecordChange.Value(name: name, value: value)) {
                    out.insert(pk)
                }
            }
        } catch {
            return nil
        }
        return out
    }

    struct FieldScanKey: Hashable {
        let entity: Int
        let table: String
        let position: Int
    }

    /// The rows through the rows reader, plus the columns no property shows.
    func decodedValues(of group: WALDiff.Group, keys: [WALDiff.RowKey], reader: RowReader) throws -> [(WALDiff.RowKey, [ColumnValue])] {
        var rows: [(WALDiff.RowKey, [ColumnValue])] = []
        let pks = keys.compactMap { $0.first?.int64 }
        let columns = reader.fields.map { RowReader.columns(of: $0).compactMap { $0 } }
        // Columns no entity of the table shows as a property (order keys, columns an older model
        // left, unknown ones) are shown as stored, by column name.
        let covered = shownColumns(table: group.table)
        let extra = try self.columns(of: group.table).filter { !covered.contains($0) }
        let raw = extra.isEmpty ? [:] : Dictionary(try rawValues(table: group.table, keyColumns: ["Z_PK"], columns: extra, keys: keys),
                                                   uniquingKeysWith: { a, _ in a })
        try reader.forEach(connection, primaryKeys: pks) { row in
            let key: WALDiff.RowKey = [.integer(row.pk)]
            var values = zip(row.values, row.fieldIndexes).map { value, index in
                ColumnValue(name: value.name, value: value.value, columns: columns[index])
            }
            values += raw[key] ?? []
            rows.append((key, values))
        }
        return rows
    }

    /// The columns the rows reader shows as properties for any entity stored in `table`, with
    /// Core Data's bookkeeping columns (a sibling entity's columns are not unknown columns).
    func shownColumns(table: String) -> Set<String> {
        if let cached = shown[table] { return cached }
        var columns: Set<String> = ["Z_PK", "Z_ENT", "Z_OPT"]
        for mapping in map?.entities ?? [] where mapping.table == table {
            guard let map else { break }
            for field in RowReader(map: map, entity: mapping, decoder: decoder).fields {
                columns.formUnion(RowReader.columns(of: field).compactMap { $0 })
            }
        }
        shown[table] = columns
        return columns
    }

    func columns(of table: String) throws -> [String] {
        if let cached = tableColumns[table] { return cached }
        let names = try connection.rows("SELECT name FROM pragma_table_info(?) ORDER BY cid", [.text(table)]).compactMap { $0[0].string }
        tableColumns[table] = names
        return names
    }

    /// Columns as stored (`ValueDecoder.natural`), for rows matched on `keyColumns`, a bounded
    /// number of keys per statement.
    func rawValues(table: String, keyColumns: [String], columns: [String], keys: [WALDiff.RowKey]) throws -> [(WALDiff.RowKey, [ColumnValue])] {
        let present = Set(try self.columns(of: table))
        let wanted = columns.filter(present.contains)
        guard !keyColumns.isEmpty, keyColumns.allSatisfy(present.contains) else { return [] }
        let keyList = keyColumns.map(Identifier.quoted).joined(separator: ", ")
        let select = (keyColumns + wanted).map(Identifier.quoted).joined(separator: ", ")
        let tuple = "(" + keyColumns.map { _ in "?" }.joined(separator: ", ") + ")"
        let chunk = max(1, 500 / keyColumns.count)
        var rows: [(WALDiff.RowKey, [ColumnValue])] = []
        for start in stride(from: 0, to: keys.count, by: chunk) {
            let part = keys[start ..< min(start + chunk, keys.count)]
            let sql = "SELECT \(select) FROM \(Identifier.quoted(table)) WHERE (\(keyList)) IN (VALUES "
                + part.map { _ in tuple }.joined(separator: ", ") + ") ORDER BY \(keyList)"
            for row in try connection.rows(sql, part.flatMap { $0 }) {
                let values = row.values
                let key = Array(values.prefix(keyColumns.count))
                rows.append((key, zip(wanted, values.dropFirst(keyColumns.count)).map {
                    ColumnValue(name: $0, value: ValueDecoder.natural($1), columns: [$0])
                }))
            }
        }
        return rows
    }

    /// The history transactions with these ids, with their changes; nil when this state
    /// has no persistent history.
    func transactions(_ ids: [Int64]) throws -> [HistoryTransaction]? {
        guard let store, try connection.tableExists("ATRANSACTION"), try connection.tableExists("ACHANGE") else { return nil }
        guard !ids.isEmpty else { return [] }
        var reader = try HistoryReader(connection: connection, store: store, model: map?.model)
        var out: [HistoryTransaction] = []
        let sorted = ids.sorted()
        for start in stride(from: 0, to: sorted.count, by: 500) {
            let part = Array(sorted[start ..< min(start + 500, sorted.count)])
            try reader.forEachTransaction(.init(transactionIDs: part)) { out.append($0) }
        }
        return out
    }
}
