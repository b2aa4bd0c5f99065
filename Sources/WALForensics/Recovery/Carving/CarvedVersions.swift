import CoreDataStore
import Foundation
import SQLiteAccess
import StoreFormats

/// The records carved from a store family, decoded through the model and folded: the same entity,
/// `Z_PK` and values found in several places is one version with every place as a find. A
/// version the committed states also hold takes these finds; the rest are `carved` or
/// `uncommitted` versions of their own.
final class CarvedVersions {
    struct Group {
        let shape: Int
        let entity: Int
        var pk: Int64?
        let raw: [RecordValue]
        var finds: [RecordVersion.Find]
        var findSet: Set<RecordVersion.Find>
        var state: RecordVersion.State
        /// Columns read from overflow pages that no find proves (the intersection over its finds:
        /// a find whose chain is proven proves them).
        var overflowUncertain: Set<Int> = []
        var values: [RecordChange.Value] = []
        var fingerprint = ""
        var used = false
        /// History deletes of the record (by key; for a record whose key was lost, the one delete
        /// whose kept values named it).
        var historyDeletes: [HistoryTransaction] = []
    }

    struct RawKey: Hashable {
        let shape: Int
        let pk: Int64?
        let values: [RecordValue]

        /// Text and blobs hashed as bytes at once (the synthesized hash fed them in one byte at a
        /// time, a tenth of carving's time); equality stays the synthesized one.
        func hash(into hasher: inout Hasher) {
            hasher.combine(shape)
            hasher.combine(pk)
            hasher.combine(values.count)
            for value in values {
                switch value {
                case .null: hasher.combine(0 as UInt8)
                case .integer(let i): hasher.combine(1 as UInt8); hasher.combine(i)
                case .real(let d): hasher.combine(2 as UInt8); hasher.combine(d)
                case .text(let bytes): hasher.combine(3 as UInt8); hasher.combine(bytes.count); bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
                case .blob(let bytes): hasher.combine(4 as UInt8); hasher.combine(bytes.count); bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
                }
            }
        }
    }

    struct Key: Hashable {
        let entity: Int
        let pk: Int64
        let fingerprint: String
    }

    struct ValuesKey: Hashable {
        let entity: Int
        let fingerprint: String
    }

    private(set) var groups: [Group] = []
    private var byKey: [Key: Int] = [:]
    private var unknownPK: [ValuesKey: [Int]] = [:]
    let shapes: [CarvingShape]
    let names: [Int: (name: String, table: String)]
    /// Candidates turned away, by rule.
    private(set) var rejected: [String: Int] = [:]

    init(shapes: [CarvingShape], names: [Int: (name: String, table: String)]) {
        self.shapes = shapes
        self.names = names
    }

    /// Carves `evidence`, keeping what `filter` lets through (entity and `Z_PK`; states are applied
    /// when the versions are handed out), and decodes each distinct record once through `state`'s model.
    static func collect(_ evidence: WALEvidence, state: StateReader, entityTables: [(Int, String, String)],
                        filter: RecordRecovery.Filter) throws -> CarvedVersions {
        var names: [Int: (name: String, table: String)] = [:]
        for (number, name, table) in entityTables { names[number] = (name, table) }
        for mapping in state.map?.entities ?? [] {
            if let number = mapping.number, names[number] == nil { names[number] = (mapping.entity.name, mapping.table) }
        }
        let shapes = try CarvingShape.shapes(of: state, entityTables: entityTables)
        let carved = CarvedVersions(shapes: shapes, names: names)
        guard var carver = StoreCarver(evidence: evidence, shapes: shapes) else { return carved }
        var index: [RawKey: Int] = [:]
        carver.carve { hit in
            let shape = shapes[hit.record.shape]
            guard case .integer(let ent) = hit.record.values[shape.entIndex], let number = Int(exactly: ent) else { return }
            let name = names[number]?.name ?? "#\(number)"
            guard filter.keeps(entity: name), filter.pk.map({ $0 == hit.record.rowid }) ?? true else { return }
            // Z_OPT (Core Data's save counter) is not a value: copies differing only there are one version.
            var values = hit.record.values
            if let opt = shape.optIndex { values[opt] = .null }
            let key = RawKey(shape: hit.record.shape, pk: hit.record.rowid, values: values)
            if let i = index[key] {
                if carved.groups[i].findSet.insert(hit.find).inserted { carved.groups[i].finds.append(hit.find) }
                if hit.state == .uncommitted { carved.groups[i].state = .uncommitted }
                carved.groups[i].overflowUncertain.formIntersection(hit.record.uncertainColumns)
            } else {
                index[key] = carved.groups.count
                carved.groups.append(Group(shape: hit.record.shape, entity: number, pk: hit.record.rowid, raw: hit.record.values,
                                           finds: [hit.find], findSet: [hit.find], state: hit.state,
                                           overflowUncertain: Set(hit.record.uncertainColumns)))
            }
        }
        carved.rejected = carver.carver.rejected
        try carved.decode(state: state, encoding: evidence.header?.textEncoding ?? 1)
        try carved.takeKeysFromHistory(state)
        carved.fold()
        return carved
    }

