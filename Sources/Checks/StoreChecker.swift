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
    /// The tables the `-wal` changed (`WALAgreement.changedTables`), found once for the integrity
    /// task and the row screen, which reads their index side in its scans (set by `run`).
    var walChangedTables: Deferred<[String]?>?
    /// Where the integrity task says whether it proved the `-wal`'s tables sound (`runProvingWALTables`).
    var integrityRecord: IntegrityRecord?

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
        return try screened(only: only, integrity: wanted(.sqliteIntegrity)).runTasks(Self.tasks.filter { $0.checks.contains(where: wanted) }, only: only)
    }

    /// `run()`'s findings, and whether its integrity task proved the tables the `-wal` changed
    /// sound (`IntegrityOutcome.walTablesSound`), so the counts `report` makes beside the checks
    /// can take that comparison as made.
    public func runProvingWALTables() throws -> IntegrityOutcome {
        var checker = screened(only: nil, integrity: true)
        let record = IntegrityRecord()
        checker.integrityRecord = record
        let findings = try checker.runTasks(Self.tasks, only: nil)
        return IntegrityOutcome(findings: findings, walTablesSound: record.walTablesSound)
    }

    /// What the integrity task found (or, from `runProvingWALTables`, every check), and whether
    /// that proves the tables the `-wal` changed sound.
    public struct IntegrityOutcome: Sendable {
        /// The findings `run()` gives for `sqlite-integrity` and `wal-mismatch` (or `check-not-run`);
        /// from `runProvingWALTables`, all of `run()`'s.
        public let findings: [Finding]
        /// `quick_check` passed and every table the `-wal` changed (`WALAgreement.changedTables`)
        /// agrees with each of its indexes, row by row: SQLite's `integrity_check(T)` says "ok" for
        /// each, so the quick, page-wise comparison `inspect` makes of the same tables can find
        /// nothing either. False whenever that was not shown (no usable `-wal`, `--full`, a failure).
        public let walTablesSound: Bool
    }

    /// The integrity task alone, on this checker's connection (its findings are `run()`'s for it).
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

    /// This checker with the row screen for the wanted checks.
    /// This checker with the row screen for the wanted checks; `integrity` when the integrity task
    /// runs with it (the screen then reads the index side of the tables the `-wal` changed).
    private func screened(only: Set<Check>?, integrity: Bool) -> StoreChecker {
        func wanted(_ c: Check) -> Bool { only?.contains(c) ?? true }
        var screened: [InvariantQueries.RowCondition] = []
        // The row screen only saves scans; a table it cannot read is left to the check itself.
        if wanted(.unknownEntityRows) { screened += ((try? unknownEntityConditions()) ?? []).map(\.1) }
        if wanted(.requiredNull) { screened += requiredConditions().map(\.condition) }
        if wanted(.badZOpt) { screened += ((try? zOptConditions()) ?? []).map(\.1) }
        if wanted(.historyUnknownEntity) || wanted(.historyMissingTransaction) { screened += (try? historyConditions()) ?? [] }
        if wanted(.danglingToOne) || wanted(.wrongEntityTarget) { screened += toOneConditions() }
        if wanted(.orphanJoinRows) { screened += (try? joinConditions()) ?? [] }
        var checker = self
        if integrity, !full, mainFileOnly != nil, secondConnection != nil {
            // On connections of its own: it runs on whichever thread asks first, while the
            // checker's connections are busy on theirs.
            checker.walChangedTables = Deferred(computing: { [opener = self] in
                // Nil when the connections cannot be had: the integrity task then finds the
                // tables on its own connection, and the screen reads no index side.
                guard let walView = try? opener.secondConnection?(), let main = try? opener.mainFileOnly?() else { return nil }
                return WALAgreement.changedTables(walView: walView, mainOnly: main)
            })
        }
        checker.screen = RowScreen(screened, agreementTables: checker.walChangedTables ?? Deferred(nil))
        return checker
    }

    private func runTasks(_ tasks: [Task], only: Set<Check>?) throws -> [Finding] {
        let queue = CheckQueue(tasks: tasks, progress: ProgressReporter.current)
        defer { queue.progress.clear() }
        let parallel = tasks.filter { !$0.firstConnectionOnly && $0.cost > 0 }.count >= 2
        if parallel, let second = try? secondConnection?() {
            // The second connection is let go of by the thread before its result is posted:
            // nothing of it outlives this call.
            let other = sibling(on: second)
            let worker = BackgroundWork(decodingAsCaller: "storelens.check") { queue.drain(with: other, firstConnection: false) }
            queue.drain(with: self, firstConnection: true)
            worker.result()
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

    /// This checker on another connection to the same store.
    private func sibling(on connection: Connection) -> StoreChecker {
        var other = StoreChecker(opened: OpenedStore(displayPath: opened.displayPath, connection: connection, store: opened.store,
                                                     map: opened.map, decoder: opened.decoder), notes: notes)
        other.full = full
        other.limit = limit
        other.mainFileOnly = mainFileOnly
        other.secondConnection = secondConnection
        other.screen = screen
        other.walChangedTables = walChangedTables
        other.integrityRecord = integrityRecord
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
}

/// What the integrity task proved, written by whichever thread ran it and read after both are done.
final class IntegrityRecord: @unchecked Sendable {
    private let lock = NSLock()
    private var sound = false

    var walTablesSound: Bool {
        get { lock.withLock { sound } }
        set { lock.withLock { sound = newValue } }
    }
}
