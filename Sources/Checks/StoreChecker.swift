import Acquisition
import CoreDataStore
import Findings
import Foundation
import SQLiteAccess
import StoreFormats

/// Core Data's own invariants, which `PRAGMA integrity_check` cannot see: Core Data declares no
/// foreign keys, so a store whose Z_MAX lags or whose relationships dangle checks "ok".
///
/// Every check is set-based SQL over the working copy (no row-by-row loops in Swift over large
/// tables) and every finding lists the affected primary keys: the first `limit`, and the count.
public struct StoreChecker {
    /// The named checks, with the finding id each produces.
    public enum Check: String, CaseIterable, Sendable {
        case sqliteIntegrity = "sqlite-integrity"
        case zMax = "zmax-below-max-pk"
        case unknownEntityRows = "unknown-entity-rows"
        case missingEntityTable = "missing-entity-table"
        case tableWithoutEntity = "table-without-entity"
        case danglingToOne = "dangling-to-one"
        case entityKeyMismatch = "fek-mismatch"
        case oneToOneMismatch = "one-to-one-mismatch"
        case orphanJoinRows = "orphan-join-rows"
        case requiredNull = "required-null"
        case uniqueDuplicates = "unique-duplicates"
        case badZOpt = "bad-z-opt"
        case historyUnknownEntity = "history-unknown-entity"
        case historyMissingTransaction = "history-missing-transaction"
        case metadataModelMismatch = "metadata-model-mismatch"
        case externalDataMissing = "external-data-missing"
        case cloudKitOrphan = "cloudkit-orphan-metadata"
        case walMissing = "wal-missing"
        case walPageSizeMismatch = "wal-page-size-mismatch"
    }

    public let opened: OpenedStore
    public let notes: [StoreNote]
    public var full = false
    public var limit = 20

    public init(opened: OpenedStore, notes: [StoreNote] = []) {
        self.opened = opened
        self.notes = notes
    }

    var connection: Connection { opened.connection }
    var path: String { opened.displayPath }

    /// Runs every check (or the `only` ones) and returns the findings, errors first.
    public func run(only: Set<Check>? = nil) throws -> [Finding] {
        func wanted(_ c: Check) -> Bool { only?.contains(c) ?? true }
        var findings: [Finding] = []
        let progress = ProgressReporter.current
        var step: Int64 = 0
        func next(_ name: String) { step += 1; progress.report("checking \(name)", done: step, total: 15, unit: .step) }
        defer { progress.clear() }
        next("integrity")
        if wanted(.sqliteIntegrity) { findings += try integrity() }
        next("the WAL")
        if wanted(.walMissing) || wanted(.walPageSizeMismatch) { findings += walNotes() }
        next("Z_MAX")
        if wanted(.zMax) { findings += try zMax() }
        next("entity rows")
        if wanted(.unknownEntityRows) { findings += try unknownEntityRows() }
        next("tables")
        if wanted(.missingEntityTable) || wanted(.tableWithoutEntity) { findings += try tablesAndEntries() }
        next("to-one relationships")
        if wanted(.danglingToOne) || wanted(.entityKeyMismatch) { findings += try toOneRelationships() }
        next("one-to-one pairs")
        if wanted(.oneToOneMismatch) { findings += try oneToOnePairs() }
        next("join tables")
        if wanted(.orphanJoinRows) { findings += try joinTables() }
        next("required values")
        if wanted(.requiredNull) { findings += try requiredValues() }
        next("uniqueness")
        if wanted(.uniqueDuplicates) { findings += try uniqueness() }
        next("Z_OPT")
        if wanted(.badZOpt) { findings += try zOpt() }
        next("history")
        if wanted(.historyUnknownEntity) || wanted(.historyMissingTransaction) { findings += try history() }
        next("metadata")
        if wanted(.metadataModelMismatch) { findings += Self.metadataModelMismatch(opened) }
        next("external data")
        if wanted(.externalDataMissing) { findings += try externalData() }
        next("CloudKit metadata")
        if wanted(.cloudKitOrphan) { findings += try cloudKit() }
        return findings.filter { f in only.map { $0.contains { $0.rawValue == f.id } } ?? true }.bySeverity
    }

    // MARK: - Helpers

