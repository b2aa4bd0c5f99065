import CoreDataStore
import Foundation
import SQLiteAccess
import StoreFormats

/// The records carved from a store family, decoded through the model and folded: the same entity,
/// `Z_PK` and values found in several places is one version with every place as a find. A
/// version the committed states also hold takes these finds; the rest are `carved` or
/// `uncommitted` versions of their own.
///
/// The records' values live in a scratch SQLite file in the working copy's folder, written as each
/// new record is carved and read back through the model when they are needed, a few hundred at a
/// time: what stays in memory per distinct record is its key, the digest of its values, its finds
/// and state (a few hundred bytes), whatever its size, so a store full of large deleted records
/// does not fill memory with them.
final class CarvedVersions {
    struct Group {
        let shape: Int
        let entity: Int
        var pk: Int64?
        /// Its row in the scratch table of its shape.
        let scratchKey: Int64
        var finds: [RecordVersion.Find]
        var findSet: Set<RecordVersion.Find>
        var state: RecordVersion.State
        /// Columns read from overflow pages that no find proves (the intersection over its finds:
        /// a find whose chain is proven proves them).
        var overflowUncertain: Set<Int> = []
        /// The decoded values' digest (`ValuesDigest`), set by `decode`.
        var digest = ValuesDigest.none
        var used = false
        /// History deletes of the record (by key; for a record whose key was lost, the one delete
        /// whose kept values named it).
        var historyDeletes: [HistoryTransaction] = []
        /// For an index remnant: the index (in `indexes`) whose entry it is.
        var index: Int?
        /// An index remnant every copy of which is a weak reading (`IndexEntry.weak`).
        var weak = false
    }

    /// A carved record before decoding: its shape, rowid and the digest of its stored values.
    struct RawKey: Hashable {
        let shape: Int
        let pk: Int64?
        let digest: ValuesDigest
    }

    struct Key: Hashable {
        let entity: Int
        let pk: Int64
        let digest: ValuesDigest
        /// Index remnants fold among themselves only (their values are a part of a record's).
        var partial = false
    }

    struct ValuesKey: Hashable {
        let entity: Int
        let digest: ValuesDigest
    }

    /// The distinct records carved (and index remnants, `IndexRemnantIntake`), in the order found.
    var groups: [Group] = []
    private var byKey: [Key: Int] = [:]
    private var unknownPK: [ValuesKey: [Int]] = [:]
    let shapes: [CarvingShape]
    /// The indexes read for remnants, and the properties each one's entries give.
    var indexes: [(shape: IndexShape, properties: Set<String>)] = []
    /// The deletes carved from `ACHANGE` rows history no longer holds (`HistoryRemnants`).
    var historyRemnants: HistoryRemnants?
    /// Each entity's columns by property name (for the columns an index remnant lacks).
    var columnsOfProperties: [Int: [String: String]] = [:]
    let names: [Int: (name: String, table: String)]
    /// Candidates turned away, by rule.
    private(set) var rejected: [String: Int] = [:]
    /// The carved rows, one table per shape named as the store's (so they read back through the
    /// model as the store's own rows do), keyed by `scratchKey`.
    let scratch: Connection
    /// `scratch` read through the last state's model.
    let reader: StateReader
    let encoding: UInt32
    private let scratchPath: String?
    /// Each entity's fold probe, drawn up while `decode` reads the records (`probe`).
    private var drafts: [Int: ProbeDraft] = [:]

    /// - Parameter folder: the working copy's private folder, where the scratch file is made (and
    ///   removed when this is released; SQLite refuses to write a database file unlinked while
    ///   open); nil (evidence held in memory): SQLite's own private temporary file. A failure there
    ///   is ours, never the evidence's (`WorkingFolderFailure`).
    init(shapes: [CarvingShape], names: [Int: (name: String, table: String)], state: StateReader, encoding: UInt32, folder: URL?) throws {
        self.shapes = shapes
        self.names = names
        self.encoding = encoding
        if let folder {
            let path = folder.appendingPathComponent("carved-records-\(UUID().uuidString).sqlite").path
            scratchPath = path
            scratch = try Connection.open(path: path, mode: .create, label: "carved records")
        } else {
            scratchPath = nil
            scratch = try Connection.open(path: "", mode: .create, label: "carved records")
        }
        try scratch.execute("PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA cache_size = -2048; PRAGMA temp_store = FILE")
        reader = StateReader(connection: scratch, like: state)
        for shape in shapes {
            let columns = shape.columns.enumerated().map { i, c in Identifier.quoted(c.name) + (i == shape.pkIndex ? " INTEGER PRIMARY KEY" : "") }
            try scratch.execute("CREATE TABLE IF NOT EXISTS \(Identifier.quoted(shape.table)) (\(columns.joined(separator: ", ")))")
        }
    }

