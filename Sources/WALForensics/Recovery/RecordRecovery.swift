import CoreDataStore
import Foundation
import SQLiteAccess
import StoreFormats

/// Every version of every record the WAL proves: the main file is commit 0, each valid commit a
/// later state, and each record's values at each of them are one version (identical values folded
/// into one, with every run of commits they were seen in).
///
/// Built on `RecordDiff.forEachCommit`: only two states are open at a time, and only records some
/// commit touched are tracked (their key, and per version its digest and where its values are in
/// a scratch file: `VersionValues`); records no commit touched are read from the last state at the
/// end and handed out one at a time.
public enum RecordRecovery {
    /// Which versions to hand out. Nil members keep everything.
    public struct Filter: Sendable {
        public var entity: String?
        public var pk: Int64?
        public var states: Set<RecordVersion.State>?

        public init(entity: String? = nil, pk: Int64? = nil, states: Set<RecordVersion.State>? = nil) {
            self.entity = entity
            self.pk = pk
            self.states = states
        }

        func keeps(entity name: String) -> Bool {
            guard let entity else { return true }
            return name == entity || name.lowercased() == entity.lowercased()
        }

        func keeps(_ version: RecordVersion) -> Bool {
            keeps(entity: version.entity) && (pk.map { $0 == version.pk } ?? true) && (states.map { $0.contains(version.state) } ?? true)
        }
    }

    /// Hands every version to `body`, by entity number, then primary key, then first commit seen.
    ///
    /// With `carve`, the records carved from free space, freelist pages, frames after the last
    /// commit, older WAL generations and a `-journal` join them: a carved copy of a version the
    /// commits hold is a find of that version; the others (`carved`, `uncommitted`) follow the
    /// committed versions, in the same key order.
    /// - Returns: how many carving candidates each rule turned away (docs/recover.md), by rule;
    ///   empty without carving.
    @discardableResult
    public static func forEachVersion(_ evidence: WALEvidence, filter: Filter = Filter(), carve: Bool = false,
                                      decoder: ValueDecoder = ValueDecoder(),
                                      _ body: (RecordVersion) throws -> Void) throws -> [String: Int] {
        try forEachVersion(evidence, filter: filter, carve: carve, decoder: decoder, carvingBeside: nil, body)
    }