    /// Lays the carved rows into scratch tables (same names and columns, no declared types, so
    /// values stay as stored) and reads them back through the model, as `rows` would show them.
    func decode(state: StateReader, encoding: UInt32) throws {
        guard !groups.isEmpty else { return }
        let scratch = try Connection.open(path: ":memory:", mode: .create, label: "carved records")
        let reader = StateReader(connection: scratch, like: state)
        for (s, shape) in shapes.enumerated() {
            // By entity, so that each entity's rows have consecutive scratch keys (read as a range).
            let members = groups.indices.filter { groups[$0].shape == s }.sorted { (groups[$0].entity, $0) < (groups[$1].entity, $1) }
            guard !members.isEmpty else { continue }
            let columns = shape.columns.enumerated().map { i, c in Identifier.quoted(c.name) + (i == shape.pkIndex ? " INTEGER PRIMARY KEY" : "") }
            try scratch.execute("CREATE TABLE \(Identifier.quoted(shape.table)) (\(columns.joined(separator: ", ")))")
            // One statement for every row, in one transaction.
            let insert = try scratch.prepare("INSERT INTO \(Identifier.quoted(shape.table)) VALUES ("
                + shape.columns.map { _ in "?" }.joined(separator: ", ") + ")")
            try scratch.execute("BEGIN")
            for (row, i) in members.enumerated() {
                // The scratch key is the row's place among the members, not its Z_PK (which may be unknown or repeated).
                let values = groups[i].raw.enumerated().map { c, v in c == shape.pkIndex ? .integer(Int64(row + 1)) : DatabaseValue(v, textEncoding: encoding) }
                try insert.bind(values)
                while try insert.step() != nil {}
            }
            try scratch.execute("COMMIT")
            let byEntity = Dictionary(grouping: members.indices) { groups[members[$0]].entity }
            for (number, rows) in byEntity {
                let group = WALDiff.Group(entity: names[number]?.name, entityNumber: number, table: shape.table, keyColumns: ["Z_PK"])
                for (key, values) in try reader.values(of: group, keys: rows.map { [.integer(Int64($0 + 1))] }) {
                    guard let id = key.first?.int64, let row = Int(exactly: id - 1), members.indices.contains(row) else { continue }
                    let i = members[row]
                    groups[i].values = values
                    groups[i].fingerprint = RecordRecovery.fingerprint(values)
                }
            }
        }
    }

    /// Groups whose decoded values are the same record fold; a record whose `Z_PK` was overwritten
    /// takes the key of the one carved record of its entity with the same values, when there is one.
    func fold() {
        var folded: [Group] = []
        var seen: [Key: Int] = [:]
        var unknown: [Group] = []
        for g in groups {
            guard let pk = g.pk else { unknown.append(g); continue }
            let key = Key(entity: g.entity, pk: pk, fingerprint: g.fingerprint)
            if let i = seen[key] { merge(g, into: &folded[i]) } else {
                seen[key] = folded.count
                folded.append(g)
            }
        }
        var pks: [ValuesKey: Set<Int64>] = [:]
        for (key, _) in seen { pks[ValuesKey(entity: key.entity, fingerprint: key.fingerprint), default: []].insert(key.pk) }
        var unknownAt: [ValuesKey: Int] = [:]
        for g in unknown {
            let vk = ValuesKey(entity: g.entity, fingerprint: g.fingerprint)
            if let candidates = pks[vk], candidates.count == 1, let pk = candidates.first,
               let i = seen[Key(entity: g.entity, pk: pk, fingerprint: g.fingerprint)] {
                merge(g, into: &folded[i])
            } else if let i = unknownAt[vk] {
                merge(g, into: &folded[i])
            } else {
                unknownAt[vk] = folded.count
                folded.append(g)
            }
        }
        groups = folded
        byKey = [:]
        unknownPK = [:]
        for (i, g) in groups.enumerated() {
            if let pk = g.pk { byKey[Key(entity: g.entity, pk: pk, fingerprint: g.fingerprint)] = i } else {
                unknownPK[ValuesKey(entity: g.entity, fingerprint: g.fingerprint), default: []].append(i)
            }
        }
    }

