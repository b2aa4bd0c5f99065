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
public struct StoreChecker: @unchecked Sendable {
    /// The named checks, with the finding id each produces.
    public enum Check: String, CaseIterable, Sendable {
        case sqliteIntegrity = "sqlite-integrity"
        case zMax = "zmax-below-max-pk"
        case zMaxExhausted = "zmax-exhausted"
        case unknownEntityRows = "unknown-entity-rows"
        case missingEntityTable = "missing-entity-table"
        case tableWithoutEntity = "table-without-entity"
        case danglingToOne = "dangling-to-one"
        case wrongEntityTarget = "target-wrong-entity"
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
        /// A file in `_EXTERNAL_DATA` that no row's reference names.
        case externalDataUnreferenced = "external-data-unreferenced"
        case cloudKitOrphan = "cloudkit-orphan-metadata"
        case walMissing = "wal-missing"
        case walPageSizeMismatch = "wal-page-size-mismatch"
        /// The WAL view fails SQLite's check while the main file alone passes it.
        case walMismatch = "wal-mismatch"
        /// A check that SQLite could not finish on this store (a malformed page); always reported.
        case checkNotRun = "check-not-run"
    }

    public let opened: OpenedStore
    public let notes: [StoreNote]
    public var full = false
    public var limit = 20
    /// Opens another connection to the same store, so checks can run on two threads; nil runs
    /// them one after another (a point-in-time image in memory has no second connection).
    public var secondConnection: (() throws -> Connection)?
    /// Opens the main file alone, without the -wal; nil when the store came without a usable -wal.
    /// Set, a failing integrity check is compared with the main file's to tell a -wal that does
    /// not belong (or was copied at another moment) from a damaged store.
    public var mainFileOnly: (() throws -> Connection)?
    /// Counts the single-row conditions of several checks in one scan per table (set by `run`).
    var screen: RowScreen?

    public init(opened: OpenedStore, notes: [StoreNote] = []) {
        self.opened = opened
        self.notes = notes
    }

    /// Checks the store `opened` was read from, a working copy: a second connection to the copy
    /// lets the checks run on two threads.
    public init(opened: OpenedStore, copy: WorkingCopy) {
        self.init(opened: opened, notes: copy.notes)
        secondConnection = { try copy.open() }
        let walLeftOut = copy.notes.contains { if case .walPageSizeMismatch = $0 { return true } else { return false } }
        if copy.family.wal != nil && !walLeftOut { mainFileOnly = { try copy.openMainFileOnly() } }
    }

    /// The finding a check gives when SQLite cannot read a table it needs here.
    public static let incompleteID = "check-incomplete"

    static func incomplete(task: String, error: SQLiteError, store: String) -> Finding {
        let statement = error.sql.map { String($0.prefix(160)) }
        return Finding(id: incompleteID, severity: .warning, store: store, entity: nil,
                       message: "The \(task) check could not run: SQLite cannot read a table it needs here (\(error.message)).",
                       evidence: statement.map { ["statement": .string($0)] } ?? [:],
                       explanation: "A virtual table whose module or tokenizer only Apple's frameworks register cannot be read outside them; the other checks ran.",
                       suggestion: "`storelens inspect` names the table; nothing is wrong with the store for that reason alone.")
    }

    /// The finding id that says a store is plain SQLite, so Core Data's invariants do not apply.
    public static let notCoreDataID = "not-core-data"

    /// The information finding `check` and `report` give a plain SQLite database.
    public static func notCoreData(displayPath: String) -> Finding {
        Finding(id: notCoreDataID, severity: .info, store: displayPath, entity: nil,
                message: "This is a plain SQLite database, not a Core Data store: only SQLite's own integrity check applies.",
                evidence: [:], explanation: "It has no Z_PRIMARYKEY and Z_METADATA tables, so Core Data's invariants have nothing to check.",
                suggestion: "`storelens inspect` counts its tables.")
    }

    /// `check` on a plain SQLite database (an iOS backup's Manifest.db, Photos' search index):
    /// SQLite's own check, and the information that Core Data's checks do not apply.
    public static func plainSQLite(_ copy: WorkingCopy, displayPath: String, full: Bool) throws -> [Finding] {
        let connection = try copy.open()
        var findings: [Finding] = []
        let result = try connection.integrityCheck(full: full, maxErrors: 20)
        if result != ["ok"] {
            findings.append(Finding(id: Check.sqliteIntegrity.rawValue, severity: .error, store: displayPath, entity: nil,
                                    message: "SQLite's \(full ? "integrity_check" : "quick_check") reports \(plural(result.count, "problem")).",
                                    evidence: ["problems": .list(result.map(EvidenceValue.string))],
                                    explanation: "The database file itself is damaged.",
                                    suggestion: "Copy the database off the device again."))
        }
        findings.append(notCoreData(displayPath: displayPath))
        return findings
    }

