import Acquisition
import CoreDataStore
import Findings
import Foundation
import Repair
import SQLiteAccess
import StoreFormats

/// The manifest's cross-store repairs, as a plan for the writer's store: import the legacy records
/// that were never migrated, and remove the copies a double import left. Always planned first.
/// Not `Sendable`: the store's `WorkingCopy` reads its WAL and journal lazily into caches no
/// lock guards, and nothing hands a plan to another thread.
public struct MigrationRepair {
    /// The store the plan is for (the writer stack's store), ready for `Repairer`.
    public let store: AcquiredStore
    public let plan: RepairPlan
}

extension Auditor {
    /// One rule's entity in the writer's store, with what both of its repairs read.
    struct RepairTarget {
        let rule: Manifest.EntityRule
        let writer: SideSource
        let mapping: EntityMapping
        let opened: OpenedStore
        let number: Int
        let types: [String: ModelAttributeType]
        /// Every attribute but the identity: what is imported.
        let attributes: [String]
        /// The writer's own records, by identity.
        let ours: SideRecords
        var table: String { Identifier.quoted(mapping.table) }
        var toOne: [RelationshipMapping] { mapping.relationships.filter { $0.kind == .toOne } }
    }

    /// The plan so far, store by store: actions in plan order, and the rows imported and removed
    /// (for the history transaction).
    struct PlannedRepairs {
        var actionsByStore: [String: [RepairPlan.Action]] = [:]
        var importedByStore: [String: [(entity: Int, pks: [Int64])]] = [:]
        var removedByStore: [String: [(entity: Int, pks: [Int64])]] = [:]
        var lastPK: [String: Int64] = [:]   // table → the highest Z_PK in use or planned
    }

    /// The legacy records the writer's store lacks, by identity, in the order first read.
    struct MissingRecords {
        var raw: [String: [String: RawValue]] = [:]
        var side: [String: SideSource] = [:]
        var order: [String] = []
    }

    /// For one to-one relationship: legacy target (store|pk) → identity → the new store's row.
    struct ToOneTargets {
        var legacyKeyOf: [String: String] = [:]
        var newPKOf: [String: (pk: Int, ent: Int)] = [:]
    }

    /// Plans the cross-store repairs for the writer's store.
    ///
    /// - Parameters:
    ///   - select: when the rules' writers live in several stores, the one to repair (`--store`).
    ///   - recordHistory: also record the changes as a history transaction by `storelens-repair`,
    ///     so other processes and CloudKit notice them.
    public func migrationRepair(inputs: [String], select: String? = nil, recordHistory: Bool = false) throws -> MigrationRepair {
        let prepared = try prepare(inputs: inputs)
        var planned = PlannedRepairs()
        for (i, rule) in manifest.entities.enumerated() where !rule.identity.isEmpty {
            let sides = prepared.sidesByRule[i]
            guard let writer = sides.first(where: { $0.stack.name == rule.writer }), let mapping = writer.mapping,
                  let opened = writer.opened, let number = mapping.number else { continue }
            if let select, !writer.storePath.hasSuffix(select) { continue }
            let types = Dictionary(mapping.attributes.map { ($0.attribute.name, $0.attribute.type) }, uniquingKeysWith: { a, _ in a })
            let attributes = mapping.attributes.map(\.attribute.name).filter { !rule.identity.contains($0) }
            let ours = try read(side: writer, rule: rule, isWriter: true, attributes: attributes, types: types)
            let target = RepairTarget(rule: rule, writer: writer, mapping: mapping, opened: opened, number: number,
                                      types: types, attributes: attributes, ours: ours)

            // 1. Double imports: keep the most saved, then the newest row of each identity.
            if let removal = try doubleImportRemoval(target) {
                planned.actionsByStore[writer.storePath, default: []].append(removal.action)
                planned.removedByStore[writer.storePath, default: []].append((number, removal.losers.map(Int64.init)))
            }
            // 2. Legacy records never migrated: insert them with mapped names and new primary keys.
            let missing = try missingRecords(target, sides: sides)
            let targets = try toOneTargets(target, prepared: prepared)
            guard !missing.order.isEmpty else { continue }
            let (action, pks) = try missingRecordsImport(target, missing: missing, targets: targets, lastPK: &planned.lastPK)
            planned.actionsByStore[writer.storePath, default: []].append(action)
            planned.importedByStore[writer.storePath, default: []].append((number, pks))
        }
        return try oneStoreRepair(planned, prepared: prepared, recordHistory: recordHistory)
    }