    /// - Parameter carvingBeside: carve on a second thread while the commits are read (nil: where
    ///   the evidence's images are files, so the last state held open meanwhile costs disk, not
    ///   memory). The tests compare both ways.
    @discardableResult
    static func forEachVersion(_ evidence: WALEvidence, filter: Filter, carve: Bool, decoder: ValueDecoder,
                               carvingBeside: Bool?, _ body: (RecordVersion) throws -> Void) throws -> [String: Int] {
        do {
            // Carving needs every committed version, whatever the state filter, to fold into.
            var committedFilter = filter
            if carve { committedFilter.states = nil }
            var history = Tracker(evidence: evidence)
            // Carving reads the last state and the evidence's bytes, nothing the commits hold.
            var early: (last: StateReader, entityTables: [(Int, String, String)], names: [Int: (name: String, table: String)], carving: BackgroundWork<Result<CarvedVersions, any Error>>)?
            // Where the last state cannot be read yet, it is left to the sequence (below), whose
            // errors then come in the order they always did.
            if carve, carvingBeside ?? (evidence.imageFolder != nil),
               let last = try? StateReader(evidence, commit: evidence.commitCount, option: "--to", decoder: decoder),
               let entityTables = try? Tracker.entityTables(last) {
                // Open beside the commits' two states: a smaller page cache keeps the three of them
                // within what the two were (carving reads it little; 1.5 MB off the bench's peak).
                try? last.connection.execute("PRAGMA cache_size = -512")
                let names = entityNames(last, entityTables: entityTables)
                early = (last, entityTables, names, BackgroundWork(decodingAsCaller: "storelens.recover-carving") {
                    Result { try CarvedVersions.collect(evidence, state: last, entityTables: entityTables, names: names, filter: filter) }
                })
            }
            // A failed commit must not leave the thread carving into the working folder.
            defer { _ = early?.carving.result() }
            try RecordDiff.forEachCommitStates(evidence, decoder: decoder, entityRecordsOnly: true) { commit, diff, earlier, later in
                try history.apply(commit: commit, diff: diff, earlier: earlier, later: later, filter: committedFilter)
            }
            // The last state is the carving thread's until it is done.
            let carvedBeside = early.map { $0.carving.result() }
            let last = try early?.last ?? StateReader(evidence, commit: evidence.commitCount, option: "--to", decoder: decoder)
            let entityTables = try early?.entityTables ?? Tracker.entityTables(last)
            let names = early?.names ?? entityNames(last, entityTables: entityTables)
            var deletes = try HistoryDeletes.unlessUnreadable { try HistoryDeletes(last) } ?? nil
            let carved = carve ? try carvedBeside?.get() ?? CarvedVersions.collect(evidence, state: last, entityTables: entityTables, names: names, filter: filter) : nil
            let asked = history.deletedWithoutTransaction.merging(carved?.keys ?? [:]) { $0.union($1) }
            var found = deletes == nil ? nil : try HistoryDeletes.unlessUnreadable({ try deletes!.deletes(of: asked) })
            // Deletes carved from history's freed rows name records as the table's rows do.
            for (key, transactions) in carved?.historyRemnants?.deletes(of: asked) ?? [:] {
                found = found ?? [:]
                for t in transactions where found![key, default: []].count < HistoryDeletes.perRecordLimit { found![key, default: []].append(t) }
            }
            if var found {
                // A record whose key is live again is not the one the delete removed.
                for key in try liveKeys(Set(found.keys), last: last, names: names) { found[key] = nil }
                history.historyDeletes = found
                carved?.addHistoryDeletes(found)
            }
            guard let carved else {
                try history.finish(last: last, filter: filter, body)
                PointInTime.discardImage(evidence, commit: evidence.commitCount)
                try emitTombstones(deletes, filter: filter, names: names, history: history, carvedKeys: [:], last: last, body)
                return [:]
            }
            // Live rows no commit touched are read only to take carved finds when they are not listed.
            let listsLive = filter.states.map { $0.contains(.live) } ?? true
            try history.finish(last: last, filter: committedFilter, foldingOnly: listsLive ? nil : carved) { version in
                var v = version
                carved.attach(to: &v)
                if filter.keeps(v) { try body(v) }
            }
            PointInTime.discardImage(evidence, commit: evidence.commitCount)
            try carved.forEachRemaining(isKnown: { history.records[$0] != nil }) { v in if filter.keeps(v) { try body(v) } }
            let carvedKeys = carved.keys
            let listed = try emitTombstones(deletes, filter: filter, names: names, history: history, carvedKeys: carvedKeys, last: last, body)
            try carved.historyRemnants?.forEachVersion(filter: filter, isKnown: { key in
                history.records[key] != nil || carvedKeys[key.entity]?.contains(key.pk) == true || listed.contains(key)
            }, body)
            var turnedAway = carved.rejected
            if let live = carved.historyRemnants?.liveKeysTurnedAway, live > 0 { turnedAway["history-delete-of-live-key"] = live }
            return turnedAway
        } catch let error as SQLiteError {
            throw WALForensicsError.sqlite(path: evidence.displayPath, error)
        }
    }

    /// Deleted records only persistent history holds (their kept values), after every other version.
    /// - Returns: the keys of the records whose deletes the table's history holds (listed or not).
    @discardableResult
    static func emitTombstones(_ deletes: HistoryDeletes?, filter: Filter, names: [Int: (name: String, table: String)],
                               history: Tracker, carvedKeys: [Int: Set<Int64>], last: StateReader,
                               _ body: (RecordVersion) throws -> Void) throws -> Set<RecordKey> {
        guard var d = deletes else { return [] }
        var named: Set<RecordKey> = []
        // Versions already handed out stay out; what history could not give is left out, not fatal.
        // A delete naming a key that is live in the last state is no deletion (Core Data never
        // reuses a Z_PK): the live record is not the one it names.
        _ = try HistoryDeletes.unlessUnreadable {
            try TombstoneVersions.forEach(&d, filter: filter, names: names, isKnown: { key in
                named.insert(key)
                return history.records[key] != nil || carvedKeys[key.entity]?.contains(key.pk) == true
                    || !((try? liveKeys([key], last: last, names: names)) ?? []).isEmpty
            }, body)
        }
        return named
    }