    /// Runs a query whose first column is a primary key; returns the first `limit` and the count.
    func keys(_ sql: String, _ arguments: [DatabaseValue] = []) throws -> (keys: [Int], count: Int) {
        let count = try connection.scalar("SELECT count(*) FROM (\(sql))", arguments).int ?? 0
        guard count > 0 else { return ([], 0) }
        let keys = try connection.rows("SELECT * FROM (\(sql)) LIMIT \(limit)", arguments).compactMap { $0[0].int }
        return (keys, count)
    }

    func inList(_ numbers: [Int]) -> String { numbers.isEmpty ? "NULL" : numbers.map(String.init).joined(separator: ", ") }
    func q(_ name: String) -> String { Identifier.quoted(name) }

    var userEntities: [StoreEntity] { opened.store.entities.filter { $0.kind == .user } }

    func finding(_ check: Check, _ severity: Finding.Severity, entity: String?, _ message: String,
                 evidence: [String: EvidenceValue], explanation: String, suggestion: String?) -> Finding {
        Finding(id: check.rawValue, severity: severity, store: path, entity: entity, message: message,
                evidence: evidence, explanation: explanation, suggestion: suggestion)
    }

    func plural(_ n: Int, _ word: String) -> String { "\(n) \(word)\(n == 1 ? "" : "s")" }

    // MARK: - Checks

    func integrity() throws -> [Finding] {
        let result = try connection.integrityCheck(full: full, maxErrors: limit)
        guard result != ["ok"] else { return [] }
        return [finding(.sqliteIntegrity, .error, entity: nil,
                        "SQLite's \(full ? "integrity_check" : "quick_check") reports \(plural(result.count, "problem")).",
                        evidence: ["problems": .list(result.map(EvidenceValue.string))],
                        explanation: "The database file itself is damaged; Core Data may crash or lose rows reading it.",
                        suggestion: "Copy the store off the device again; if the damage is in the device's copy, recover rows with `storelens wal --as-of` or a SQLite recovery tool on a copy.")]
    }

    func walNotes() -> [Finding] {
        notes.compactMap { note in
            switch note {
            case .walModeWithoutWAL(let shmPresent):
                // Without a -shm either, the store was most likely closed cleanly: nothing to report.
                guard shmPresent else { return nil }
                return finding(.walMissing, .warning, entity: nil, "The header says WAL mode and a -shm came with the store, but its -wal did not.",
                               evidence: [:], explanation: "Transactions not yet checkpointed live only in the -wal; without it the store shows an older state.",
                               suggestion: "Copy the store again together with its -wal and -shm files.")
            case .walPageSizeMismatch(let wal, let db):
                return finding(.walPageSizeMismatch, .error, entity: nil, "The -wal has \(wal)-byte pages but the database has \(db)-byte pages; it was ignored.",
                               evidence: ["walPageSize": .int(wal), "databasePageSize": .int(db)],
                               explanation: "A -wal from another database would silently produce wrong answers; the checks ran on the main file alone.",
                               suggestion: "Find the -wal that belongs to this database (copied at the same moment).")
            default:
                return nil
            }
        }
    }

    func zMax() throws -> [Finding] {
        var result: [Finding] = []
        for e in opened.store.entities where e.superNumber == 0 && e.tableExists {
            let zMax = e.zMax ?? 0
            let (keys, count) = try self.keys(InvariantQueries.aboveZMax(table: e.table), [.integer(Int64(zMax))])
            guard count > 0 else { continue }
            let maxPK = try connection.scalar("SELECT max(Z_PK) FROM \(q(e.table))").int ?? 0
            result.append(finding(.zMax, .error, entity: e.name,
                                  "Z_MAX of \(e.name) is \(zMax) but \(e.table) holds \(plural(count, "row")) above it (max Z_PK \(maxPK)).",
                                  evidence: ["zMax": .int(zMax), "maxPK": .int(maxPK), "pks": .keys(keys), "count": .int(count), "table": .string(e.table)],
                                  explanation: "Core Data allocates the next primary key from Z_MAX: the next insert collides with an existing row and the save fails or the app crashes.",
                                  suggestion: "`storelens repair --only zmax-below-max-pk` raises Z_MAX to \(maxPK)."))
        }
        return result
    }