    deinit {
        if let scratchPath { unlink(scratchPath) }
    }

    /// Carves `evidence`, keeping what `filter` lets through (entity and `Z_PK`; states are applied
    /// when the versions are handed out), and decodes each distinct record once through `state`'s model.
    ///
    /// - Parameter names: entity number → name and table (`RecordRecovery.entityNames`).
    static func collect(_ evidence: WALEvidence, state: StateReader, entityTables: [(Int, String, String)],
                        names: [Int: (name: String, table: String)], filter: RecordRecovery.Filter) throws -> CarvedVersions {
        var shapes = try CarvingShape.shapes(of: state, entityTables: entityTables)
        // History's own rows are carved too, for the deletes pruning freed (last, so no table's index moves).
        let changeShape = try CarvingShape.changeShape(of: state)
        if let changeShape { shapes.append(changeShape) }
        let encoding = evidence.header?.textEncoding ?? 1
        let carved = try CarvedVersions(shapes: shapes, names: names, state: state, encoding: encoding, folder: evidence.workingCopy?.privateFolder())
        guard var carver = StoreCarver(evidence: evidence, shapes: shapes) else { return carved }
        let changes = changeShape.map { _ in shapes.count - 1 }
        if let changeShape { carved.historyRemnants = HistoryRemnants(state: state, shape: changeShape, names: names) }
        let live = LiveKeys(state)
        try carved.prepareIndexes(state: state, encoding: encoding, live: live, carver: &carver)
        var remnants = IndexRemnantIntake(carved: carved, live: live, filter: filter)
        var index: [RawKey: Int] = [:]
        // One statement per shape for every new record, in one transaction; the carver's callback
        // cannot throw, so the first failure stops the writing and is thrown after it.
        let inserts = try shapes.map { shape in
            try carved.scratch.prepare("INSERT INTO \(Identifier.quoted(shape.table)) VALUES (" + shape.columns.map { _ in "?" }.joined(separator: ", ") + ")")
        }
        var failure: Error?
        try carved.scratch.execute("BEGIN")
        carver.carve { hit in
            guard failure == nil else { return }
            if hit.record.shape == changes {
                do { try carved.historyRemnants?.take(hit, encoding: encoding) } catch { failure = error }
                return
            }
            let shape = shapes[hit.record.shape]
            guard case .integer(let ent) = hit.record.values[shape.entIndex], let number = Int(exactly: ent) else { return }
            let name = names[number]?.name ?? "#\(number)"
            guard filter.keeps(entity: name), filter.pk.map({ $0 == hit.record.rowid }) ?? true else { return }
            // Z_OPT (Core Data's save counter) is not a value: copies differing only there are one version.
            var values = hit.record.values
            if let opt = shape.optIndex { values[opt] = .null }
            let key = RawKey(shape: hit.record.shape, pk: hit.record.rowid, digest: ValuesDigest(values))
            if let i = index[key] {
                if carved.groups[i].findSet.insert(hit.find).inserted { carved.groups[i].finds.append(hit.find) }
                if hit.state == .uncommitted { carved.groups[i].state = .uncommitted }
                carved.groups[i].overflowUncertain.formIntersection(hit.record.uncertainColumns)
                return
            }
            let scratchKey = Int64(carved.groups.count + 1)
            do {
                // The scratch key is the row's own, not its Z_PK (which may be unknown or repeated).
                try inserts[hit.record.shape].bind(values.enumerated().map { c, v in
                    c == shape.pkIndex ? .integer(scratchKey) : DatabaseValue(v, textEncoding: encoding)
                })
                while try inserts[hit.record.shape].step() != nil {}
            } catch {
                failure = error
                return
            }
            index[key] = carved.groups.count
            carved.groups.append(Group(shape: hit.record.shape, entity: number, pk: hit.record.rowid, scratchKey: scratchKey,
                                       finds: [hit.find], findSet: [hit.find], state: hit.state,
                                       overflowUncertain: Set(hit.record.uncertainColumns)))
        } index: { hit in
            guard failure == nil else { return }
            do { try remnants.take(hit) } catch { failure = error }
        }
        if let failure { throw failure }
        try carved.scratch.execute("COMMIT")
        carved.rejected = carver.carver.rejected.merging(carver.indexCarver?.rejected ?? [:], uniquingKeysWith: +)
        try carved.decode(last: state)
        // A history that cannot be read gives no keys (the records keep theirs unknown).
        _ = try HistoryDeletes.unlessUnreadable { try carved.takeKeysFromHistory(state) }
        try carved.takeKeysFromIndexes()
        carved.fold()
        return carved
    }