    /// A record whose `Z_PK` was lost takes the key of a deleted record when persistent history
    /// kept values on its delete and those values name it: every kept value equals the carved
    /// record's value of that property, at least one of them is a value one record usually holds
    /// alone (`HistoryDeletes.identifies`), and no other deleted record of its entity matches.
    /// Versions of one record share its kept values, so several carved records may take one key.
    func takeKeysFromHistory(_ state: StateReader) throws {
        let keyless = groups.indices.filter { groups[$0].pk == nil && !groups[$0].values.isEmpty }
        guard !keyless.isEmpty, var deletes = try HistoryDeletes(state), deletes.keepsValues else { return }
        // The keyless records by property name and the fingerprint of their value there, built
        // for the names kept values use (a few per entity).
        var byValue: [String: [String: [Int]]] = [:]
        func candidates(_ name: String, _ fingerprint: String) -> [Int] {
            if byValue[name] == nil {
                var index: [String: [Int]] = [:]
                for i in keyless {
                    guard let v = groups[i].values.first(where: { $0.name == name }) else { continue }
                    index[RecordRecovery.fingerprint([v]), default: []].append(i)
                }
                byValue[name] = index
            }
            return byValue[name]?[fingerprint] ?? []
        }
        var matches: [Int: [Int64: HistoryTransaction]] = [:]
        let entities = Set(keyless.map { groups[$0].entity }).sorted()
        try deletes.forEachTombstone(entityNumbers: entities, pk: nil, byKey: false) { transaction, change in
            guard let number = change.entityNumber, let pk = change.pk, pk > 0, HistoryDeletes.identifies(change.tombstoneValues) else { return }
            let kept = change.tombstoneValues.map { RecordChange.Value(name: $0.name, value: $0.value) }
            var found = Set(candidates(kept[0].name, RecordRecovery.fingerprint([kept[0]]))).filter { groups[$0].entity == number }
            for v in kept.dropFirst() where !found.isEmpty {
                found.formIntersection(candidates(v.name, RecordRecovery.fingerprint([v])))
            }
            // Two keys already make a record's key unknowable: no more are kept.
            for i in found where matches[i]?[pk] == nil && matches[i]?.count ?? 0 < 2 { matches[i, default: [:]][pk] = transaction }
        }
        for (i, byKey) in matches where byKey.count == 1 {
            let (pk, transaction) = byKey.first!
            groups[i].pk = pk
            groups[i].historyDeletes = [transaction]
        }
    }

    private func merge(_ g: Group, into target: inout Group) {
        for t in g.historyDeletes where !target.historyDeletes.contains(where: { $0.id == t.id }) { target.historyDeletes.append(t) }
        for f in g.finds where target.findSet.insert(f).inserted { target.finds.append(f) }
        if g.state == .uncommitted { target.state = .uncommitted }
        target.overflowUncertain.formIntersection(g.overflowUncertain)
    }

    /// Adds to a committed version the finds of the carved records with its entity, key and
    /// values, and of rebuilt records of its entity with its values whose key is unknown (the
    /// first such version takes them: versions come in key order).
    func attach(to version: inout RecordVersion) {
        guard !groups.isEmpty else { return }
        let fp = RecordRecovery.fingerprint(version.values)
        if let i = byKey[Key(entity: version.entityNumber, pk: version.pk, fingerprint: fp)], !groups[i].used {
            groups[i].used = true
            version.finds += groups[i].finds
            // A delete the version's own commit already names is not repeated.
            for t in groups[i].historyDeletes where !version.endingTransactions.contains(where: { $0.id == t.id }) { version.historyDeletes.append(t) }
        }
        for i in unknownPK[ValuesKey(entity: version.entityNumber, fingerprint: fp)] ?? [] where !groups[i].used {
            groups[i].used = true
            version.finds += groups[i].finds
        }
    }