    var connection: Connection { opened.connection }
    var path: String { opened.displayPath }

    /// One unit of checking: the checks it answers and how to run them on a checker.
    struct Task: Sendable {
        let name: String
        let checks: [Check]
        /// Rough cost on a large store (measured on the bench store), so the slow ones start first.
        let cost: Int
        /// Runs only on the first connection (it reads external files through the value decoder).
        var firstConnectionOnly = false
        let body: @Sendable (StoreChecker) throws -> [Finding]
    }

    /// Every check, in the order findings are reported.
    static let tasks: [Task] = [
        Task(name: "integrity", checks: [.sqliteIntegrity, .walMismatch], cost: 100) { try $0.integrity() },
        Task(name: "the WAL", checks: [.walMissing, .walPageSizeMismatch], cost: 0) { $0.walNotes() },
        Task(name: "Z_MAX", checks: [.zMax, .zMaxExhausted], cost: 5) { try $0.zMax() },
        Task(name: "entity rows", checks: [.unknownEntityRows], cost: 80) { try $0.unknownEntityRows() },
        Task(name: "tables", checks: [.missingEntityTable, .tableWithoutEntity], cost: 2) { try $0.tablesAndEntries() },
        Task(name: "to-one relationships", checks: [.danglingToOne, .wrongEntityTarget, .entityKeyMismatch], cost: 90) { try $0.toOneRelationships() },
        Task(name: "one-to-one pairs", checks: [.oneToOneMismatch], cost: 10) { try $0.oneToOnePairs() },
        Task(name: "join tables", checks: [.orphanJoinRows], cost: 95) { try $0.joinTables() },
        Task(name: "required values", checks: [.requiredNull], cost: 3) { try $0.requiredValues() },
        Task(name: "uniqueness", checks: [.uniqueDuplicates], cost: 10) { try $0.uniqueness() },
        Task(name: "Z_OPT", checks: [.badZOpt], cost: 3) { try $0.zOpt() },
        Task(name: "history", checks: [.historyUnknownEntity, .historyMissingTransaction], cost: 40) { try $0.history() },
        Task(name: "metadata", checks: [.metadataModelMismatch], cost: 0) { StoreChecker.metadataModelMismatch($0.opened) },
        Task(name: "external data", checks: [.externalDataMissing, .externalDataUnreferenced], cost: 5, firstConnectionOnly: true) { try $0.externalData() },
        Task(name: "CloudKit metadata", checks: [.cloudKitOrphan], cost: 5) { try $0.cloudKit() },
    ]

    /// Runs every check (or the `only` ones) and returns the findings, errors first.
    ///
    /// With a second connection the checks run on two threads, the slowest first, each thread
    /// taking the next check when it is done; findings come back in the same order either way.
    public func run(only: Set<Check>? = nil) throws -> [Finding] {
        func wanted(_ c: Check) -> Bool { only?.contains(c) ?? true }
        return try screened(only: only).runTasks(Self.tasks.filter { $0.checks.contains(where: wanted) }, only: only)
    }

    /// What the integrity task found, and whether that proves the tables the `-wal` changed sound.
    public struct IntegrityOutcome: Sendable {
        /// The findings `run()` gives for `sqlite-integrity` and `wal-mismatch` (or `check-not-run`).
        public let findings: [Finding]
        /// `quick_check` passed and every table the `-wal` changed (`WALAgreement.changedTables`)
        /// agrees with each of its indexes, row by row: SQLite's `integrity_check(T)` says "ok" for
        /// each, so the quick, page-wise comparison `inspect` makes of the same tables can find
        /// nothing either. False whenever that was not shown (no usable `-wal`, `--full`, a failure).
        public let walTablesSound: Bool
    }

    /// `run()` in two parts that may run at the same time on different threads, each on its own
    /// connection: the integrity task (here) and every other check (`runInvariants`).
    /// `merged(integrity:invariants:)` gives exactly `run()`'s findings; where both parts throw,
    /// `run()` throws the integrity task's error (it comes first).
    public func runIntegrity() throws -> IntegrityOutcome {
        let stopwatch = Stopwatch()
        defer { Timings.process?.record("check-task=\"integrity\" connection=own seconds=\(stopwatch.seconds)") }
        do {
            let outcome = try integrityOutcome()
            return IntegrityOutcome(findings: outcome.findings.bySeverity, walTablesSound: outcome.walTablesSound)
        } catch let error as SQLiteError where error.isCorrupt || error.isNotADatabase {
            // As `runTasks` does: a malformed page stops this check, and says so.
            return IntegrityOutcome(findings: [notRun(Self.tasks[0], error)], walTablesSound: false)
        }
    }