    /// The action removing a double import's copies (references repointed to the kept row), and
    /// the primary keys it removes; nil when no identity occurs twice.
    func doubleImportRemoval(_ t: RepairTarget) throws -> (action: RepairPlan.Action, losers: [Int])? {
        let rule = t.rule, table = t.table
        let groups = t.ours.byKey.filter { $0.value.count > 1 }.sorted { $0.key < $1.key }
        guard !groups.isEmpty else { return nil }
        var pairs: [(loser: Int, winner: Int)] = []
        for (_, rows) in groups {
            let pks = rows.compactMap { Int($0.pk.split(separator: "#").last ?? "") }
            let ranked = try t.opened.connection.rows("SELECT Z_PK FROM \(table) WHERE Z_PK IN (\(pks.map(String.init).joined(separator: ", "))) ORDER BY coalesce(Z_OPT, 0) DESC, Z_PK DESC")
                .compactMap { $0[0].int }
            guard let winner = ranked.first else { continue }
            pairs += ranked.dropFirst().map { ($0, winner) }
        }
        let losers = pairs.map(\.loser)
        var statements: [RepairPlan.Statement] = [
            .init(sql: "CREATE TEMP TABLE IF NOT EXISTS storelens_dup (loser INTEGER PRIMARY KEY, winner INTEGER)", arguments: []),
            .init(sql: "DELETE FROM storelens_dup", arguments: []),
        ]
        for p in pairs {
            statements.append(.init(sql: "INSERT INTO storelens_dup VALUES (?, ?)", arguments: [.integer(Int64(p.loser)), .integer(Int64(p.winner))]))
        }
        let (more, tables) = try RepairPlanner.repointAndDelete(entity: t.mapping, map: t.opened.map, connection: t.opened.connection)
        statements += more
        let action = RepairPlan.Action(
            name: "remove-double-imports", answers: "duplicate-import", entity: rule.current, tables: tables,
            summary: "Keep one \(rule.current) per \(rule.identity.joined(separator: ", ")) (the most saved, then the newest); point references to it and delete the \(plural(losers.count, "other")).",
            affected: losers.prefix(20).map { "\(rule.current)#\($0)" }, count: losers.count, statements: statements,
            postconditions: [.init("removed \(rule.current) copies are gone",
                                   sql: "SELECT count(*) FROM \(table) WHERE Z_PK IN (\(losers.map(String.init).joined(separator: ", ")))", expected: 0)],
            columns: RepairPlanner.repointedColumns(entity: t.mapping, map: t.opened.map), deletesFrom: tables)
        return (action, losers)
    }

    /// The records of the legacy sides (other stores of another kind of stack) whose identity the
    /// writer's store lacks. To-one relationships are read too, so their targets can be found in
    /// the new store.
    func missingRecords(_ t: RepairTarget, sides: [SideSource]) throws -> MissingRecords {
        var missing = MissingRecords()
        let writer = t.writer
        for side in sides where !(side.stack.name == writer.stack.name && side.storePath == writer.storePath) && side.stack.kind != writer.stack.kind {
            _ = try read(side: side, rule: t.rule, isWriter: false, attributes: t.attributes + t.toOne.map(\.relationship.name), types: t.types) { key, raw in
                guard t.ours.byKey[key] == nil, missing.raw[key] == nil else { return }
                missing.raw[key] = raw
                missing.side[key] = side
                missing.order.append(key)
            }
        }
        return missing
    }