    func unknownEntityRows() throws -> [Finding] {
        var result: [Finding] = []
        for e in opened.store.entities where e.superNumber == 0 && e.tableExists {
            guard try connection.columns(of: e.table).contains(where: { $0.name == "Z_ENT" }) else { continue }
            let (keys, count) = try self.keys("SELECT Z_PK FROM \(q(e.table)) WHERE Z_ENT IS NULL OR Z_ENT NOT IN (\(inList(e.subtreeNumbers))) ORDER BY Z_PK")
            guard count > 0 else { continue }
            let values = try connection.rows("SELECT DISTINCT Z_ENT FROM \(q(e.table)) WHERE Z_ENT IS NULL OR Z_ENT NOT IN (\(inList(e.subtreeNumbers))) LIMIT 10")
                .map { $0[0].int.map(String.init) ?? "NULL" }
            result.append(finding(.unknownEntityRows, .error, entity: e.name,
                                  "\(plural(count, "row")) of \(e.table) carry a Z_ENT outside \(e.name)'s entity tree (\(values.joined(separator: ", "))).",
                                  evidence: ["pks": .keys(keys), "count": .int(count), "zEnt": .list(values.map(EvidenceValue.string)),
                                             "allowed": .list(e.subtreeNumbers.map(EvidenceValue.int))],
                                  explanation: "Core Data cannot say which entity such a row is; fetches skip it or fail.",
                                  suggestion: "Inspect the rows with `storelens rows`; they were written by something other than Core Data."))
        }
        return result
    }

    func tablesAndEntries() throws -> [Finding] {
        var result: [Finding] = []
        for e in userEntities where e.superNumber == 0 && !e.tableExists {
            result.append(finding(.missingEntityTable, .warning, entity: e.name, "Z_PRIMARYKEY lists \(e.name) but its table \(e.table) does not exist.",
                                  evidence: ["table": .string(e.table), "zEnt": .int(e.number)],
                                  explanation: "A migration was cut short or the table was dropped by hand; fetching the entity fails.",
                                  suggestion: "Compare with a fresh store made by the app; do not hand-create the table."))
        }
        let known = Set(opened.store.entities.map(\.table))
        let joins = Set(opened.map.entities.flatMap { $0.relationships.compactMap(\.joinTable) })
        for table in try connection.tableNames() where table.hasPrefix("Z") && !table.hasPrefix("Z_") && !known.contains(table) {
            result.append(finding(.tableWithoutEntity, .warning, entity: nil, "Table \(table) looks like an entity table but no Z_PRIMARYKEY entry names it.",
                                  evidence: ["table": .string(table), "rows": .int(try connection.scalar("SELECT count(*) FROM \(q(table))").int ?? 0)],
                                  explanation: "Left over from a removed entity, or made by hand; Core Data ignores it.",
                                  suggestion: nil))
        }
        for table in try connection.tableNames() where table.hasPrefix("Z_") && table.dropFirst(2).first?.isNumber == true && !joins.contains(table) {
            result.append(finding(.tableWithoutEntity, .info, entity: nil, "Join table \(table) matches no many-to-many relationship of the model.",
                                  evidence: ["table": .string(table)], explanation: "Left over from a removed relationship; Core Data ignores it.", suggestion: nil))
        }
        return result
    }

    /// Declared relationships of each entity (inherited ones are checked at their declaring entity).
    var declaredRelationships: [(EntityMapping, RelationshipMapping)] { InvariantQueries.declaredRelationships(opened.map) }

    func mapping(_ name: String) -> EntityMapping? { opened.map.entity(named: name) }

    func toOneRelationships() throws -> [Finding] {
        var result: [Finding] = []
        for (source, r) in declaredRelationships where r.kind == .toOne {
            guard let column = r.column, source.tableExists, let dest = mapping(r.relationship.destination), dest.tableExists else { continue }
            let (keys, count) = try self.keys(InvariantQueries.danglingToOne(source: source, column: column, dest: dest))
            if count > 0 {
                result.append(finding(.danglingToOne, .error, entity: source.entity.name,
                                      "\(plural(count, "row")) of \(source.entity.name) point through \(r.relationship.name) at \(dest.entity.name) rows that do not exist.",
                                      evidence: ["relationship": .string(r.relationship.name), "column": .string(column), "pks": .keys(keys), "count": .int(count)],
                                      explanation: "Core Data declares no foreign keys, so SQLite accepts them; the app faults on the missing object (\"CoreData could not fulfill a fault\").",
                                      suggestion: "`storelens repair --only dangling-to-one` sets these relationships to nil."))
            }
            if let fek = r.entityKeyColumn {
                let (keys, count) = try self.keys(InvariantQueries.entityKeyMismatch(source: source, column: column, entityKey: fek, dest: dest))
                if count > 0 {
                    result.append(finding(.entityKeyMismatch, .error, entity: source.entity.name,
                                          "\(plural(count, "row")) of \(source.entity.name) record the wrong entity of their \(r.relationship.name) target in \(fek).",
                                          evidence: ["relationship": .string(r.relationship.name), "column": .string(fek), "pks": .keys(keys), "count": .int(count)],
                                          explanation: "Core Data builds the target's object ID from this column; a wrong value points at another entity's row.",
                                          suggestion: "`storelens repair --only fek-mismatch` copies the target row's Z_ENT into \(fek)."))
                }
            }
        }
        return result
    }