    /// Which of an entity's rows could take carved records (`attach`): those with a key a carved
    /// record of the entity has, and, when records of the entity lost their key, those whose value
    /// at `position` is one such a record has (a record folds only into a version with all its
    /// values). `all`: every row could (a keyless record with no value to compare).
    struct FoldProbe {
        var pks: Set<Int64> = []
        var position: Int?
        var pieces: Set<String> = []
        var all = false
    }

    /// The probe for `entity`'s rows, comparing keyless records at whichever of the first
    /// `positions` values tells them apart best.
    func probe(entity: Int, positions: Int?) -> FoldProbe {
        var probe = FoldProbe()
        var keyless: [[RecordChange.Value]] = []
        for g in groups where g.entity == entity {
            if let pk = g.pk { probe.pks.insert(pk) } else { keyless.append(g.values) }
        }
        guard !keyless.isEmpty else { return probe }
        let usable = min(positions ?? 0, keyless.map(\.count).min() ?? 0)
        // The value with the most distinct pieces among the first records, then of the kind most
        // likely to tell the table's rows apart (a few keyless records are distinct in every value,
        // and a Boolean would then let a quarter of the rows through), then the shortest; any value
        // gives the same answer, only faster or slower.
        let sample = keyless.prefix(64)
        var best: (position: Int, count: Int, rank: Int, length: Int)?
        for position in 0 ..< usable {
            let pieces = Set(sample.map { RecordRecovery.fingerprint([$0[position]]) })
            let length = pieces.reduce(0) { $0 + $1.utf8.count }
            let rank = sample.lazy.map { Self.selectivityRank($0[position].value) }.min() ?? Int.max
            if best.map({ (-pieces.count, rank, length) < (-$0.count, $0.rank, $0.length) }) ?? true {
                best = (position, pieces.count, rank, length)
            }
        }
        guard let best else { probe.all = true; return probe }
        probe.position = best.position
        probe.pieces = Set(keyless.map { RecordRecovery.fingerprint([$0[best.position]]) })
        return probe
    }

    /// How likely a value of this kind is to be one row's alone (lower: more likely): identifiers
    /// and text before dates and numbers, relationships, Booleans and NULL last.
    static func selectivityRank(_ value: FieldValue) -> Int {
        switch value {
        case .uuid: return 0
        case .text, .decimal: return 1
        case .date: return 2
        case .binary, .archived, .composite: return 3
        case .real: return 4
        case .integer: return 5
        case .object: return 6
        case .bool: return 7
        case .null: return 8
        }
    }

    /// The keys of the carved records that have one, by entity number.
    var keys: [Int: Set<Int64>] {
        var out: [Int: Set<Int64>] = [:]
        for g in groups { if let pk = g.pk { out[g.entity, default: []].insert(pk) } }
        return out
    }

    /// Adds history deletes found by key to the records with that key.
    func addHistoryDeletes(_ deletes: [RecordKey: [HistoryTransaction]]) {
        guard !deletes.isEmpty else { return }
        for i in groups.indices {
            guard let pk = groups[i].pk, let found = deletes[RecordKey(entity: groups[i].entity, pk: pk)] else { continue }
            for t in found where !groups[i].historyDeletes.contains(where: { $0.id == t.id }) { groups[i].historyDeletes.append(t) }
        }
    }

    /// The carved records no committed version took, as versions of their own, by entity, then
    /// `Z_PK` (unknown keys last), then the order they were found in.
    func remaining() -> [RecordVersion] {
        let left = groups.filter { !$0.used }.sorted { a, b in
            (a.entity, a.pk ?? Int64.max) < (b.entity, b.pk ?? Int64.max)
        }
        return left.map { g in
            let shape = shapes[g.shape]
            var v = RecordVersion(entity: names[g.entity]?.name ?? "#\(g.entity)", entityNumber: g.entity, table: shape.table,
                                  pk: g.pk ?? 0, values: g.values, state: g.state, sources: [],
                                  confidence: g.finds.contains { $0.confidence == .whole } ? .whole : .headerRebuilt)
            v.finds = g.finds
            v.historyDeletes = g.historyDeletes
            if g.pk == nil { v.uncertainColumns = [shape.columns[shape.pkIndex].name] }
            v.uncertainColumns += g.overflowUncertain.sorted().map { shape.columns[$0].name }
            return v
        }
    }
}