    /// The decoded values of these groups (indices), read back from the scratch tables through the
    /// model as `rows` would show them, a few hundred at a time, in the order given.
    /// A member whose row cannot be read through the model gets nil.
    func forEachDecoded(_ members: [Int], _ body: (Int, [RecordChange.Value]?) throws -> Void) throws {
        var start = 0
        while start < members.count {
            // One batch: consecutive members of one shape and entity (one reader).
            let first = groups[members[start]]
            var end = start + 1
            while end < members.count, end - start < 500, groups[members[end]].shape == first.shape, groups[members[end]].entity == first.entity { end += 1 }
            let batch = Array(members[start ..< end])
            let group = WALDiff.Group(entity: names[first.entity]?.name, entityNumber: first.entity, table: shapes[first.shape].table, keyColumns: ["Z_PK"])
            var byKey: [Int64: [RecordChange.Value]] = [:]
            for (key, values) in try reader.values(of: group, keys: batch.map { [.integer(groups[$0].scratchKey)] }) {
                if let id = key.first?.int64 { byKey[id] = values }
            }
            for i in batch { try body(i, byKey[groups[i].scratchKey]) }
            start = end
        }
    }

    /// Reads every carved row back through the model once, for the digest of its values, and
    /// draws up each entity's fold probe from its keyless records on the way (`ProbeDraft`), so
    /// that no other pass reads them for it.
    ///
    /// - Parameter last: the last state, whose model says how many values a row of each entity shows.
    func decode(last: StateReader) throws {
        guard !groups.isEmpty else { return }
        // By shape and entity, so that one reader serves a batch.
        let order = groups.indices.sorted { (groups[$0].shape, groups[$0].entity, $0) < (groups[$1].shape, groups[$1].entity, $1) }
        try forEachDecoded(order) { i, values in
            if let values { groups[i].digest = ValuesDigest(RecordRecovery.fingerprint(indexed(values, of: groups[i]))) }
            guard groups[i].pk == nil else { return }
            let entity = groups[i].entity
            if drafts[entity] == nil {
                let group = WALDiff.Group(entity: names[entity]?.name, entityNumber: entity, table: shapes[groups[i].shape].table, keyColumns: ["Z_PK"])
                drafts[entity] = ProbeDraft(positions: last.decodedFieldCount(of: group))
            }
            drafts[entity]!.add(values ?? [])
        }
        for entity in drafts.keys { drafts[entity]!.finish() }
    }

    /// One entity's fold probe in the making, fed its keyless records in the order they were
    /// carved: the first 64 are a sample that chooses the value to compare (as `probe` says);
    /// every later record adds its value there; a record with no value there makes every row a
    /// candidate (`all`), which is always right, only slower.
    struct ProbeDraft {
        let positions: Int?
        var sample: [[RecordChange.Value]] = []
        var position: Int?
        var decided = false
        var pieces: Set<ValuesDigest> = []
        /// `FoldProbe.quick` of the pieces.
        var quick: Set<Int> = []
        var all = false

        init(positions: Int?) { self.positions = positions }

        mutating func insert(_ piece: RecordChange.Value) {
            pieces.insert(ValuesDigest(RecordRecovery.fingerprint([piece])))
            quick.insert(FoldProbe.quickHash(piece))
        }