    func oneToOnePairs() throws -> [Finding] {
        var result: [Finding] = []
        for (source, r) in declaredRelationships where r.kind == .toOne {
            guard let inverseName = r.relationship.inverse, let column = r.column, let dest = mapping(r.relationship.destination),
                  let inverse = dest.relationships.first(where: { $0.relationship.name == inverseName }), inverse.kind == .toOne,
                  let inverseColumn = inverse.column, source.tableExists, dest.tableExists,
                  // Check each pair once, from the side whose name sorts first.
                  (source.entity.name, r.relationship.name) < (dest.entity.name, inverseName) else { continue }
            let (keys, count) = try self.keys(InvariantQueries.oneToOneMismatch(source: source, column: column, dest: dest, inverseColumn: inverseColumn))
            guard count > 0 else { continue }
            result.append(finding(.oneToOneMismatch, .warning, entity: source.entity.name,
                                  "\(plural(count, "row")) of \(source.entity.name) point at \(dest.entity.name) through \(r.relationship.name), but \(inverseName) does not point back.",
                                  evidence: ["relationship": .string(r.relationship.name), "inverse": .string(inverseName), "pks": .keys(keys), "count": .int(count)],
                                  explanation: "Both sides of a one-to-one relationship hold a foreign key; when they disagree, what the app sees depends on which side it asks.",
                                  suggestion: "`storelens repair --only one-to-one-mismatch` makes \(inverseName) point back."))
        }
        return result
    }

    func joinTables() throws -> [Finding] {
        var result: [Finding] = []
        var seen = Set<String>()
        for (source, r) in declaredRelationships where r.kind == .manyToMany {
            guard let join = r.joinTable, let sc = r.joinSourceColumn, let dc = r.joinDestinationColumn,
                  seen.insert(join).inserted, let dest = mapping(r.relationship.destination),
                  try connection.tableExists(join) else { continue }
            let sql = InvariantQueries.orphanJoinRows(join: join, sourceColumn: sc, source: source, destColumn: dc, dest: dest)
            let (_, count) = try keys(sql)
            guard count > 0 else { continue }
            let pairs = try connection.rows("SELECT \(q(sc)), \(q(dc)) FROM \(q(join)) WHERE rowid IN (\(sql)) LIMIT \(limit)")
                .map { EvidenceValue.string("\($0[0].int.map(String.init) ?? "NULL")→\($0[1].int.map(String.init) ?? "NULL")") }
            result.append(finding(.orphanJoinRows, .error, entity: source.entity.name,
                                  "\(plural(count, "row")) of join table \(join) (\(source.entity.name).\(r.relationship.name)) point at rows that do not exist.",
                                  evidence: ["joinTable": .string(join), "pairs": .list(pairs), "count": .int(count)],
                                  explanation: "The relationship faults on the missing side when the app walks it.",
                                  suggestion: "`storelens repair --only orphan-join-rows` deletes these join rows."))
        }
        return result
    }

    func requiredValues() throws -> [Finding] {
        var result: [Finding] = []
        for e in opened.map.entities where e.tableExists {
            guard let owner = mapping(e.entity.name) else { continue }
            for a in e.attributes where a.declaredBy == e.entity.name && !a.attribute.isOptional && !a.attribute.isTransient {
                guard let column = a.column else { continue }
                let (keys, count) = try self.keys("SELECT Z_PK FROM \(q(e.table)) WHERE Z_ENT IN (\(inList(owner.entityNumbers))) AND \(q(column)) IS NULL ORDER BY Z_PK")
                guard count > 0 else { continue }
                result.append(finding(.requiredNull, .warning, entity: e.entity.name,
                                      "\(plural(count, "row")) of \(e.entity.name) have no value for the required attribute \(a.attribute.name).",
                                      evidence: ["attribute": .string(a.attribute.name), "pks": .keys(keys), "count": .int(count)],
                                      explanation: "Core Data validates required attributes on save: the next save that touches these rows fails.",
                                      suggestion: "Give them a value in the app, or make the attribute optional in the model."))
            }
            for r in e.relationships where r.declaredBy == e.entity.name && r.kind == .toOne && (!r.relationship.isOptional || r.relationship.minCount > 0) {
                guard let column = r.column else { continue }
                let (keys, count) = try self.keys("SELECT Z_PK FROM \(q(e.table)) WHERE Z_ENT IN (\(inList(owner.entityNumbers))) AND \(q(column)) IS NULL ORDER BY Z_PK")
                guard count > 0 else { continue }
                result.append(finding(.requiredNull, .warning, entity: e.entity.name,
                                      "\(plural(count, "row")) of \(e.entity.name) have no \(r.relationship.name), which the model requires.",
                                      evidence: ["relationship": .string(r.relationship.name), "pks": .keys(keys), "count": .int(count)],
                                      explanation: "Core Data validates required relationships on save: the next save that touches these rows fails.",
                                      suggestion: nil))
            }
        }
        return result
    }

