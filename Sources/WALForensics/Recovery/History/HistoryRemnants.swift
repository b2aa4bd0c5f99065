import CoreDataStore
import Foundation
import SQLiteAccess
import StoreFormats

/// Deletes that persistent history no longer holds: `ACHANGE` rows carved from free space, the
/// freelist and older frames (Core Data prunes history; SQLite frees the rows, and their bytes
/// stay). A carved delete names a record (its entity and key, with the values the delete kept)
/// as a delete in `ACHANGE` does, and is joined the same way (docs/recover.md, "Deleted records
/// in persistent history").
extension CarvingShape {
    /// `ACHANGE` read as a table to carve, when it has Core Data's layout: its `ZENTITY`,
    /// `ZENTITYPK` and `ZTRANSACTIONID` are keys (NULL or a positive integer).
    static func changeShape(of state: StateReader) throws -> CarvingShape? {
        let c = state.connection
        guard try c.tableExists("ACHANGE") else { return nil }
        let info = try c.rows("SELECT name, type, pk FROM pragma_table_info('ACHANGE') ORDER BY cid")
        let keys: Set<String> = ["ZENTITY", "ZENTITYPK", "ZTRANSACTIONID"]
        let columns = info.map { row in
            Column(name: row[0].string ?? "", kind: kind(ofDeclared: row[1].string ?? ""), isKey: keys.contains((row[0].string ?? "").uppercased()))
        }
        let names = columns.map { $0.name.uppercased() }
        guard let pk = names.firstIndex(of: "Z_PK"), let ent = names.firstIndex(of: "Z_ENT"), info[pk][2].int == 1,
              ["ZCHANGETYPE", "ZENTITY", "ZENTITYPK"].allSatisfy(names.contains) else { return nil }
        var numbers = Set(try c.rows("SELECT DISTINCT Z_ENT FROM ACHANGE LIMIT 16").compactMap { $0[0].int })
        if try c.tableExists("Z_PRIMARYKEY") {
            numbers.formUnion(try c.rows("SELECT Z_ENT FROM Z_PRIMARYKEY WHERE upper(Z_NAME) = 'CHANGE'").compactMap { $0[0].int })
        }
        guard !numbers.isEmpty else { return nil }
        // Core Data leaves history's Z_OPT NULL: it is not held to the save counter's rule.
        return CarvingShape(table: "ACHANGE", columns: columns, entities: numbers, pkIndex: pk, entIndex: ent, optIndex: nil)
    }
}

/// The carved deletes of records, taken as the pages are carved: a delete of a user entity's
/// key, not a row the history still has, once per key and transaction (later places are finds).
final class HistoryRemnants {
    struct Delete {
        let key: RecordKey
        var transaction: HistoryTransaction
        /// The places this row was met, at most `RecordVersion.findLimit` (the rest counted).
        var finds: [RecordVersion.Find]
        var findSet: Set<RecordVersion.Find>
        var findsOmitted = 0
    }

    private(set) var deletes: [Delete] = []
    private var seen: [String: Int] = [:]
    /// Rows already found to be the live history's, or no record's.
    private var turnedAway: Set<String> = []
    private var reader: HistoryReader?
    private let state: StateReader
    private let shape: CarvingShape
    private let names: [Int: (name: String, table: String)]
    private var bounds: [Int: Int64?] = [:]
    /// Carved deletes of keys live in the last state, turned away by `forEachVersion`.
    private(set) var liveKeysTurnedAway = 0

    init?(state: StateReader, shape: CarvingShape, names: [Int: (name: String, table: String)]) {
        guard let store = state.store, var reader = try? HistoryReader(connection: state.connection, store: store, model: state.map?.model) else { return nil }
        reader.decoder = state.decoder
        self.reader = reader
        self.state = state
        self.shape = shape
        self.names = names
    }