    /// For each to-one relationship whose destination the manifest identifies: legacy target
    /// (store, pk) → identity → the new store's row with that identity.
    func toOneTargets(_ t: RepairTarget, prepared: Prepared) throws -> [String: ToOneTargets] {
        var targets: [String: ToOneTargets] = [:]
        for r in t.toOne {
            guard let destIndex = manifest.entities.firstIndex(where: { $0.current == r.relationship.destination }),
                  !manifest.entities[destIndex].identity.isEmpty else { continue }
            let destRule = manifest.entities[destIndex]
            let destSides = prepared.sidesByRule[destIndex]
            guard let destWriter = destSides.first(where: { $0.stack.name == destRule.writer }), let destMapping = destWriter.mapping else { continue }
            let destTypes = Dictionary(destMapping.attributes.map { ($0.attribute.name, $0.attribute.type) }, uniquingKeysWith: { a, _ in a })
            var found = ToOneTargets()
            for (key, rows) in try read(side: destWriter, rule: destRule, isWriter: true, attributes: [], types: destTypes).byKey {
                guard let row = rows.first, let pk = Int(row.pk.split(separator: "#").last ?? ""),
                      let ent = destWriter.opened?.map.entity(named: String(row.pk.split(separator: "#").first ?? ""))?.number else { continue }
                found.newPKOf[key] = (pk, ent)
            }
            for legacySide in destSides where legacySide.stack.name != destRule.writer && legacySide.json == nil {
                for (key, rows) in try read(side: legacySide, rule: destRule, isWriter: false, attributes: [], types: destTypes).byKey {
                    for row in rows { found.legacyKeyOf[legacySide.storePath + "|" + row.pk] = key }
                }
            }
            targets[r.relationship.name] = found
        }
        return targets
    }

    /// The action inserting the missing records under new primary keys (above every key in use or
    /// already planned for the table, kept in `lastPK`), and those keys.
    func missingRecordsImport(_ t: RepairTarget, missing: MissingRecords, targets: [String: ToOneTargets],
                              lastPK: inout [String: Int64]) throws -> (action: RepairPlan.Action, pks: [Int64]) {
        let rule = t.rule, table = t.table, tableName = t.mapping.table, order = missing.order
        let root = t.opened.store.entities.first { $0.table == tableName && $0.superNumber == 0 }
        if lastPK[tableName] == nil {
            let maxPK = try t.opened.connection.scalar("SELECT max(Z_PK) FROM \(table)").int64 ?? 0
            lastPK[tableName] = max(Int64(root?.zMax ?? 0), maxPK)
        }
        // Keys come from the store: a device can hold Z_MAX or Z_PK at SQLite's largest integer.
        let keys = try RepairPlanner.allocateKeys(zMax: 0, maxPK: lastPK[tableName] ?? 0, count: order.count,
                                                  store: t.writer.storePath, entity: rule.current)
        let first = keys.lowerBound, last = keys.upperBound
        var statements: [RepairPlan.Statement] = []
        var notes = Set<String>()
        var remapped = Set<String>()
        var pks: [Int64] = []
        for (offset, key) in order.enumerated() {
            let pk = first + Int64(offset)   // ≤ last, checked above
            statements.append(importStatement(t, key: key, pk: pk, missing: missing, targets: targets, notes: &notes, remapped: &remapped))
            pks.append(pk)
        }
        lastPK[tableName] = last
        if let root {
            statements.append(.init(sql: "UPDATE Z_PRIMARYKEY SET Z_MAX = max(coalesce(Z_MAX, 0), (SELECT max(Z_PK) FROM \(table))) WHERE Z_ENT = ?",
                                    arguments: [.integer(Int64(root.number))]))
        }
        let unmapped = t.toOne.map(\.relationship.name).filter { !remapped.contains($0) }
        var summary = "Insert \(plural(order.count, "\(rule.current) record")) from the legacy side with mapped attribute names, new primary keys \(first)–\(last) and Z_OPT 1."
        if !remapped.isEmpty { summary += " Relationships \(remapped.sorted().joined(separator: ", ")) point at the new store's rows with the same identity as the legacy targets." }
        if !unmapped.isEmpty { summary += " Relationships \(unmapped.joined(separator: ", ")) are left empty: their legacy targets have no identity in the manifest or no counterpart in the new store." }
        if !notes.isEmpty { summary += " Required attributes without a legacy value get a zero value: \(notes.sorted().joined(separator: ", "))." }
        let action = RepairPlan.Action(
            name: "import-missing-records", answers: "not-migrated", entity: rule.current, tables: [tableName, "Z_PRIMARYKEY"],
            summary: summary, affected: order.prefix(20).map { $0 }, count: order.count, statements: statements,
            postconditions: [.init("imported \(rule.current) records are present",
                                   sql: "SELECT count(*) FROM \(table) WHERE Z_PK BETWEEN ? AND ? AND Z_ENT = ?",
                                   arguments: [.integer(first), .integer(last), .integer(Int64(t.number))],
                                   expected: order.count)])
        return (action, pks)
    }

