import Acquisition
import CoreDataStore
import Foundation
import SQLiteAccess

/// What persistent history remembers of deleted records, for `recover`: which transaction
/// deleted a record (by entity and `Z_PK`), and the values a delete kept in `ZTOMBSTONE0…n` (the
/// attributes the model preserves on deletion). Read from the last state (the history SQLite
/// shows), streamed in entity and key order; nothing is held but what the caller asks to keep.
struct HistoryDeletes {
    private var reader: HistoryReader

    /// Nil when the state has no persistent history (or no model-backed store to name it by), or
    /// history tables not laid out as Core Data makes them: the other versions are still given,
    /// as `wal --diff` leaves a damaged history's transactions out rather than the diff.
    init?(_ state: StateReader) throws {
        guard let store = state.store, try state.connection.tableExists("ATRANSACTION"), try state.connection.tableExists("ACHANGE") else { return nil }
        var reader: HistoryReader
        do {
            reader = try HistoryReader(connection: state.connection, store: store, model: state.map?.model)
        } catch is ModelError {
            return nil
        }
        reader.decoder = state.decoder
        self.reader = reader
    }

    var keepsValues: Bool { reader.keepsTombstones }

    /// Runs a step that reads history; a history SQLite cannot read (damaged pages) gives nil, as
    /// a damaged layout does: recover still gives every other version (`check` and `history`
    /// report the damage). Our own working-folder failures are thrown, never taken for that.
    static func unlessUnreadable<T>(_ body: () throws -> T) throws -> T? {
        do {
            return try body()
        } catch {
            if let failure = WorkingFolderFailure.from(error) { throw failure }
            return nil
        }
    }

    /// A record is deleted once; a history naming more deletes of one key than this is damaged or
    /// crafted, and only the first ones are kept (each holds its values: memory stays bounded).
    static let perRecordLimit = 16

    /// Every delete of the given keys (entity number → keys), as transactions holding that one
    /// change, by key. Deletes of other keys are read and dropped.
    mutating func deletes(of keys: [Int: Set<Int64>]) throws -> [RecordKey: [HistoryTransaction]] {
        guard !keys.isEmpty else { return [:] }
        var out: [RecordKey: [HistoryTransaction]] = [:]
        try reader.forEachDeletion(keptValuesOnly: false, entityNumbers: keys.keys.sorted(), byKey: false) { t in
            guard let c = t.changes.first, let number = c.entityNumber, let pk = c.pk, keys[number]?.contains(pk) == true else { return }
            let key = RecordKey(entity: number, pk: pk)
            if out[key]?.count ?? 0 < Self.perRecordLimit { out[key, default: []].append(t) }
        }
        return out
    }

    /// Deletes that kept values, by entity, then key, then change (`byKey`), or in change order.
    mutating func forEachTombstone(entityNumbers: [Int]?, pk: Int64?, byKey: Bool = true,
                                   _ body: (HistoryTransaction, HistoryChange) throws -> Void) throws {
        guard reader.keepsTombstones else { return }
        try reader.forEachDeletion(keptValuesOnly: true, entityNumbers: entityNumbers, pk: pk, byKey: byKey) { t in
            guard let c = t.changes.first, !c.tombstoneValues.isEmpty else { return }
            try body(t, c)
        }
    }

    /// Every delete of the state's history (kept values or not), by entity, then key, then change.
    mutating func forEachDelete(entityNumbers: [Int]?, pk: Int64?, _ body: (HistoryTransaction, HistoryChange) throws -> Void) throws {
        try reader.forEachDeletion(keptValuesOnly: false, entityNumbers: entityNumbers, pk: pk, byKey: true) { t in
            guard let c = t.changes.first else { return }
            try body(t, c)
        }
    }

    /// Whether kept values can name one record: at least one is a value of a kind one record
    /// usually holds alone (text, an identifier, a date, bytes), not only flags, numbers or NULLs,
    /// which many records share and so would give a carved record a key by coincidence.
    static func identifies(_ kept: [(name: String, value: FieldValue)]) -> Bool {
        kept.contains { CarvedVersions.selectivityRank($0.value) <= 3 }
    }
}

/// A record of one entity: its `Z_ENT` and `Z_PK`.
struct RecordKey: Hashable, Comparable {
    let entity: Int
    let pk: Int64
    static func < (a: RecordKey, b: RecordKey) -> Bool { (a.entity, a.pk) < (b.entity, b.pk) }
}

/// Versions of deleted records that only persistent history holds: the entity and key a delete
/// names, with the values it kept (none, when the model preserves none), for records no committed
/// state, carved record or WAL commit gives back.
enum TombstoneVersions {
    /// Hands out, by entity then key, one version per deleted record and set of kept values
    /// whose key `isKnown` does not already stand for.
    ///
    /// - Parameter names: entity number → name and table (`#n` and no table when unnamed).
    static func forEach(_ deletes: inout HistoryDeletes, filter: RecordRecovery.Filter, names: [Int: (name: String, table: String)],
                        isKnown: (RecordKey) -> Bool, _ body: (RecordVersion) throws -> Void) throws {
        let numbers = filter.entity.map { _ in names.filter { filter.keeps(entity: $0.value.name) }.keys.sorted() }
        if let numbers, numbers.isEmpty { return }
        // Consecutive deletes of one key with the same kept values are one version.
        var pending: (key: RecordKey, fingerprint: String, version: RecordVersion)?
        func flush() throws {
            if let p = pending, filter.keeps(p.version) { try body(p.version) }
            pending = nil
        }
        try deletes.forEachDelete(entityNumbers: numbers, pk: filter.pk) { transaction, change in
            guard let number = change.entityNumber, let pk = change.pk, pk > 0 else { return }
            let key = RecordKey(entity: number, pk: pk)
            guard !isKnown(key) else { return }
            let values = change.tombstoneValues.map { RecordChange.Value(name: $0.name, value: $0.value) }
            let fingerprint = RecordRecovery.fingerprint(values)
            if let p = pending, p.key == key, p.fingerprint == fingerprint {
                if p.version.historyDeletes.count < HistoryDeletes.perRecordLimit { pending?.version.historyDeletes.append(transaction) }
                return
            }
            try flush()
            let name = names[number]?.name ?? change.entity
            var version = RecordVersion(entity: name, entityNumber: number, table: names[number]?.table ?? "", pk: pk, values: values,
                                        state: .deleted, sources: [], confidence: .tombstone)
            version.historyDeletes = [transaction]
            pending = (key, fingerprint, version)
        }
        try flush()
    }
}