    /// Every check but the integrity task, as `run()` runs them (on two connections when it has a second).
    public func runInvariants() throws -> [Finding] {
        try screened(only: nil).runTasks(Self.tasks.filter { !$0.checks.contains(.sqliteIntegrity) }, only: nil)
    }

    /// The two parts' findings in `run()`'s order (errors first, then task order).
    public static func merged(integrity: [Finding], invariants: [Finding]) -> [Finding] {
        (integrity + invariants).bySeverity
    }

    /// This checker with the row screen for the wanted checks.
    private func screened(only: Set<Check>?) -> StoreChecker {
        func wanted(_ c: Check) -> Bool { only?.contains(c) ?? true }
        var screened: [InvariantQueries.RowCondition] = []
        // The row screen only saves scans; a table it cannot read is left to the check itself.
        if wanted(.unknownEntityRows) { screened += ((try? unknownEntityConditions()) ?? []).map(\.1) }
        if wanted(.requiredNull) { screened += requiredConditions().map(\.condition) }
        if wanted(.badZOpt) { screened += ((try? zOptConditions()) ?? []).map(\.1) }
        if wanted(.historyUnknownEntity) { screened += (try? historyConditions()) ?? [] }
        var checker = self
        checker.screen = RowScreen(screened)
        return checker
    }

    private func runTasks(_ tasks: [Task], only: Set<Check>?) throws -> [Finding] {
        let queue = CheckQueue(tasks: tasks, progress: ProgressReporter.current)
        defer { queue.progress.clear() }
        let parallel = tasks.filter { !$0.firstConnectionOnly && $0.cost > 0 }.count >= 2
        if parallel, let second = try? secondConnection?() {
            // The second connection is released by the worker before it signals: nothing of it
            // outlives this call.
            let worker = Worker(checker: sibling(on: second), queue: queue)
            queue.drain(with: self, firstConnection: true)
            worker.join()
        } else {
            queue.drain(with: self, firstConnection: true)
        }
        if let timings = Timings.process {
            for t in queue.timings {
                timings.record("check-task=\"\(t.task)\" connection=\(t.connection) seconds=\(Stopwatch.seconds(of: t.duration))")
            }
        }
        var findings: [Finding] = []
        for (task, outcome) in queue.finished() {
            switch outcome {
            case .success(let found): findings += found
            case .failure(let error as SQLiteError) where error.isCorrupt || error.isNotADatabase:
                // A malformed page stops this check, not the others: say which check could not run.
                findings.append(notRun(task, error))
            case .failure(let error): throw error
            }
        }
        return findings.filter { f in f.id == Check.checkNotRun.rawValue || (only.map { $0.contains { $0.rawValue == f.id } } ?? true) }.bySeverity
    }

    /// This checker on another connection to the same store (for a part run on another thread).
    public func on(_ connection: Connection) -> StoreChecker { sibling(on: connection) }

    /// This checker on another connection to the same store.
    private func sibling(on connection: Connection) -> StoreChecker {
        var other = StoreChecker(opened: OpenedStore(displayPath: opened.displayPath, connection: connection, store: opened.store,
                                                     map: opened.map, decoder: opened.decoder), notes: notes)
        other.full = full
        other.limit = limit
        other.mainFileOnly = mainFileOnly
        other.secondConnection = secondConnection
        other.screen = screen
        return other
    }

    // MARK: - Helpers

    /// Runs a query whose first column is a primary key; returns the first `limit` and the count.
    func keys(_ sql: String, _ arguments: [DatabaseValue] = []) throws -> (keys: [Int], count: Int) {
        let count = try connection.scalar("SELECT count(*) FROM (\(sql))", arguments).int ?? 0
        guard count > 0 else { return ([], 0) }
        let keys = try connection.rows("SELECT * FROM (\(sql)) LIMIT \(limit)", arguments).compactMap { Self.key($0[0]) }
        return (keys, count)
    }

    /// A primary key as stored: an integer, or the integer a text key spells (a table rebuilt by
    /// a CSV import holds Z_PK as TEXT '1' … '57').
    static func key(_ value: DatabaseValue) -> Int? {
        value.int ?? value.string.flatMap { Int($0.trimmingCharacters(in: .whitespaces)) }
    }

    /// A stored key value for a message: 1, '1' (text), NULL.
    static func spelled(_ value: DatabaseValue) -> String {
        if let i = value.int { return String(i) }
        if let s = value.string { return "'\(String(s.prefix(40)))' (text)" }
        return value.isNull ? "NULL" : "a blob"
    }