    /// Entity number → name and table: the tables' entities, then the model's, then `Z_PRIMARYKEY`'s.
    static func entityNames(_ state: StateReader, entityTables: [(Int, String, String)]) -> [Int: (name: String, table: String)] {
        var names: [Int: (name: String, table: String)] = [:]
        for (number, name, table) in entityTables where names[number] == nil { names[number] = (name, table) }
        for mapping in state.map?.entities ?? [] {
            if let number = mapping.number, names[number] == nil { names[number] = (mapping.entity.name, mapping.table) }
        }
        for entity in state.store?.entities ?? [] where names[entity.number] == nil { names[entity.number] = (entity.name, "") }
        return names
    }

    /// The keys among `keys` that are rows of the last state.
    static func liveKeys(_ keys: Set<RecordKey>, last: StateReader, names: [Int: (name: String, table: String)]) throws -> Set<RecordKey> {
        var live: Set<RecordKey> = []
        for (number, members) in Dictionary(grouping: keys, by: \.entity) {
            guard let table = names[number]?.table, !table.isEmpty, try last.connection.tableExists(table) else { continue }
            let pks = members.map(\.pk).sorted()
            for start in stride(from: 0, to: pks.count, by: 500) {
                let part = pks[start ..< min(start + 500, pks.count)]
                let sql = "SELECT Z_PK FROM \(Identifier.quoted(table)) WHERE Z_ENT = ? AND Z_PK IN (" + part.map { _ in "?" }.joined(separator: ", ") + ")"
                for row in try last.connection.rows(sql, [.integer(Int64(number))] + part.map { .integer($0) }) {
                    if let pk = row[0].int64 { live.insert(RecordKey(entity: number, pk: pk)) }
                }
            }
        }
        return live
    }

    /// All versions at once (tests, small stores).
    public static func versions(_ evidence: WALEvidence, filter: Filter = Filter(), carve: Bool = false,
                                decoder: ValueDecoder = ValueDecoder()) throws -> [RecordVersion] {
        var out: [RecordVersion] = []
        try forEachVersion(evidence, filter: filter, carve: carve, decoder: decoder) { out.append($0) }
        return out
    }

    /// Persistent-history tables are the store's bookkeeping, not records of the model.
    static let historyTables: Set<String> = ["ATRANSACTION", "ACHANGE", "ATRANSACTIONSTRING"]

    static func isRecordGroup(_ group: WALDiff.Group) -> Bool {
        group.entityNumber != nil && group.keyColumns == ["Z_PK"] && !historyTables.contains(group.table.uppercased())
    }

    /// Two versions are one when every value is the same: names, cases and payloads. The common
    /// cases are spelled out (a tag, lengths before free text so no text can fake a boundary);
    /// the rare tree-shaped ones (bytes, archives, composites) by their full reflected description,
    /// which took half of `recover`'s time when it was used for every value.
    static func fingerprint(_ values: [RecordChange.Value]) -> String {
        var out = ""
        out.reserveCapacity(values.count * 24)
        for v in values {
            out += String(v.name.utf8.count)
            out += ":"
            out += v.name
            v.value.appendFingerprint(to: &out)
        }
        return out
    }
}