    func uniqueness() throws -> [Finding] {
        var result: [Finding] = []
        for e in opened.map.entities where e.tableExists {
            for constraint in e.entity.uniqueConstraints {
                guard let columns = InvariantQueries.uniqueColumns(e, constraint) else { continue }
                let groupCount = try connection.scalar("SELECT count(*) FROM (\(InvariantQueries.duplicateGroups(entity: e, columns: columns)))").int ?? 0
                guard groupCount > 0 else { continue }
                let (keys, count) = try self.keys(InvariantQueries.duplicateRows(entity: e, columns: columns))
                result.append(finding(.uniqueDuplicates, .error, entity: e.entity.name,
                                      "\(plural(groupCount, "value")) of \(constraint.joined(separator: ", ")) appear more than once in \(e.entity.name) (\(count) rows).",
                                      evidence: ["constraint": .list(constraint.map(EvidenceValue.string)), "pks": .keys(keys), "count": .int(count), "groups": .int(groupCount)],
                                      explanation: "The model promises these values are unique; Core Data merges or fails saves on such rows, and SwiftData's upserts pick one at random.",
                                      suggestion: "`storelens repair --only unique-duplicates` keeps one row per value (highest Z_OPT, then highest Z_PK; --keep to choose)."))
            }
        }
        return result
    }

    func zOpt() throws -> [Finding] {
        var result: [Finding] = []
        for e in userEntities where e.superNumber == 0 && e.tableExists {
            guard try connection.columns(of: e.table).contains(where: { $0.name == "Z_OPT" }) else { continue }
            let (keys, count) = try self.keys(InvariantQueries.badZOpt(table: e.table))
            guard count > 0 else { continue }
            result.append(finding(.badZOpt, .warning, entity: e.name, "\(plural(count, "row")) of \(e.table) have a NULL or non-positive Z_OPT.",
                                  evidence: ["pks": .keys(keys), "count": .int(count)],
                                  explanation: "Z_OPT is Core Data's optimistic-lock version; rows written by hand without it can make saves fail with merge conflicts.",
                                  suggestion: nil))
        }
        return result
    }

    func history() throws -> [Finding] {
        guard try connection.tableExists("ACHANGE") else { return [] }
        var result: [Finding] = []
        let changeColumns = Set(try connection.columns(of: "ACHANGE").map(\.name))
        if changeColumns.contains("ZENTITY") {
            let (keys, count) = try self.keys("SELECT Z_PK FROM ACHANGE WHERE ZENTITY IS NULL OR ZENTITY NOT IN (SELECT Z_ENT FROM Z_PRIMARYKEY) ORDER BY Z_PK")
            if count > 0 {
                result.append(finding(.historyUnknownEntity, .warning, entity: nil, "\(plural(count, "history change")) name an entity that Z_PRIMARYKEY does not have.",
                                      evidence: ["changes": .keys(keys), "count": .int(count)],
                                      explanation: "History consumers (other processes, CloudKit export) cannot map these changes to objects.",
                                      suggestion: nil))
            }
        }
        if changeColumns.contains("ZTRANSACTIONID"), try connection.tableExists("ATRANSACTION") {
            let (keys, count) = try self.keys("SELECT c.Z_PK FROM ACHANGE c WHERE NOT EXISTS (SELECT 1 FROM ATRANSACTION t WHERE t.Z_PK = c.ZTRANSACTIONID) ORDER BY c.Z_PK")
            if count > 0 {
                result.append(finding(.historyMissingTransaction, .warning, entity: nil, "\(plural(count, "history change")) belong to transactions that do not exist.",
                                      evidence: ["changes": .keys(keys), "count": .int(count)],
                                      explanation: "History was trimmed by hand or partially; consumers fetching by transaction miss these changes.",
                                      suggestion: nil))
            }
        }
        return result
    }

