import CoreDataStore
import Foundation
import SQLiteAccess
import StoreFormats

/// Index remnants in the carved records: which indexes are read, the entries taken as the pages
/// are carved (those of records that are gone), and the partial versions they become.
extension CarvedVersions {
    /// Finds the indexes whose entries can name a record (`IndexShape`), with the properties each
    /// gives, and sets the carver to read them.
    func prepareIndexes(state: StateReader, encoding: UInt32, live: LiveKeys, carver: inout StoreCarver) throws {
        for var shape in try IndexShape.shapes(of: state, tableShapes: shapes) {
            shape.encoding = encoding
            // Values are named by property through the model, and by column where there is none
            // (a store without Core Data's metadata: its rows read back as their columns).
            var byColumn: [String: String] = [:]
            if let mapping = state.map?.entity(number: shape.entity) {
                for a in mapping.attributes { if let column = a.column { byColumn[column.uppercased()] = a.attribute.name } }
                for r in mapping.relationships { if let column = r.column { byColumn[column.uppercased()] = r.relationship.name } }
            } else {
                for column in shapes[shape.tableShape].columns { byColumn[column.name.uppercased()] = column.name }
            }
            let properties = Set(shape.columns.compactMap { byColumn[$0.name.uppercased()] })
            guard properties.count == shape.columns.count else { continue }
            columnsOfProperties[shape.entity] = Dictionary(byColumn.map { ($1, $0) }, uniquingKeysWith: { a, _ in a })
            indexes.append((shape, properties))
        }
        guard !indexes.isEmpty else { return }
        let shapes = indexes.map(\.shape)
        carver.indexCarver = IndexCarver(shapes: shapes, usableSize: carver.carver.usableSize, owners: IndexCarver.owners(state, shapes: shapes))
        let tables = shapes.map { self.shapes[$0.tableShape].table }
        carver.indexCarver?.isLive = { shape, pk in (try? live.contains(pk, table: tables[shape])) ?? false }
    }

    /// `values` as the version shows them: an index remnant's, only the properties its index holds.
    func indexed(_ values: [RecordChange.Value], of group: Group) -> [RecordChange.Value] {
        guard let index = group.index else { return values }
        return values.filter { indexes[index].properties.contains($0.name) }
    }

    /// An index remnant as a version: its indexed values, and what the delete of its key kept in
    /// history (`ZTOMBSTONE…`) besides; every other column is among `uncertainColumns` (not known).
    func indexVersion(_ g: Group, values: [RecordChange.Value]) -> RecordVersion {
        var kept = indexed(values, of: g)
        for t in g.historyDeletes {
            for c in t.changes where c.entityNumber == g.entity && c.pk == g.pk {
                for value in c.tombstoneValues where !value.name.hasPrefix("#") && !kept.contains(where: { $0.name == value.name }) {
                    kept.append(RecordChange.Value(name: value.name, value: value.value))
                }
            }
        }
        let shape = shapes[g.shape]
        var v = RecordVersion(entity: names[g.entity]?.name ?? "#\(g.entity)", entityNumber: g.entity, table: shape.table,
                              pk: g.pk ?? 0, values: kept, state: .carved, sources: [], confidence: .indexOnly)
        v.addFinds(g.finds)
        v.historyDeletes = g.historyDeletes
        let known = Set(kept.compactMap { columnsOfProperties[g.entity]?[$0.name]?.uppercased() })
        v.uncertainColumns = shape.columns.enumerated().filter { i, column in
            i != shape.pkIndex && i != shape.entIndex && i != shape.optIndex && !known.contains(column.name.uppercased())
        }.map(\.element.name)
        return v
    }

    /// Two index remnants of one record whose shared values agree, as one version (two indexes of
    /// the table, or one entry found in several places); nil when they are not one.
    static func merging(_ a: RecordVersion, _ b: RecordVersion) -> RecordVersion? {
        guard a.confidence == .indexOnly, b.confidence == .indexOnly, a.entityNumber == b.entityNumber, a.pk == b.pk else { return nil }
        var values = a.values
        for value in b.values {
            if let same = values.first(where: { $0.name == value.name }) {
                guard RecordRecovery.fingerprint([same]) == RecordRecovery.fingerprint([value]) else { return nil }
            } else {
                values.append(value)
            }
        }
        var v = RecordVersion(entity: a.entity, entityNumber: a.entityNumber, table: a.table, pk: a.pk, values: values,
                              state: a.state, sources: [], confidence: .indexOnly)
        v.finds = a.finds
        v.findsOmitted = a.findsOmitted
        v.addFinds(b.finds, omitted: b.findsOmitted)
        v.historyDeletes = a.historyDeletes + b.historyDeletes.filter { t in !a.historyDeletes.contains { $0.id == t.id } }
        v.uncertainColumns = a.uncertainColumns.filter { b.uncertainColumns.contains($0) }
        return v
    }
}