        mutating func add(_ values: [RecordChange.Value]) {
            guard decided else {
                sample.append(values)
                if sample.count == 64 { finish() }
                return
            }
            guard !all else { return }
            if let position, position < values.count {
                insert(values[position])
            } else {
                all = true
            }
        }

        /// Chooses the value from the sample: the one with the most distinct pieces among the
        /// first records, then of the kind most likely to tell the table's rows apart (a few
        /// keyless records are distinct in every value, and a Boolean would then let a quarter of
        /// the rows through), then the shortest; any value gives the same answer, only faster or slower.
        mutating func finish() {
            guard !decided else { return }
            decided = true
            let usable = min(positions ?? 0, sample.map(\.count).min() ?? 0)
            var best: (position: Int, count: Int, rank: Int, length: Int)?
            for position in 0 ..< usable {
                let pieces = Set(sample.map { RecordRecovery.fingerprint([$0[position]]) })
                let length = pieces.reduce(0) { $0 + $1.utf8.count }
                let rank = sample.lazy.map { CarvedVersions.selectivityRank($0[position].value) }.min() ?? Int.max
                if best.map({ (-pieces.count, rank, length) < (-$0.count, $0.rank, $0.length) }) ?? true {
                    best = (position, pieces.count, rank, length)
                }
            }
            guard let best else { all = true; sample = []; return }
            position = best.position
            for values in sample { insert(values[best.position]) }
            sample = []
        }
    }

    /// Groups whose decoded values are the same record fold; a record whose `Z_PK` was overwritten
    /// takes the key of the one carved record of its entity with the same values, when there is one.
    func fold() {
        // In place: a group merged into another is marked gone and the rest closed up, so the
        // groups are never held twice (a copy of them was the peak of carving's memory).
        var gone = [Bool](repeating: false, count: groups.count)
        var seen: [Key: Int] = [:]
        for i in groups.indices {
            guard let pk = groups[i].pk else { continue }
            let key = Key(entity: groups[i].entity, pk: pk, digest: groups[i].digest, partial: groups[i].index != nil)
            if let first = seen[key] {
                merge(groups[i], into: &groups[first])
                gone[i] = true
            } else {
                seen[key] = i
            }
        }
        var pks: [ValuesKey: Set<Int64>] = [:]
        for (key, _) in seen where !key.partial { pks[ValuesKey(entity: key.entity, digest: key.digest), default: []].insert(key.pk) }
        var unknownAt: [ValuesKey: Int] = [:]
        for i in groups.indices where groups[i].pk == nil {
            let vk = ValuesKey(entity: groups[i].entity, digest: groups[i].digest)
            if let candidates = pks[vk], candidates.count == 1, let pk = candidates.first,
               let target = seen[Key(entity: groups[i].entity, pk: pk, digest: groups[i].digest)] {
                merge(groups[i], into: &groups[target])
                gone[i] = true
            } else if let target = unknownAt[vk] {
                merge(groups[i], into: &groups[target])
                gone[i] = true
            } else {
                unknownAt[vk] = i
            }
        }
        var write = 0
        for read in groups.indices where !gone[read] {
            if write != read { groups[write] = groups[read] }
            write += 1
        }
        groups.removeLast(groups.count - write)
        byKey = [:]
        unknownPK = [:]
        for (i, g) in groups.enumerated() where g.index == nil {
            if let pk = g.pk { byKey[Key(entity: g.entity, pk: pk, digest: g.digest)] = i } else {
                unknownPK[ValuesKey(entity: g.entity, digest: g.digest), default: []].append(i)
            }
        }
    }