    func take(_ hit: StoreCarver.Hit, encoding: UInt32) throws {
        var columns: [String: DatabaseValue] = [:]
        for (column, value) in zip(shape.columns, hit.record.values) { columns[column.name.uppercased()] = DatabaseValue(value, textEncoding: encoding) }
        if let rowid = hit.record.rowid { columns["Z_PK"] = .integer(rowid) }
        guard columns["ZCHANGETYPE"]?.int64 == 2, let number = columns["ZENTITY"]?.int, let pk = columns["ZENTITYPK"]?.int64, pk > 0,
              let entity = names[number], !entity.table.isEmpty, number < 16000 else { return }
        // The same row is met in many places (every WAL frame of its page): it is judged once.
        let id = "\(number)/\(pk)/\(columns["ZTRANSACTIONID"]?.int64 ?? 0)"
        if let i = seen[id] {
            // A set, not a search of the list: one row met 100,000 times made this quadratic.
            guard deletes[i].findSet.insert(hit.find).inserted else { return }
            if deletes[i].finds.count < RecordVersion.findLimit { deletes[i].finds.append(hit.find) } else { deletes[i].findsOmitted += 1 }
            return
        }
        guard !turnedAway.contains(id) else { return }
        guard try withinBound(pk, entity: number, table: entity.table), try !isLiveHistory(columns, rowid: hit.record.rowid),
              let transaction = try reader?.carvedDelete(columns) else {
            turnedAway.insert(id)
            return
        }
        seen[id] = deletes.count
        deletes.append(Delete(key: RecordKey(entity: number, pk: pk), transaction: transaction, finds: [hit.find], findSet: [hit.find]))
    }

    /// A key above its entity's `Z_MAX` (`IndexShape.bound`) was never a record's.
    private func withinBound(_ pk: Int64, entity: Int, table: String) throws -> Bool {
        if bounds[entity] == nil { bounds[entity] = try IndexShape.bound(of: entity, table: table, state: state) }
        return bounds[entity]!.map { pk <= $0 } ?? true
    }

    /// Whether the history still has this row (its `Z_PK`), or this delete (entity, key and
    /// transaction) where the rowid was lost: it is then read from the table, not from here.
    private func isLiveHistory(_ columns: [String: DatabaseValue], rowid: Int64?) throws -> Bool {
        let c = state.connection
        if let rowid { return try !c.rows("SELECT 1 FROM ACHANGE WHERE Z_PK = ?", [.integer(rowid)]).isEmpty }
        return try !c.rows("SELECT 1 FROM ACHANGE WHERE ZCHANGETYPE = 2 AND ZENTITY = ? AND ZENTITYPK = ? AND ZTRANSACTIONID IS ?",
                           [columns["ZENTITY"] ?? .null, columns["ZENTITYPK"] ?? .null, columns["ZTRANSACTIONID"] ?? .null]).isEmpty
    }

    /// The carved deletes of these keys, as `HistoryDeletes.deletes(of:)` gives the table's.
    func deletes(of keys: [Int: Set<Int64>]) -> [RecordKey: [HistoryTransaction]] {
        var out: [RecordKey: [HistoryTransaction]] = [:]
        for d in deletes where keys[d.key.entity]?.contains(d.key.pk) == true { out[d.key, default: []].append(d.transaction) }
        return out
    }

    /// Versions of the deleted records no other version names, by entity then key: state
    /// `deleted`, confidence `tombstone`, the values the delete kept, the carved row as a find.
    func forEachVersion(filter: RecordRecovery.Filter, isKnown: (RecordKey) -> Bool, _ body: (RecordVersion) throws -> Void) throws {
        // Core Data never reuses a Z_PK: a delete naming a key that is live in the last state
        // is not this record's (damage, or crafted), and is no deletion to report.
        let live = try RecordRecovery.liveKeys(Set(deletes.map(\.key)), last: state, names: names)
        liveKeysTurnedAway = live.count
        // One version per key: its first delete's kept values, every delete of it (a record is
        // deleted once; more is damage, and only the first few are kept).
        for group in Dictionary(grouping: deletes, by: \.key).sorted(by: { $0.key < $1.key }) where !isKnown(group.key) && !live.contains(group.key) {
            let key = group.key
            guard let name = names[key.entity], filter.keeps(entity: name.name), filter.pk.map({ $0 == key.pk }) ?? true,
                  let first = group.value.first else { continue }
            let values = (first.transaction.changes.first?.tombstoneValues ?? []).map { RecordChange.Value(name: $0.name, value: $0.value) }
            var v = RecordVersion(entity: name.name, entityNumber: key.entity, table: name.table, pk: key.pk, values: values,
                                  state: .deleted, sources: [], confidence: .tombstone)
            v.addFinds(group.value.flatMap(\.finds), omitted: group.value.reduce(0) { $0 + $1.findsOmitted })
            v.historyDeletes = group.value.prefix(HistoryDeletes.perRecordLimit).map(\.transaction)
            if filter.keeps(v) { try body(v) }
        }
    }
}