extension FieldValue {
    func appendFingerprint(to out: inout String) {
        switch self {
        // Appended piece by piece (interpolation built a string for each value first).
        case .null: out += "n;"
        case .integer(let i): out += "i"; out += String(i); out += ";"
        case .real(let d): out += "r"; out += String(d.bitPattern); out += ";"
        case .bool(let b): out += b ? "b1;" : "b0;"
        case .text(let t): out += "t"; out += String(t.utf8.count); out += ":"; out += t
        case .longText(let t):
            let print = t.fingerprint
            out += "T\(print?.count ?? -1):\(print?.sha256 ?? "unreadable");"
        case .date(let iso, let seconds): out += "d"; out += String(seconds.bitPattern); out += ","; out += String(iso.utf8.count); out += ":"; out += iso
        case .uuid(let u): out += "u"; out += String(u.utf8.count); out += ":"; out += u
        case .decimal(let d): out += "m\(d.utf8.count):"; out += d
        case .object(let entity, let pk): out += "o\(pk),\(entity.utf8.count):"; out += entity
        case .archived(let tree): out += "a"; tree.appendFingerprint(to: &out)
        case .composite(let elements):
            out += "c\(elements.count):"
            for e in elements { out += "\(e.name.utf8.count):"; out += e.name; e.value.appendFingerprint(to: &out) }
        case .binary(let bytes):
            // A summary of plain fields (size, hex prefix, where kept): its description is stable.
            let description = String(reflecting: bytes)
            out += "x\(description.utf8.count):"; out += description
        }
    }
}

extension PlistValue {
    /// Dictionaries in key order: a reflected description prints them in the hash order of the
    /// process, so the same archive compared across two runs could differ (recover on Notes gave
    /// two answers); and data by its bytes, which a description reduces to a length.
    func appendFingerprint(to out: inout String) {
        switch self {
        case .string(let t): out += "s\(t.utf8.count):"; out += t
        case .integer(let i): out += "i\(i);"
        case .unsignedInteger(let u): out += "u\(u);"
        case .real(let d): out += "r\(d.bitPattern);"
        case .bool(let b): out += b ? "b1;" : "b0;"
        case .date(let d): out += "d\(d.bitPattern);"
        case .data(let bytes): out += "x\(bytes.count):"; out += bytes.base64EncodedString()
        case .uid(let u): out += "k\(u);"
        case .array(let items):
            out += "[\(items.count):"
            for item in items { item.appendFingerprint(to: &out) }
        case .dictionary(let entries):
            out += "{\(entries.count):"
            for key in entries.keys.sorted() {
                out += "\(key.utf8.count):"; out += key
                entries[key]!.appendFingerprint(to: &out)
            }
        }
    }
}

/// The records some commit touched, with the runs of commits each held each set of values (the
/// values themselves in `stored`).
struct Tracker {
    typealias Key = RecordKey

    struct Span {
        /// Where the values are kept (`VersionValues`; 0: none kept, a live row read at the end).
        let values: Int64
        /// The values' digest: versions are told apart by it (the values themselves are read back
        /// only when the version is handed out).
        let digest: ValuesDigest
        let first: Int
        var last: Int?
        var ending: RecordVersion.Ending?
    }

    struct Record {
        let entity: String
        let table: String
        var spans: [Span] = []
        var isOpen: Bool { spans.last.map { $0.last == nil } ?? false }
    }

    let evidence: WALEvidence
    let stored: VersionValues
    var records: [Key: Record] = [:]
    /// History deletes of deleted records no commit's history transactions named (`recover`
    /// looks them up by key once every commit is read).
    var historyDeletes: [Key: [HistoryTransaction]] = [:]

    /// Records a commit deleted whose commit wrote no history transaction naming them, by entity.
    var deletedWithoutTransaction: [Int: Set<Int64>] {
        var out: [Int: Set<Int64>] = [:]
        for (key, record) in records {
            guard let last = record.spans.last, let ending = last.ending, ending.kind == .deleted, ending.transactions.isEmpty else { continue }
            out[key.entity, default: []].insert(key.pk)
        }
        return out
    }

    init(evidence: WALEvidence) {
        self.evidence = evidence
        stored = VersionValues(folder: evidence.workingCopy.map { copy in { try copy.privateFolder() } })
    }