    /// The INSERT of one missing record: its attributes converted to the current types (a zero
    /// value for a required one the legacy side lacks, named in `notes`), and its to-one
    /// relationships pointed at the new store's rows (named in `remapped`).
    func importStatement(_ t: RepairTarget, key: String, pk: Int64, missing: MissingRecords, targets: [String: ToOneTargets],
                         notes: inout Set<String>, remapped: inout Set<String>) -> RepairPlan.Statement {
        let raw = missing.raw[key] ?? [:], mapping = t.mapping
        var columns = ["Z_PK", "Z_ENT", "Z_OPT"]
        var values: [RepairPlan.Statement.Value] = [.integer(pk), .integer(Int64(t.number)), .integer(1)]
        for a in mapping.attributes where a.declaredBy == mapping.entity.name || mapping.lineage.contains(a.declaredBy) {
            guard let column = a.column else { continue }
            let value = raw[a.attribute.name].flatMap { ImportValue.convert($0, to: a.attribute.type) }
                ?? (a.attribute.isOptional ? nil : ImportValue.zero(for: a.attribute.type, note: &notes, name: a.attribute.name))
            guard let value else { continue }
            columns.append(column)
            values.append(value)
        }
        for r in t.toOne {
            guard let column = r.column, let map = targets[r.relationship.name], let side = missing.side[key],
                  case .field(.object(let entity, let legacyPK))? = raw[r.relationship.name],
                  let targetKey = map.legacyKeyOf[side.storePath + "|" + "\(entity)#\(legacyPK)"],
                  let target = map.newPKOf[targetKey] else { continue }
            columns.append(column)
            values.append(.integer(Int64(target.pk)))
            if let entityKey = r.entityKeyColumn {
                columns.append(entityKey)
                values.append(.integer(Int64(target.ent)))
            }
            remapped.insert(r.relationship.name)
        }
        return .init(sql: "INSERT INTO \(t.table) (\(columns.map(Identifier.quoted).joined(separator: ", "))) VALUES (\(columns.map { _ in "?" }.joined(separator: ", ")))",
                     arguments: values)
    }