    /// Version hashes in Z_METADATA name the entities of the model that last wrote metadata; the
    /// cached model names those of the model that last opened the store. They should agree.
    public static func metadataModelMismatch(_ o: OpenedStore) -> [Finding] {
        guard o.model.source == .cache else { return [] }
        let hashed = Set(o.store.metadata.versionHashes.keys)
        let cached = Set(o.model.entities.map(\.name))
        guard !hashed.isEmpty, hashed != cached else { return [] }
        return [Finding(
            id: Check.metadataModelMismatch.rawValue, severity: .warning, store: o.displayPath, entity: nil,
            message: "Z_METADATA's version hashes and the cached model name different entities.",
            evidence: ["onlyInMetadata": .list(hashed.subtracting(cached).sorted().map(EvidenceValue.string)),
                       "onlyInModelCache": .list(cached.subtracting(hashed).sorted().map(EvidenceValue.string))],
            explanation: "The model that wrote the metadata differs from the one cached: the next stack to open the store will migrate it.",
            suggestion: "Make every stack that opens the store use the same entities (same names and properties).")]
    }

    func externalData() throws -> [Finding] {
        var result: [Finding] = []
        for e in opened.map.entities where e.tableExists {
            for a in e.attributes where a.declaredBy == e.entity.name && a.attribute.allowsExternalBinaryDataStorage {
                guard let column = a.column else { continue }
                // Only rows whose value is an external reference (marker byte 0x02) are read.
                var missing: [Int] = []
                var count = 0
                let statement = try connection.prepare("SELECT Z_PK, \(q(column)) FROM \(q(e.table)) WHERE Z_ENT IN (\(inList(e.entityNumbers))) AND substr(\(q(column)), 1, 1) = x'02' ORDER BY Z_PK")
                try statement.forEach { row in
                    guard case .binary(let b) = opened.decoder.decode(row[1], as: a.attribute), case .external(let file) = b.storage, !file.exists else { return }
                    count += 1
                    if missing.count < limit, let pk = row[0].int { missing.append(pk) }
                }
                guard count > 0 else { continue }
                result.append(finding(.externalDataMissing, .error, entity: e.entity.name,
                                      "\(plural(count, "row")) of \(e.entity.name) reference external \(a.attribute.name) files that are not in _EXTERNAL_DATA.",
                                      evidence: ["attribute": .string(a.attribute.name), "pks": .keys(missing), "count": .int(count)],
                                      explanation: "The data lives in files beside the store; without them the app reads nil or crashes.",
                                      suggestion: "Copy the store's .<name>_SUPPORT folder off the device too."))
            }
        }
        return result
    }

    func cloudKit() throws -> [Finding] {
        guard try connection.tableExists("ANSCKRECORDMETADATA") else { return [] }
        let columns = Set(try connection.columns(of: "ANSCKRECORDMETADATA").map(\.name))
        guard columns.contains("ZENTITYID"), columns.contains("ZENTITYPK") else { return [] }
        var parts: [String] = []
        for e in userEntities where e.tableExists {
            parts.append("(m.ZENTITYID = \(e.number) AND NOT EXISTS (SELECT 1 FROM \(q(e.table)) t WHERE t.Z_PK = m.ZENTITYPK AND t.Z_ENT = \(e.number)))")
        }
        let known = inList(userEntities.filter(\.tableExists).map(\.number))
        parts.append("(m.ZENTITYID NOT IN (\(known)))")
        let (keys, count) = try self.keys("SELECT m.Z_PK FROM ANSCKRECORDMETADATA m WHERE \(parts.joined(separator: " OR ")) ORDER BY m.Z_PK")
        guard count > 0 else { return [] }
        return [finding(.cloudKitOrphan, .warning, entity: nil, "\(plural(count, "CloudKit record metadata row")) point at rows that no longer exist.",
                        evidence: ["pks": .keys(keys), "count": .int(count)],
                        explanation: "Orphaned mirroring metadata breaks later migrations (UNIQUE constraint failed: ANSCKRECORDMETADATA.ZENTITYID, ZENTITYPK).",
                        suggestion: nil)]
    }
}