    mutating func apply(commit: Int, diff: RecordDiff, earlier: StateReader, later: StateReader, filter: RecordRecovery.Filter) throws {
        for entry in diff.groups where RecordRecovery.isRecordGroup(entry.group) {
            let group = entry.group
            guard let number = group.entityNumber else { continue }
            let name = group.entity ?? "#\(number)"
            // Filtered records are not held: what is not shown need not be remembered.
            guard filter.keeps(entity: name) else { continue }
            let wanted = entry.records.filter { r in r.pk.map { pk in filter.pk.map { $0 == pk } ?? true } ?? false }
            // The diff carries keys only (`entityRecordsOnly`): the values are read here, a bounded
            // number of records at a time, and kept in `stored` as they come, so a commit that
            // deleted or rewrote many records never has them all in memory at once.
            for kind in [RecordChange.Kind.inserted, .updated, .deleted] {
                let pks = wanted.filter { $0.kind == kind }.compactMap(\.pk)
                for start in stride(from: 0, to: pks.count, by: Self.batch) {
                    let part = Array(pks[start ..< min(start + Self.batch, pks.count)])
                    switch kind {
                    case .inserted:
                        for (rowKey, values) in try later.values(of: group, keys: part.map { [.integer($0)] }) {
                            guard let pk = Self.pk(of: rowKey) else { continue }
                            var record = records[Key(entity: number, pk: pk)] ?? Record(entity: name, table: group.table)
                            record.spans.append(try span(values, from: commit))
                            records[Key(entity: number, pk: pk)] = record
                        }
                    case .deleted:
                        for (rowKey, values) in try earlier.values(of: group, keys: part.map { [.integer($0)] }) {
                            guard let pk = Self.pk(of: rowKey) else { continue }
                            var record = records[Key(entity: number, pk: pk)] ?? Record(entity: name, table: group.table)
                            // Untouched so far: these values stood since the main file.
                            if !record.isOpen { record.spans.append(try span(values, from: 0)) }
                            close(&record, at: commit, kind: .deleted, transactions: matching(diff, number, name, pk, .delete))
                            records[Key(entity: number, pk: pk)] = record
                        }
                    case .updated:
                        // An updated record's whole values on both sides (the diff carries only what changed).
                        var after: [Int64: [RecordChange.Value]] = [:]
                        var before: [Int64: [RecordChange.Value]] = [:]
                        for (key, values) in try later.values(of: group, keys: part.map { [.integer($0)] }) {
                            if let pk = key.first?.int64 { after[pk] = values }
                        }
                        let unknown = part.filter { records[Key(entity: number, pk: $0)] == nil }
                        for (key, values) in try earlier.values(of: group, keys: unknown.map { [.integer($0)] }) {
                            if let pk = key.first?.int64 { before[pk] = values }
                        }
                        for pk in part {
                            var record = records[Key(entity: number, pk: pk)] ?? Record(entity: name, table: group.table)
                            if !record.isOpen { record.spans.append(try span(before[pk] ?? [], from: 0)) }
                            let new = after[pk] ?? []
                            // Only Z_OPT (or nothing shown) changed: the same version goes on.
                            if ValuesDigest(RecordRecovery.fingerprint(new)) != record.spans.last?.digest {
                                close(&record, at: commit, kind: .changed, transactions: matching(diff, number, name, pk, .update))
                                record.spans.append(try span(new, from: commit))
                            }
                            records[Key(entity: number, pk: pk)] = record
                        }
                    }
                }
            }
        }
    }

    /// Records whose values are read at once (as `StateReader.values` asks SQLite for them).
    static let batch = 500

    /// A row's `Z_PK`, as `RecordChange.pk` reads it.
    static func pk(of key: WALDiff.RowKey) -> Int64? {
        guard key.count == 1, case .integer(let value) = key[0] else { return nil }
        return value
    }

    func span(_ values: [RecordChange.Value], from commit: Int) throws -> Span {
        Span(values: try stored.store(values), digest: ValuesDigest(RecordRecovery.fingerprint(values)), first: commit)
    }

    func close(_ record: inout Record, at commit: Int, kind: RecordVersion.Ending.Kind, transactions: [HistoryTransaction]) {
        guard let index = record.spans.indices.last, record.spans[index].last == nil else { return }
        record.spans[index].last = commit - 1
        record.spans[index].ending = .init(kind: kind, commit: commit, transactions: transactions)
    }