    /// The rows meeting `condition`: counted by the row screen when it has the condition (one scan
    /// of the table for all its conditions), listed only when there are any.
    func keys(_ condition: InvariantQueries.RowCondition) throws -> (keys: [Int], count: Int) {
        guard let screen, let count = try screen.count(condition, on: connection) else { return try keys(condition.rows) }
        // The screen counted with the same condition text: only the first keys are left to list.
        guard count > 0 else { return ([], 0) }
        let keys = try connection.rows("SELECT * FROM (\(condition.rows)) LIMIT \(limit)").compactMap { Self.key($0[0]) }
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

    // MARK: - Checks

    func integrity() throws -> [Finding] { try integrityOutcome().findings }

    func integrityOutcome() throws -> (findings: [Finding], walTablesSound: Bool) {
        // Row by row: a check that meets a malformed page still reports what it found before it.
        var result = WALAgreement.integrity(connection, full: full, maxErrors: limit)
        var changed: [String] = []
        var mainOnly: Connection?
        if result == ["ok"], !full, let mainFileOnly, let main = try? mainFileOnly() {
            // quick_check does not compare an index with its table: check the tables the WAL
            // changed in full, which is what a -wal copied after a missed checkpoint breaks
            // (`--full`'s integrity_check has compared them all already).
            mainOnly = main
            changed = WALAgreement.changedTables(walView: connection, mainOnly: main)
            let limit = self.limit
            result = TableWork.each(changed, on: connection, second: secondConnection) { connection, table in
                WALAgreement.tableIntegrity(connection, table: table, structureChecked: true, maxErrors: limit)
            }.flatMap { $0 }.filter { $0 != "ok" }
            if result.isEmpty { return ([], true) }
        }
        guard result != ["ok"] else { return ([], false) }
        var findings: [Finding] = []
        if let main = try mainOnly ?? mainFileOnly?(),
           let disagreement = WALAgreement.compare(walView: connection, mainOnly: main, tables: changed, full: full, walViewProblems: result) {
            findings.append(finding(.walMismatch, .error, entity: nil,
                                    "The -wal does not belong to this main file, or the two were copied at different moments: with the -wal applied SQLite's integrity check fails while the main file alone passes it.",
                                    evidence: ["walViewProblems": .list(disagreement.walView.map(EvidenceValue.string)),
                                               "tables": .list(changed.map(EvidenceValue.string))],
                                    explanation: "Its frames were written against another state of the main file (the commonest way: `cp default.store*` while the app runs, the app checkpointing between the main file and the -wal). SQLite applies such a -wal without an error and shows rows the indexes and Z_MAX do not know; the other findings may come from the mismatch, not from the app.",
                                    suggestion: "Copy the main file, -wal and -shm again at one moment (quit the app first, or copy the whole container); the main file alone (`storelens inspect --as-of 0`) is a consistent older state."))
        }
        findings.append(finding(.sqliteIntegrity, .error, entity: nil,
                                "SQLite's \(full || !changed.isEmpty ? "integrity_check" : "quick_check") reports \(plural(result.count, "problem"))\(changed.isEmpty ? "" : " in the tables the -wal changed (\(changed.joined(separator: ", ")))").",
                                evidence: ["problems": .list(result.map(EvidenceValue.string))],
                                explanation: findings.isEmpty ? "The database file itself is damaged; Core Data may crash or lose rows reading it."
                                                              : "The image SQLite builds from the main file and the -wal is inconsistent; Core Data may crash or lose rows reading it.",
                                suggestion: "Copy the store off the device again; if the damage is in the device's copy, recover rows with `storelens wal --as-of` or a SQLite recovery tool on a copy."))
        return (findings, false)
    }

    /// A check SQLite could not finish: reported, so a store that could not be checked is never
    /// mistaken for a clean one.
    func notRun(_ task: Task, _ error: SQLiteError) -> Finding {
        finding(.checkNotRun, .error, entity: nil,
                "The check of \(task.name) (\(task.checks.map(\.rawValue).joined(separator: ", "))) could not run: SQLite says \(error.message).",
                evidence: ["checks": .list(task.checks.map { .string($0.rawValue) })],
                explanation: "SQLite met a page it cannot read while running this check, so nothing is known about what it checks.",
                suggestion: "See the sqlite-integrity and wal-mismatch findings; copy the store off the device again.")
    }

    func walNotes() -> [Finding] {
        notes.compactMap { note in
            switch note {
            case .walModeWithoutWAL(let shmPresent):
                // Without a -shm either, the store was most likely closed cleanly: nothing to report.
                guard shmPresent else { return nil }
                return note.missingWALFinding(store: path)
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
            // A device can store any value; at the top of the range no key is left to allocate.
            let highest = max(Int64(zMax), try connection.scalar("SELECT max(Z_PK) FROM \(q(e.table))").int64 ?? 0)
            if highest == Int64.max {
                result.append(finding(.zMaxExhausted, .error, entity: e.name,
                                      "Z_MAX or a Z_PK of \(e.name) is \(highest), SQLite's largest integer: no primary key is left for the next \(e.name) insert.",
                                      evidence: ["zMax": .int(zMax), "highest": .int(Int(highest)), "table": .string(e.table)],
                                      explanation: "Core Data allocates new primary keys above Z_MAX; above the largest integer there are none, so inserting into this entity cannot succeed.",
                                      suggestion: "No automatic repair: renumbering primary keys would break every reference to them. Look at the row with `storelens rows`."))
            }
            let (keys, count) = try self.keys(InvariantQueries.aboveZMax(table: e.table), [.integer(Int64(zMax))])
            guard count > 0 else { continue }
            let integerMax = try connection.scalar("SELECT max(Z_PK) FROM \(q(e.table)) WHERE typeof(Z_PK) = 'integer'").int ?? 0
            // Keys stored as text compare above every integer in SQLite: describe them as they are.
            let text = try connection.rows("SELECT count(*), max(CAST(Z_PK AS INTEGER)) FROM \(q(e.table)) WHERE typeof(Z_PK) = 'text'").first
            let textKeys = text?[0].int ?? 0
            let textMax = text?[1].int ?? 0
            let maxPK = max(integerMax, textMax)
            var evidence: [String: EvidenceValue] = ["zMax": .int(zMax), "maxPK": .int(maxPK), "pks": .keys(keys), "count": .int(count), "table": .string(e.table)]
            var detail = "max Z_PK \(maxPK)"
            if textKeys > 0 {
                evidence["textKeys"] = .int(textKeys)
                detail = textKeys == count
                    ? "their Z_PK is stored as text, keys up to '\(textMax)'"
                    : "\(plural(textKeys, "row")) with Z_PK stored as text, up to '\(textMax)'; max integer Z_PK \(integerMax)"
            }
            result.append(finding(.zMax, .error, entity: e.name,
                                  "Z_MAX of \(e.name) is \(zMax) but \(e.table) holds \(plural(count, "row")) above it (\(detail)).",
                                  evidence: evidence,
                                  explanation: "Core Data allocates the next primary key from Z_MAX: the next insert collides with an existing row and the save fails or the app crashes.",
                                  suggestion: "`storelens repair --only zmax-below-max-pk` raises Z_MAX to \(maxPK)."))
        }
        return result
    }

    /// Each root entity's table with a Z_ENT column, and the condition its stray rows meet.
    func unknownEntityConditions() throws -> [(StoreEntity, InvariantQueries.RowCondition)] {
        try opened.store.entities.filter { $0.superNumber == 0 && $0.tableExists }.compactMap { e in
            try connection.columns(of: e.table).contains(where: { $0.name == "Z_ENT" })
                ? (e, InvariantQueries.unknownEntity(table: e.table, allowed: e.subtreeNumbers)) : nil
        }
    }

    func unknownEntityRows() throws -> [Finding] {
        var result: [Finding] = []
        for (e, condition) in try unknownEntityConditions() {
            let (keys, count) = try self.keys(condition)
            guard count > 0 else { continue }
            let values = try connection.rows("SELECT DISTINCT Z_ENT FROM \(q(condition.table)) NOT INDEXED WHERE \(condition.condition) LIMIT 10")
                .map { Self.spelled($0[0]) }
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
            let wrong = InvariantQueries.wrongEntityTarget(source: source, column: column, dest: dest)
            let (wrongKeys, wrongCount) = try self.keys(wrong)
            if wrongCount > 0 {
                let targetsSQL = "SELECT s.\(q(column)) FROM \(q(source.table)) s WHERE s.Z_PK IN (\(wrong))"
                let values = try connection.rows("SELECT DISTINCT t.Z_ENT FROM \(q(dest.table)) t WHERE t.Z_PK IN (\(targetsSQL)) LIMIT 10")
                    .map { $0[0].int.map(String.init) ?? "NULL" }
                let targets = try connection.scalar("SELECT count(DISTINCT s.\(q(column))) FROM \(q(source.table)) s WHERE s.Z_PK IN (\(wrong))").int ?? 0
                result.append(finding(.wrongEntityTarget, .error, entity: source.entity.name,
                                      "\(plural(wrongCount, "row")) of \(source.entity.name) point through \(r.relationship.name) at \(plural(targets, "row")) of \(dest.table) that exist but carry Z_ENT \(values.joined(separator: ", ")), not \(dest.entity.name)'s (\(dest.entityNumbers.map(String.init).joined(separator: ", "))).",
                                      evidence: ["relationship": .string(r.relationship.name), "column": .string(column), "pks": .keys(wrongKeys), "count": .int(wrongCount),
                                                 "targets": .int(targets), "targetZEnt": .list(values.map(EvidenceValue.string)),
                                                 "expected": .list(dest.entityNumbers.map(EvidenceValue.int))],
                                      explanation: "The target rows are there, but Core Data reads them as another entity (or none) and the relationship faults; the references themselves are valid, so setting them to nil would lose data.",
                                      suggestion: "`storelens repair --only target-wrong-entity` corrects the targets' Z_ENT when the relationships pointing at them agree on it; otherwise inspect them with `storelens rows`."))
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
            let key = try connection.rowKey(of: join)
            let sql = InvariantQueries.orphanJoinRows(join: join, key: key, sourceColumn: sc, source: source, destColumn: dc, dest: dest)
            let (_, count) = try keys(sql)
            guard count > 0 else { continue }
            let pairs = try connection.rows("SELECT \(q(sc)), \(q(dc)) FROM \(q(join)) WHERE \(InvariantQueries.keyExpression(key)) IN (\(sql)) LIMIT \(limit)")
                .map { EvidenceValue.string("\($0[0].int.map(String.init) ?? "NULL")→\($0[1].int.map(String.init) ?? "NULL")") }
            result.append(finding(.orphanJoinRows, .error, entity: source.entity.name,
                                  "\(plural(count, "row")) of join table \(join) (\(source.entity.name).\(r.relationship.name)) point at rows that do not exist.",
                                  evidence: ["joinTable": .string(join), "pairs": .list(pairs), "count": .int(count)],
                                  explanation: "The relationship faults on the missing side when the app walks it.",
                                  suggestion: "`storelens repair --only orphan-join-rows` deletes these join rows."))
        }
        return result
    }

    /// Required attributes and to-one relationships (at the entity that declares them), each with
    /// the condition its rows without a value meet.
    func requiredConditions() -> [(entity: EntityMapping, attribute: AttributeMapping?, relationship: RelationshipMapping?, condition: InvariantQueries.RowCondition)] {
        var result: [(EntityMapping, AttributeMapping?, RelationshipMapping?, InvariantQueries.RowCondition)] = []
        for e in opened.map.entities where e.tableExists {
            guard let owner = mapping(e.entity.name) else { continue }
            for a in e.attributes where a.declaredBy == e.entity.name && !a.attribute.isOptional && !a.attribute.isTransient {
                guard let column = a.column else { continue }
                result.append((e, a, nil, InvariantQueries.nullColumn(entity: owner, column: column)))
            }
            // Optional wins over a minimum count (Photos' GenericAlbum.keyAsset: NSIsOptional with
            // NSMinCount 1): the minimum applies only when a value is present.
            for r in e.relationships where r.declaredBy == e.entity.name && r.kind == .toOne && !r.relationship.isOptional {
                guard let column = r.column else { continue }
                result.append((e, nil, r, InvariantQueries.nullColumn(entity: owner, column: column)))
            }
        }
        return result
    }

    func requiredValues() throws -> [Finding] {
        var result: [Finding] = []
        for (e, attribute, relationship, condition) in requiredConditions() {
            let (keys, count) = try self.keys(condition)
            guard count > 0 else { continue }
            if let a = attribute {
                result.append(finding(.requiredNull, .warning, entity: e.entity.name,
                                      "\(plural(count, "row")) of \(e.entity.name) have no value for the required attribute \(a.attribute.name).",
                                      evidence: ["attribute": .string(a.attribute.name), "pks": .keys(keys), "count": .int(count)],
                                      explanation: "Core Data validates required attributes on save: the next save that touches these rows fails.",
                                      suggestion: "Give them a value in the app, or make the attribute optional in the model."))
            } else if let r = relationship {
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

    /// Each user root entity's table with a Z_OPT column, and the condition its bad rows meet.
    func zOptConditions() throws -> [(StoreEntity, InvariantQueries.RowCondition)] {
        try userEntities.filter { $0.superNumber == 0 && $0.tableExists }.compactMap { e in
            try connection.columns(of: e.table).contains(where: { $0.name == "Z_OPT" }) ? (e, InvariantQueries.badZOpt(table: e.table)) : nil
        }
    }

    func zOpt() throws -> [Finding] {
        var result: [Finding] = []
        for (e, condition) in try zOptConditions() {
            let (keys, count) = try self.keys(condition)
            guard count > 0 else { continue }
            result.append(finding(.badZOpt, .warning, entity: e.name, "\(plural(count, "row")) of \(e.table) have a NULL or non-positive Z_OPT.",
                                  evidence: ["pks": .keys(keys), "count": .int(count)],
                                  explanation: "Z_OPT is Core Data's optimistic-lock version; rows written by hand without it can make saves fail with merge conflicts.",
                                  suggestion: nil))
        }
        return result
    }

    /// The history condition a row screen can count, when ACHANGE has the column it needs.
    func historyConditions() throws -> [InvariantQueries.RowCondition] {
        guard try connection.tableExists("ACHANGE"), try connection.columns(of: "ACHANGE").contains(where: { $0.name == "ZENTITY" }) else { return [] }
        return [InvariantQueries.historyUnknownEntity]
    }

    func history() throws -> [Finding] {
        guard try connection.tableExists("ACHANGE") else { return [] }
        var result: [Finding] = []
        let changeColumns = Set(try connection.columns(of: "ACHANGE").map(\.name))
        if changeColumns.contains("ZENTITY") {
            let (keys, count) = try self.keys(InvariantQueries.historyUnknownEntity)
            if count > 0 {
                result.append(finding(.historyUnknownEntity, .warning, entity: nil, "\(plural(count, "history change")) name an entity that Z_PRIMARYKEY does not have.",
                                      evidence: ["changes": .keys(keys), "count": .int(count)],
                                      explanation: "History consumers (other processes, CloudKit export) cannot map these changes to objects.",
                                      suggestion: nil))
            }
        }
        if changeColumns.contains("ZTRANSACTIONID"), try connection.tableExists("ATRANSACTION") {
            let (keys, count) = try self.keys(InvariantQueries.historyMissingTransaction)
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

/// The checks still to run and the results so far, shared by the two threads.
final class CheckQueue: @unchecked Sendable {
    private let lock = NSLock()
    private let tasks: [StoreChecker.Task]
    /// Indices into `tasks`, slowest first.
    private var pending: [Int]
    private var outcomes: [Result<[Finding], Error>?]
    private var started: Int64 = 0
    /// How long each task took and on which connection, for `STORELENS_TIMINGS` (make bench).
    private(set) var timings: [(task: String, connection: Int, duration: Duration)] = []
    let progress: ProgressReporter

    init(tasks: [StoreChecker.Task], progress: ProgressReporter) {
        self.tasks = tasks
        self.progress = progress
        pending = tasks.indices.sorted { tasks[$0].cost > tasks[$1].cost }
        outcomes = Array(repeating: nil, count: tasks.count)
    }

    /// Runs tasks on `checker` until none is left that this connection may run.
    func drain(with checker: StoreChecker, firstConnection: Bool) {
        let clock = ContinuousClock()
        while let index = take(firstConnection: firstConnection) {
            var outcome: Result<[Finding], Error>!
            let took = clock.measure { outcome = Result { try tasks[index].body(checker) } }
            // A table SQLite cannot read here (a virtual table whose module or tokenizer only
            // Apple's frameworks register) stops this check, not the others: it is reported.
            if case .failure(let error as SQLiteError) = outcome, !(error.isCorrupt || error.isNotADatabase) {
                outcome = .success([StoreChecker.incomplete(task: tasks[index].name, error: error, store: checker.opened.displayPath)])
            }
            lock.lock()
            outcomes[index] = outcome
            timings.append((tasks[index].name, firstConnection ? 1 : 2, took))
            lock.unlock()
        }
    }

    private func take(firstConnection: Bool) -> Int? {
        lock.lock()
        defer { lock.unlock() }
        guard let at = pending.firstIndex(where: { firstConnection || !tasks[$0].firstConnectionOnly }) else { return nil }
        let index = pending.remove(at: at)
        started += 1
        progress.report("checking \(tasks[index].name)", done: started, total: Int64(tasks.count), unit: .step)
        return index
    }

    /// Every task that ran with its outcome, in task order.
    func finished() -> [(StoreChecker.Task, Result<[Finding], Error>)] {
        lock.lock()
        defer { lock.unlock() }
        return zip(tasks, outcomes).compactMap { task, outcome in outcome.map { (task, $0) } }
    }

    /// Every task's findings in task order; the first error (in task order) is thrown.
    func results() throws -> [[Finding]] {
        lock.lock()
        defer { lock.unlock() }
        return try outcomes.map { outcome in
            guard let outcome else { return [] }
            return try outcome.get()
        }
    }
}

/// The second thread: drains the queue on its own connection, then lets go of it.
private final class Worker: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    private var checker: StoreChecker?

    init(checker: StoreChecker, queue: CheckQueue) {
        self.checker = checker
        let thread = Thread { [self] in
            if let checker = self.checker { queue.drain(with: checker, firstConnection: false) }
            self.checker = nil
            done.signal()
        }
        thread.name = "storelens.check"
        thread.start()
    }

    func join() { done.wait() }
}

/// Counts rows meeting single-row conditions, scanning each table once for all of its conditions:
/// stray Z_ENT values, NULL required values, bad Z_OPT and history changes naming unknown entities
/// are all questions about each row of the same large tables. The first check to ask about a
/// table counts every condition registered for it; a check on the other thread asking meanwhile
/// waits for that scan instead of making its own.
final class RowScreen: @unchecked Sendable {
    private let state = NSCondition()
    private var byTable: [String: [InvariantQueries.RowCondition]] = [:]
    private var counts: [InvariantQueries.RowCondition: Int] = [:]
    private var scanning: Set<String> = []
    /// SQLite allows 2,000 result columns by default; a hostile table can have more conditions.
    private static let conditionsPerScan = 200

    init(_ conditions: [InvariantQueries.RowCondition]) {
        for condition in conditions where !(byTable[condition.table]?.contains(condition) ?? false) {
            byTable[condition.table, default: []].append(condition)
        }
    }

    /// How many rows meet `condition`, or nil when it was not registered.
    func count(_ condition: InvariantQueries.RowCondition, on connection: Connection) throws -> Int? {
        state.lock()
        defer { state.unlock() }
        guard let all = byTable[condition.table], all.contains(condition) else { return nil }
        while counts[condition] == nil {
            if scanning.contains(condition.table) {
                state.wait()
                continue
            }
            scanning.insert(condition.table)
            state.unlock()
            let result = Result { try Self.scan(condition.table, all, on: connection) }
            state.lock()
            scanning.remove(condition.table)
            state.broadcast()
            // A failed scan leaves no counts: the caller lists the rows itself and meets the error there.
            guard case .success(let found) = result else { return nil }
            for (c, n) in found { counts[c] = n }
        }
        return counts[condition]
    }

    private static func scan(_ table: String, _ conditions: [InvariantQueries.RowCondition],
                             on connection: Connection) throws -> [InvariantQueries.RowCondition: Int] {
        var found: [InvariantQueries.RowCondition: Int] = [:]
        var start = 0
        while start < conditions.count {
            let group = Array(conditions[start..<min(start + conditionsPerScan, conditions.count)])
            let columns = group.map { "count(*) FILTER (WHERE \($0.condition))" }.joined(separator: ", ")
            let row = try connection.rows("SELECT \(columns) FROM \(Identifier.quoted(table)) NOT INDEXED").first
            for (i, c) in group.enumerated() { found[c] = row?[i].int ?? 0 }
            start += group.count
        }
        return found
    }
}

/// One piece of work per table, on two connections at once when a second can be had: the
/// integrity task's comparison of each table the `-wal` changed with its indexes is the longest
/// part of `check` on a large store, and the other checks leave the second core idle long
/// before it ends. Results come back in `tables`' order, whichever connection read a table.
enum TableWork {
    static func each<T>(_ tables: [String], on first: Connection, second: (() throws -> Connection)?,
                        _ body: @escaping @Sendable (Connection, String) -> T) -> [T] {
        guard tables.count > 1, let opened = try? second?() else { return tables.map { body(first, $0) } }
        let shared = Shared<T>(tables: tables, connection: opened)
        let done = DispatchSemaphore(value: 0)
        let worker = Thread { [shared] in
            // Only this thread uses the second connection, and lets go of it before it signals.
            if let connection = shared.connection {
                while let index = shared.take() { shared.put(index, body(connection, tables[index])) }
            }
            shared.connection = nil
            done.signal()
        }
        worker.name = "storelens.check-tables"
        worker.start()
        while let index = shared.take() { shared.put(index, body(first, tables[index])) }
        done.wait()
        return shared.results()
    }

    private final class Shared<T>: @unchecked Sendable {
        private let lock = NSLock()
        private var next = 0
        private var slots: [T?]
        /// The second connection, for the worker thread alone.
        var connection: Connection?
        init(tables: [String], connection: Connection) {
            slots = Array(repeating: nil, count: tables.count)
            self.connection = connection
        }
        func take() -> Int? {
            lock.lock(); defer { lock.unlock() }
            guard next < slots.count else { return nil }
            next += 1
            return next - 1
        }
        func put(_ index: Int, _ value: T) {
            lock.lock(); defer { lock.unlock() }
            slots[index] = value
        }
        func results() -> [T] {
            lock.lock(); defer { lock.unlock() }
            return slots.map { $0! }
        }
    }
}