    /// A record whose `Z_PK` was lost takes the key of a deleted record when persistent history
    /// kept values on its delete and those values name it: every kept value equals the carved
    /// record's value of that property, at least one of them is a value one record usually holds
    /// alone (`HistoryDeletes.identifies`), and no other deleted record of its entity matches.
    /// Versions of one record share its kept values, so several carved records may take one key.
    func takeKeysFromHistory(_ state: StateReader) throws {
        let keyless = groups.indices.filter { groups[$0].pk == nil && groups[$0].digest != .none }
        guard !keyless.isEmpty, var deletes = try HistoryDeletes(state), deletes.keepsValues else { return }
        // The keyless records by property name and the digest of their value there, for the names
        // kept values use (read back once, for those names only).
        var kept: [Int: Set<String>] = [:]
        if let model = state.map?.model {
            for number in Set(keyless.map { groups[$0].entity }) {
                if let name = names[number]?.name { kept[number] = Set(model.tombstoneAttributes(entity: name).map(\.name)) }
            }
        }
        var byValue: [String: [ValuesDigest: [Int]]] = [:]
        let order = keyless.sorted { (groups[$0].shape, groups[$0].entity, $0) < (groups[$1].shape, groups[$1].entity, $1) }
        try forEachDecoded(order.filter { !(kept[groups[$0].entity] ?? []).isEmpty }) { i, values in
            for v in values ?? [] where kept[groups[i].entity]?.contains(v.name) == true {
                byValue[v.name, default: [:]][ValuesDigest(RecordRecovery.fingerprint([v])), default: []].append(i)
            }
        }
        guard !byValue.isEmpty else { return }
        var matches: [Int: [Int64: HistoryTransaction]] = [:]
        let entities = Set(keyless.map { groups[$0].entity }).sorted()
        try deletes.forEachTombstone(entityNumbers: entities, pk: nil, byKey: false) { transaction, change in
            guard let number = change.entityNumber, let pk = change.pk, pk > 0, HistoryDeletes.identifies(change.tombstoneValues) else { return }
            let values = change.tombstoneValues.map { RecordChange.Value(name: $0.name, value: $0.value) }
            func candidates(_ v: RecordChange.Value) -> [Int] { byValue[v.name]?[ValuesDigest(RecordRecovery.fingerprint([v]))] ?? [] }
            var found = Set(candidates(values[0])).filter { groups[$0].entity == number }
            for v in values.dropFirst() where !found.isEmpty { found.formIntersection(candidates(v)) }
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
        let digest = version.valuesDigest ?? ValuesDigest(RecordRecovery.fingerprint(version.values))
        if let i = byKey[Key(entity: version.entityNumber, pk: version.pk, digest: digest)], !groups[i].used {
            groups[i].used = true
            version.addFinds(groups[i].finds)
            // A delete the version's own commit already names is not repeated.
            for t in groups[i].historyDeletes where !version.endingTransactions.contains(where: { $0.id == t.id }) { version.historyDeletes.append(t) }
        }
        for i in unknownPK[ValuesKey(entity: version.entityNumber, digest: digest)] ?? [] where !groups[i].used {
            groups[i].used = true
            version.addFinds(groups[i].finds)
        }
    }

    /// Which of an entity's rows could take carved records (`attach`): those with a key a carved
    /// record of the entity has, and, when records of the entity lost their key, those whose value
    /// at `position` is one such a record has (a record folds only into a version with all its
    /// values; compared by digest). `all`: every row could (a keyless record with no value to compare).
    struct FoldProbe {
        var pks: Set<Int64> = []
        var position: Int?
        var pieces: Set<ValuesDigest> = []
        /// A cheap hash of each piece (`quickHash`): a row whose piece is not among them is not
        /// among `pieces` either, and is let go without its fingerprint or SHA-256 (most rows).
        var quick: Set<Int> = []
        var all = false

        /// Whether a row's piece is one a keyless record has (its fingerprint's digest among `pieces`).
        func holds(_ piece: RecordChange.Value) -> Bool {
            quick.contains(Self.quickHash(piece)) && pieces.contains(ValuesDigest(RecordRecovery.fingerprint([piece])))
        }

        /// The piece hashed by the process's own hasher, without its fingerprint: equal
        /// fingerprints need the same name and the same value case with byte-equal contents, and
        /// those hash alike here (the rare tree-shaped values hash their fingerprint).
        static func quickHash(_ piece: RecordChange.Value) -> Int {
            var hasher = Hasher()
            hasher.combine(piece.name)
            switch piece.value {
            case .null: hasher.combine(0)
            case .integer(let i): hasher.combine(1); hasher.combine(i)
            case .real(let d): hasher.combine(2); hasher.combine(d.bitPattern)
            case .bool(let b): hasher.combine(3); hasher.combine(b)
            case .text(let t): hasher.combine(4); hasher.combine(t)
            case .date(let iso, let seconds): hasher.combine(5); hasher.combine(seconds.bitPattern); hasher.combine(iso)
            case .uuid(let u): hasher.combine(6); hasher.combine(u)
            case .decimal(let d): hasher.combine(7); hasher.combine(d)
            case .object(let entity, let pk): hasher.combine(8); hasher.combine(pk); hasher.combine(entity)
            case .binary, .archived, .composite, .longText: hasher.combine(9); hasher.combine(RecordRecovery.fingerprint([piece]))
            }
            return hasher.finalize()
        }
    }

    /// The probe for `entity`'s rows, comparing keyless records at whichever of the first
    /// `positions` values tells them apart best (`ProbeDraft`, drawn up by `decode`).
    func probe(entity: Int, positions: Int?) throws -> FoldProbe {
        var probe = FoldProbe()
        for g in groups where g.entity == entity { if let pk = g.pk { probe.pks.insert(pk) } }
        guard var draft = drafts[entity] else { return probe }
        if draft.positions != positions {
            // Asked for another model's rows than `decode` assumed: drawn up again for them.
            draft = ProbeDraft(positions: positions)
            try forEachDecoded(groups.indices.filter { groups[$0].entity == entity && groups[$0].pk == nil }) { _, values in draft.add(values ?? []) }
            draft.finish()
        }
        if draft.all { probe.all = true; return probe }
        probe.position = draft.position
        probe.pieces = draft.pieces
        probe.quick = draft.quick
        return probe
    }

    /// How likely a value of this kind is to be one row's alone (lower: more likely): identifiers
    /// and text before dates and numbers, relationships, Booleans and NULL last.
    static func selectivityRank(_ value: FieldValue) -> Int {
        switch value {
        case .uuid: return 0
        case .text, .decimal, .longText: return 1
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
    /// `Z_PK` (unknown keys last), then the order they were found in; their values read back a
    /// few hundred at a time. An index remnant stands for a record only where nothing else does:
    /// one whose key a carved record has, or `isKnown` says a committed version has, is left out;
    /// remnants of one key whose values agree are one version.
    func forEachRemaining(isKnown: (RecordKey) -> Bool = { _ in false }, _ body: (RecordVersion) throws -> Void) throws {
        var whole: Set<RecordKey> = []
        for g in groups where g.index == nil { if let pk = g.pk { whole.insert(RecordKey(entity: g.entity, pk: pk)) } }
        let left = groups.indices.filter { i in
            let g = groups[i]
            guard !g.used else { return false }
            guard g.index != nil, let pk = g.pk else { return true }
            let key = RecordKey(entity: g.entity, pk: pk)
            // A weak reading stands alone only where history deleted that very key.
            return !whole.contains(key) && !isKnown(key) && (!g.weak || !g.historyDeletes.isEmpty)
        }.sorted { a, b in
            (groups[a].entity, groups[a].pk ?? Int64.max, groups[a].index == nil ? 0 : 1, a)
                < (groups[b].entity, groups[b].pk ?? Int64.max, groups[b].index == nil ? 0 : 1, b)
        }
        var pending: RecordVersion?
        try forEachDecoded(left) { i, values in
            let g = groups[i]
            guard g.index == nil else {
                let v = indexVersion(g, values: values ?? [])
                if let p = pending, let merged = Self.merging(p, v) {
                    pending = merged
                } else {
                    if let p = pending { try body(p) }
                    pending = v
                }
                return
            }
            if let p = pending { try body(p); pending = nil }
            let shape = shapes[g.shape]
            var v = RecordVersion(entity: names[g.entity]?.name ?? "#\(g.entity)", entityNumber: g.entity, table: shape.table,
                                  pk: g.pk ?? 0, values: values ?? [], state: g.state, sources: [],
                                  confidence: g.finds.contains { $0.confidence == .whole } ? .whole : .headerRebuilt)
            v.addFinds(g.finds)
            v.historyDeletes = g.historyDeletes
            if g.pk == nil { v.uncertainColumns = [shape.columns[shape.pkIndex].name] }
            v.uncertainColumns += g.overflowUncertain.sorted().map { shape.columns[$0].name }
            try body(v)
        }
        if let p = pending { try body(p) }
    }
}