    /// The commit's history transactions that record this change of this record.
    func matching(_ diff: RecordDiff, _ number: Int, _ name: String, _ pk: Int64, _ type: HistoryChange.ChangeType) -> [HistoryTransaction] {
        (diff.transactions ?? []).filter { t in
            t.changes.contains { c in
                c.pk == pk && c.type == type && (c.entityNumber.map { $0 == number } ?? (c.entity == name))
            }
        }
    }

    /// The versions of the touched records (folded), merged in key order with the live rows no
    /// commit touched, read from the last state a bounded number at a time.
    ///
    /// With `foldingOnly` (the caller lists no live version), an untouched row is read only when
    /// a carved record could fold into it (`CarvedVersions.probe`); the others are not handed out.
    func finish(last: StateReader, filter: RecordRecovery.Filter, foldingOnly carved: CarvedVersions? = nil,
                _ body: (RecordVersion) throws -> Void) throws {
        let lastCommit = evidence.commitCount
        var entities: [Int: (name: String, table: String)] = [:]
        let wantLive = filter.states.map { $0.contains(.live) } ?? true
        if wantLive {
            for (number, name, table) in try Self.entityTables(last) where filter.keeps(entity: name) && entities[number] == nil {
                entities[number] = (name, table)
            }
        }
        var touched: [Int: [Int64]] = [:]
        for (key, record) in records {
            touched[key.entity, default: []].append(key.pk)
            if entities[key.entity] == nil { entities[key.entity] = (record.entity, record.table) }
        }
        for number in entities.keys.sorted() {
            guard let (name, table) = entities[number] else { continue }
            let keys = (touched[number] ?? []).sorted()
            var next = 0
            func emitTouched(below limit: Int64?) throws {
                while next < keys.count, limit.map({ keys[next] < $0 }) ?? true {
                    for version in try versions(of: Key(entity: number, pk: keys[next]), lastCommit: lastCommit, filter: filter) {
                        try body(version)
                    }
                    next += 1
                }
            }
            let group = WALDiff.Group(entity: name, entityNumber: number, table: table, keyColumns: ["Z_PK"])
            let probe = try carved?.probe(entity: number, positions: last.decodedFieldCount(of: group))
            // No carved record of the entity: none of its untouched rows is read.
            let foldsNone = probe.map { $0.pks.isEmpty && $0.position == nil && !$0.all } ?? false
            if wantLive, !foldsNone, try last.connection.tableExists(table) {
                var after = Int64.min
                while true {
                    var sql = "SELECT Z_PK FROM \(Identifier.quoted(table)) WHERE Z_ENT = ? AND Z_PK > ?"
                    var arguments: [DatabaseValue] = [.integer(Int64(number)), .integer(after)]
                    if let pk = filter.pk {
                        sql += " AND Z_PK = ?"
                        arguments.append(.integer(pk))
                    }
                    let pks = try last.connection.rows(sql + " ORDER BY Z_PK LIMIT 500", arguments).compactMap { $0[0].int64 }
                    guard let end = pks.last else { break }
                    after = end
                    var untouched = pks.filter { records[Key(entity: number, pk: $0)] == nil }
                    if let probe, !probe.all {
                        untouched = try Self.folding(untouched, probe: probe, group: group, last: last)
                    }
                    for (key, values) in try last.values(of: group, keys: untouched.map { [.integer($0)] }) {
                        guard let pk = key.first?.int64 else { continue }
                        try emitTouched(below: pk)
                        try body(RecordVersion(entity: name, entityNumber: number, table: table, pk: pk, values: values, state: .live,
                                               sources: [source(Span(values: 0, digest: .none, first: 0), lastCommit: lastCommit)],
                                               confidence: .whole))
                    }
                }
            }
            try emitTouched(below: nil)
        }
    }