/// Takes the index entries as the carver reads them: an entry whose key is a row of the last
/// state is the live index, and is let go; the others are kept once per index, key and values
/// (later places are finds of the first), as rows of the scratch table of the index's table that
/// hold only the indexed columns, so they read back through the model as every carved record does.
struct IndexRemnantIntake {
    let carved: CarvedVersions
    let live: LiveKeys
    let filter: RecordRecovery.Filter
    private var seen: [CarvedVersions.RawKey: Int] = [:]
    private var inserts: [Int: Statement] = [:]

    init(carved: CarvedVersions, live: LiveKeys, filter: RecordRecovery.Filter) {
        self.carved = carved
        self.live = live
        self.filter = filter
    }

    mutating func take(_ hit: StoreCarver.IndexHit) throws {
        let index = carved.indexes[hit.entry.shape].shape
        let number = index.entity
        let table = carved.shapes[index.tableShape]
        guard filter.keeps(entity: carved.names[number]?.name ?? "#\(number)"), filter.pk.map({ $0 == hit.entry.rowid }) ?? true,
              try !live.contains(hit.entry.rowid, table: table.table) else { return }
        let key = CarvedVersions.RawKey(shape: hit.entry.shape, pk: hit.entry.rowid, digest: ValuesDigest(hit.entry.values))
        if let i = seen[key] {
            if carved.groups[i].findSet.insert(hit.find).inserted { carved.groups[i].finds.append(hit.find) }
            if !hit.entry.weak { carved.groups[i].weak = false }
            return
        }
        let scratchKey = Int64(carved.groups.count + 1)
        var row = [DatabaseValue](repeating: .null, count: table.columns.count)
        row[table.pkIndex] = .integer(scratchKey)
        row[table.entIndex] = .integer(Int64(number))
        for (i, column) in index.tableColumns.enumerated() { row[column] = DatabaseValue(hit.entry.values[i], textEncoding: carved.encoding) }
        let insert = try statement(for: index.tableShape)
        try insert.bind(row)
        while try insert.step() != nil {}
        seen[key] = carved.groups.count
        carved.groups.append(CarvedVersions.Group(shape: index.tableShape, entity: number, pk: hit.entry.rowid, scratchKey: scratchKey,
                                                  finds: [hit.find], findSet: [hit.find], state: .carved, index: hit.entry.shape,
                                                  weak: hit.entry.weak))
    }

    private mutating func statement(for shape: Int) throws -> Statement {
        if let s = inserts[shape] { return s }
        let table = carved.shapes[shape]
        let s = try carved.scratch.prepare("INSERT INTO \(Identifier.quoted(table.table)) VALUES (" + table.columns.map { _ in "?" }.joined(separator: ", ") + ")")
        inserts[shape] = s
        return s
    }
}

/// Whether a key is a row of the last state, asked of SQLite once per table and key: an index
/// entry of such a key is the live index (or an old entry of a record that lives on), not a remnant.
final class LiveKeys {
    let state: StateReader
    private var known: [String: [Int64: Bool]] = [:]

    init(_ state: StateReader) {
        self.state = state
    }

    func contains(_ pk: Int64, table: String) throws -> Bool {
        if let answer = known[table]?[pk] { return answer }
        let found = try !state.connection.rows("SELECT 1 FROM \(Identifier.quoted(table)) WHERE Z_PK = ?", [.integer(pk)]).isEmpty
        known[table, default: [:]][pk] = found
        return found
    }
}

extension CarvedVersions {
    /// A table record whose `Z_PK` was lost takes the key of the index remnants its values match:
    /// for every index of its entity with a remnant holding the record's values of the indexed
    /// properties, those remnants name one key, and they name the same one. The remnants are then
    /// that record's (listed with it, not apart: `forEachRemaining`).
    func takeKeysFromIndexes() throws {
        guard !indexes.isEmpty else { return }
        // index → digest of the indexed values → the keys of its remnants holding them.
        var keys: [Int: [ValuesDigest: Set<Int64>]] = [:]
        for g in groups { if let index = g.index, let pk = g.pk { keys[index, default: [:]][g.digest, default: []].insert(pk) } }
        let indexed = Set(indexes.map(\.shape.entity))
        let keyless = groups.indices.filter { groups[$0].pk == nil && groups[$0].index == nil && indexed.contains(groups[$0].entity) }
        guard !keys.isEmpty, !keyless.isEmpty else { return }
        let order = keyless.sorted { (groups[$0].shape, groups[$0].entity, $0) < (groups[$1].shape, groups[$1].entity, $1) }
        var named: [Int: Int64] = [:]
        try forEachDecoded(order) { i, values in
            guard let values else { return }
            var found: Set<Int64>?
            for (n, index) in indexes.enumerated() where index.shape.entity == groups[i].entity {
                let digest = ValuesDigest(RecordRecovery.fingerprint(values.filter { index.properties.contains($0.name) }))
                guard let pks = keys[n]?[digest] else { continue }
                found = found.map { $0.union(pks) } ?? pks
            }
            if let found, found.count == 1 { named[i] = found.first }
        }
        for (i, pk) in named { groups[i].pk = pk }
    }
}