    /// The plan for the one store the repairs touch (refused when they touch several), with the
    /// history transaction appended when asked and the store keeps history.
    func oneStoreRepair(_ planned: PlannedRepairs, prepared: Prepared, recordHistory: Bool) throws -> MigrationRepair {
        let stores = planned.actionsByStore.keys.sorted()
        guard stores.count <= 1 else {
            throw ManifestError(path: manifest.path, line: 1, column: 1, field: "entities",
                                problem: "the repairs touch several stores (\(stores.joined(separator: ", "))); repair one at a time with --store")
        }
        let path = stores.first ?? prepared.storeOf[manifest.entities.first?.writer ?? ""]?.path ?? ""
        guard let found = prepared.storeOf.values.first(where: { $0.path == path }), let copy = prepared.copies[path] else {
            throw ManifestError(path: manifest.path, line: 1, column: 1, field: "stacks", problem: "no writer store was found in the input")
        }
        var actions = planned.actionsByStore[path] ?? []
        if recordHistory, !actions.isEmpty, let o = prepared.opened[path], o.store.history.present {
            let imported = planned.importedByStore[path] ?? [], removed = planned.removedByStore[path] ?? []
            try requireHistoryKeys(in: o, path: path, changes: imported.reduce(0) { $0 + $1.pks.count } + removed.reduce(0) { $0 + $1.pks.count })
            actions.append(historyAction(imported: imported, removed: removed))
        }
        return MigrationRepair(store: AcquiredStore(displayPath: found.path, found: found, copy: copy),
                               plan: RepairPlan(actions: actions, unrepaired: []))
    }

    /// The history rows get keys above the highest in use: refuses when there is no room.
    func requireHistoryKeys(in o: OpenedStore, path: String, changes: Int) throws {
        for (entity, table, needed) in [("TransactionString", "ATRANSACTIONSTRING", 1), ("Transaction", "ATRANSACTION", 1), ("Change", "ACHANGE", changes)] where needed > 0 {
            _ = try RepairPlanner.allocateKeys(
                zMax: try o.connection.scalar("SELECT max(Z_MAX) FROM Z_PRIMARYKEY WHERE Z_NAME = ?", [.text(entity.uppercased())]).int64 ?? 0,
                maxPK: try o.connection.scalar("SELECT max(Z_PK) FROM \(Identifier.quoted(table))").int64 ?? 0,
                count: needed, store: path, entity: "history \(entity)")
        }
    }

    /// One history transaction by `storelens-repair` recording the inserts and deletes.
    func historyAction(imported: [(entity: Int, pks: [Int64])], removed: [(entity: Int, pks: [Int64])]) -> RepairPlan.Action {
        var statements: [RepairPlan.Statement] = [
            .init(sql: "INSERT OR IGNORE INTO ATRANSACTIONSTRING (Z_PK, Z_ENT, Z_OPT, ZNAME) SELECT coalesce((SELECT max(Z_MAX) FROM Z_PRIMARYKEY WHERE Z_ENT = 16003), 0) + 1, 16003, NULL, 'storelens-repair'", arguments: []),
            .init(sql: "UPDATE Z_PRIMARYKEY SET Z_MAX = (SELECT max(Z_PK) FROM ATRANSACTIONSTRING) WHERE Z_ENT = 16003", arguments: []),
            .init(sql: """
                INSERT INTO ATRANSACTION (Z_PK, Z_ENT, Z_OPT, ZAUTHORTS, ZTIMESTAMP)
                VALUES (coalesce((SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_ENT = 16002), 0) + 1, 16002, NULL,
                        (SELECT Z_PK FROM ATRANSACTIONSTRING WHERE ZNAME = 'storelens-repair'), ?)
                """, arguments: [.real(Date().timeIntervalSinceReferenceDate)]),
            .init(sql: "UPDATE Z_PRIMARYKEY SET Z_MAX = (SELECT max(Z_PK) FROM ATRANSACTION) WHERE Z_ENT = 16002", arguments: []),
        ]
        for (type, groups) in [(0, imported), (2, removed)] {
            for group in groups {
                for pk in group.pks {
                    statements.append(.init(sql: """
                        INSERT INTO ACHANGE (Z_PK, Z_ENT, Z_OPT, ZCHANGETYPE, ZENTITY, ZENTITYPK, ZTRANSACTIONID)
                        VALUES (coalesce((SELECT max(Z_PK) FROM ACHANGE), 0) + 1, 16001, NULL, ?, ?, ?, (SELECT max(Z_PK) FROM ATRANSACTION))
                        """, arguments: [.integer(Int64(type)), .integer(Int64(group.entity)), .integer(pk)]))
                }
            }
        }
        statements.append(.init(sql: "UPDATE Z_PRIMARYKEY SET Z_MAX = max(coalesce(Z_MAX, 0), (SELECT coalesce(max(Z_PK), 0) FROM ACHANGE)) WHERE Z_ENT = 16001", arguments: []))
        let count = imported.reduce(0) { $0 + $1.pks.count } + removed.reduce(0) { $0 + $1.pks.count }
        return RepairPlan.Action(name: "record-history", answers: "history", entity: nil, tables: ["ACHANGE", "ATRANSACTION", "ATRANSACTIONSTRING", "Z_PRIMARYKEY"],
                                 summary: "Record the \(plural(count, "change")) as one history transaction by author storelens-repair, so other processes and CloudKit notice them.",
                                 affected: [], count: count, statements: statements,
                                 postconditions: [.init("the repair's history transaction exists",
                                                        sql: "SELECT count(*) FROM ATRANSACTION t JOIN ATRANSACTIONSTRING s ON s.Z_PK = t.ZAUTHORTS WHERE s.ZNAME = 'storelens-repair'", expected: 1)])
    }
}