    /// The rows among `pks` a carved record could fold into: a carved key, or the probed value
    /// of a keyless carved record (rows whose value cannot be read alone are all kept).
    static func folding(_ pks: [Int64], probe: CarvedVersions.FoldProbe, group: WALDiff.Group, last: StateReader) throws -> [Int64] {
        let rest = pks.filter { !probe.pks.contains($0) }
        guard let position = probe.position, !rest.isEmpty else { return pks.filter { probe.pks.contains($0) } }
        guard let away = last.turnedAway(of: group, keys: rest, position: position, keep: probe.holds) else { return pks }
        return pks.filter { pk in probe.pks.contains(pk) || !away.contains(pk) }
    }

    /// Entity tables of the last state: every table with `Z_PK` and `Z_ENT`, each `Z_ENT` in it,
    /// named by `Z_PRIMARYKEY` (as `WALDiff` groups them).
    static func entityTables(_ state: StateReader) throws -> [(Int, String, String)] {
        let c = state.connection
        var names: [Int: String] = [:]
        if try c.tableExists("Z_PRIMARYKEY"), try c.scalar("SELECT count(*) FROM pragma_table_info('Z_PRIMARYKEY') WHERE name IN ('Z_ENT', 'Z_NAME')").int == 2 {
            for row in try c.rows("SELECT Z_ENT, Z_NAME FROM Z_PRIMARYKEY") {
                if let n = row[0].int, let s = row[1].string { names[n] = s }
            }
        }
        var out: [(Int, String, String)] = []
        let tables = try c.rows("SELECT name FROM sqlite_master WHERE type = 'table' AND rootpage > 0 AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name")
            .compactMap { $0[0].string }.filter { !RecordRecovery.historyTables.contains($0.uppercased()) }
        for table in tables {
            let columns = Set(try state.columns(of: table))
            guard columns.contains("Z_PK"), columns.contains("Z_ENT") else { continue }
            for row in try c.rows("SELECT DISTINCT Z_ENT FROM \(Identifier.quoted(table)) WHERE Z_ENT IS NOT NULL ORDER BY Z_ENT") {
                if let n = row[0].int { out.append((n, names[n] ?? "#\(n)", table)) }
            }
        }
        return out
    }

    /// A touched record's versions that `filter` keeps: spans with the same values folded, in
    /// order of first appearance (the values read back only for the versions kept).
    func versions(of key: Key, lastCommit: Int, filter: RecordRecovery.Filter) throws -> [RecordVersion] {
        guard let record = records[key] else { return [] }
        var order: [ValuesDigest] = []
        var spans: [ValuesDigest: [Span]] = [:]
        for span in record.spans {
            if spans[span.digest] == nil { order.append(span.digest) }
            spans[span.digest, default: []].append(span)
        }
        var out: [RecordVersion] = []
        for fp in order {
            guard let runs = spans[fp], let final = runs.last else { continue }
            let state: RecordVersion.State = final.last == nil ? .live : (final.ending?.kind == .deleted ? .deleted : .superseded)
            // What the filter asks (entity, key, state) is known before the values are read.
            guard filter.keeps(entity: record.entity), filter.pk.map({ $0 == key.pk }) ?? true,
                  filter.states.map({ $0.contains(state) }) ?? true else { continue }
            var version = RecordVersion(entity: record.entity, entityNumber: key.entity, table: record.table, pk: key.pk,
                                        values: try stored.values(runs[0].values), state: state,
                                        sources: runs.map { source($0, lastCommit: lastCommit) }, confidence: .whole)
            if state == .deleted, final.ending?.transactions.isEmpty == true { version.historyDeletes = historyDeletes[key] ?? [] }
            version.valuesDigest = fp
            out.append(version)
        }
        return out
    }

    func source(_ span: Span, lastCommit: Int) -> RecordVersion.Source {
        let transaction = span.first > 0 ? evidence.wal?.transactions[span.first - 1] : nil
        return RecordVersion.Source(file: span.first == 0 ? evidence.displayPath : evidence.walName, writtenBy: span.first,
                                    firstFrame: transaction?.firstFrame, commitFrame: transaction?.commitFrame,
                                    firstCommit: span.first, lastCommit: span.last ?? lastCommit, endedBy: span.ending)
    }
}