/// Legacy values converted to what Core Data stores for the current attribute's type.
enum ImportValue {
    static func convert(_ raw: Auditor.RawValue, to type: ModelAttributeType) -> RepairPlan.Statement.Value? {
        switch raw {
        case .field(let f):
            switch (f, type) {
            case (.null, _): return nil
            case (.bool(let b), _): return .integer(b ? 1 : 0)
            case (.integer(let i), .double), (.integer(let i), .float): return .real(Double(i))
            case (.integer(let i), _): return .integer(i)
            case (.real(let d), _): return .real(d)
            case (.text(let s), .uuid): return uuid(s)
            case (.text(let s), _): return .text(s)
            case (.date(_, let seconds), _): return .real(seconds)
            case (.uuid(let s), .string): return .text(s)
            case (.uuid(let s), _): return uuid(s)
            case (.decimal(let s), _): return .text(s)
            default: return nil   // binary, archived, composite, relationships: not carried over
            }
        case .json(let j):
            switch (j, type) {
            case (.null, _): return nil
            case (.bool(let b, _), _): return .integer(b ? 1 : 0)
            case (.number(let n, _), .boolean): return .integer(n != 0 ? 1 : 0)
            case (.number(let n, _), .integer16), (.number(let n, _), .integer32), (.number(let n, _), .integer64):
                return Int64(exactly: n.rounded()).map { .integer($0) }
            case (.number(let n, _), _): return .real(n)
            case (.string(let s, _), .uuid): return uuid(s)
            case (.string(let s, _), .date): return ValueDecoder.parseDate(s).map { .real($0) }
            case (.string(let s, _), .boolean): return .integer(["true", "1", "yes"].contains(s.lowercased()) ? 1 : 0)
            case (.string(let s, _), _): return .text(s)
            default: return nil
            }
        }
    }

    static func uuid(_ s: String) -> RepairPlan.Statement.Value? {
        guard let u = UUID(uuidString: s) else { return .text(s) }
        return .blob(withUnsafeBytes(of: u.uuid) { Array($0) })
    }

    /// A value for a required attribute the legacy side does not have.
    static func zero(for type: ModelAttributeType, note: inout Set<String>, name: String) -> RepairPlan.Statement.Value? {
        note.insert(name)
        switch type {
        case .integer16, .integer32, .integer64, .boolean: return .integer(0)
        case .double, .float: return .real(0)
        case .date: return .real(Date().timeIntervalSinceReferenceDate)
        case .string, .uri: return .text("")
        case .uuid: return uuid(UUID().uuidString)
        default: return nil
        }
    }
}
