import Acquisition
import Checks
import CoreDataStore
import Findings
import Foundation
import ModelReview
import Repair
import SQLiteAccess
import StoreFormats
import WALForensics

/// Reads one store of a report into its section: the counts, the WAL analysis, history, every
/// check, the repair plan (and with the options, lint and the migration).
///
/// The parts read one working copy and do not depend on each other's answers, so by default they
/// run on two threads, each part on connections of its own (`parallel`): SQLite's integrity check
/// and the comparison of every row of the tables the `-wal` changed with their indexes (the
/// longest part) on one, the Core Data checks, history and the WAL analysis on the other. Their
/// results are then put together in the order of the plain sequence (`parallel = false`), which
/// gives the same section: the same findings in the same order, the same problems, the same notes.
/// Where a part would have run differently in that sequence (a store that turns out not to be
/// Core Data), it runs again in it.
public struct StoreReportReader {
    /// `--model`: the Xcode model for the checks.
    public var xcodeModel: URL?
    /// `--lint`: each store's CloudKit lint.
    public var lint = false
    /// `--migration-to`: each store's migration to this model.
    public var migrationTarget: MigrationTarget?
    /// Run the parts on two threads (the default); false runs them one after another.
    public var parallel = true
    /// Which thread counts the rows when the parts run on two (tests pin both placements).
    enum CountsPlacement { case firstFree, integrityThread, otherThread }
    var counts = CountsPlacement.firstFree
    /// The sentence an error becomes in the section's problems (the command's own wording).
    public var describe: (Error) -> String
    /// Where the second thread's share of the time goes (`make bench`).
    public var timings: Timings?

    public init(describe: @escaping (Error) -> String) {
        self.describe = describe
    }

    /// Reads `store`'s working copy (`copy`, made by `EvidenceSession.workingCopy(of:options:)`,
    /// or the error that made it fail) into `section`; the repair steps go into `plan` and
    /// `planNotes`. A store that cannot be read is described, not fatal.
    public func read(_ copy: Result<WorkingCopy, Error>, displayPath: String, into section: inout ReportDocument.StoreSection,
                     plan: inout ReportDocument.RepairPlan, planNotes: inout [String], stage: (String) -> Void) {
        switch copy {
        case .success(let copy):
            read(copy, displayPath: displayPath, into: &section, plan: &plan, planNotes: &planNotes, stage: stage)
        case .failure(let error):
            section.problems.append("This store could not be read: \(describe(error))")
        }
    }

    /// Reads a working copy into `section` (see `read(_:session:…)`).
    public func read(_ copy: WorkingCopy, displayPath: String, into section: inout ReportDocument.StoreSection,
                     plan: inout ReportDocument.RepairPlan, planNotes: inout [String], stage: (String) -> Void) {
        // A hot journal is rolled back in the copy by the first connection that reads it, and the
        // main-file-only view of such a copy is made on first use: one part at a time there.
        let parts = parallel && !copy.rollsBackJournal ? Parts.concurrently(copy, displayPath: displayPath, xcodeModel: xcodeModel, counts: counts, timings: timings, stage: stage) : nil

        let inspection: Result<StoreInspection, Error>
        if let parts, let ran = parts.inspection {
            inspection = ran
        } else {
            stage("counting rows")
            inspection = Result { try StoreInspector.inspect(copy, displayPath: displayPath) }
        }
        switch inspection {
        case .success(let found): section.inspection = found
        // The WAL analysis below still says what it can (a -wal that does not belong, say).
        case .failure(let error): section.problems.append("This store could not be read: \(describe(error))")
        }
        let isCoreData = section.inspection?.format == .coreData

        // For Core Data stores the checks below run SQLite's quick_check once.
        let analysis: Result<WALAnalysis, Error>
        if let parts, let ran = parts.wal, ran.assumedCoreData == isCoreData {
            analysis = ran.result
        } else {
            stage("reading the WAL")
            analysis = Result {
                try WALAnalyzer.analyze(try parts?.evidence.get() ?? WALEvidence(copy: copy, displayPath: displayPath),
                                        options: .init(integrityCheck: !isCoreData))
            }
        }
        switch analysis {
        case .success(let analysis):
            section.wal = analysis
            section.findings += analysis.findings
        case .failure(let error):
            section.problems.append("The WAL could not be analysed: \(describe(error))")
        }
        guard isCoreData else {
            section.findings.append(StoreChecker.notCoreData(displayPath: displayPath))
            return
        }

        let history: HistoryPart
        if let parts, let ran = parts.history {
            history = ran
        } else {
            stage("reading history")
            history = HistoryPart.read(copy, displayPath: displayPath)
        }
        if let timeline = history.timeline { section.timeline = timeline }
        if let writers = history.writers { section.entityWriters = writers }
        if let error = history.error { section.problems.append("History could not be read: \(describe(error))") }

        do {
            let opened: OpenedStore
            let findings: [Finding]
            if let parts, let checks = parts.checks {
                opened = try checks.opened.get()
                // `run()` reports the integrity task's error before the others'.
                let integrity = try checks.integrity.get()
                findings = StoreChecker.merged(integrity: integrity.findings, invariants: try checks.invariants.get())
            } else {
                stage("running checks")
                opened = try OpenedStore.open(copy, displayPath: displayPath, xcodeModel: xcodeModel)
                findings = try StoreChecker(opened: opened, copy: copy).run()
            }
            // The WAL analysis and the checks ask the same questions of the files (a -wal left
            // behind): a finding both made is listed once.
            section.findings += findings.filter { !section.findings.contains($0) }
            stage("planning repairs")
            try Self.planRepairs(opened, findings: findings, displayPath: displayPath, into: &plan, notes: &planNotes)
            // Before a release: the same findings `lint` and `migration` give, store by store.
            if lint {
                stage("linting the model")
                section.findings += try CloudKitLint.lint(opened)
            }
            if let migrationTarget {
                stage("planning the migration")
                section.findings += try MigrationPlanner.plan([opened], to: migrationTarget).findings
            }
        } catch {
            section.problems.append("The checks could not run: \(describe(error))")
        }
    }

    /// The repair steps `storelens repair` would take for `findings`, in the report's shape; the
    /// findings no repair answers, as a note.
    static func planRepairs(_ opened: OpenedStore, findings: [Finding], displayPath: String, into plan: inout ReportDocument.RepairPlan,
                            notes planNotes: inout [String]) throws {
        let repair = try RepairPlanner(opened: opened).plan(for: findings)
        for action in repair.actions {
            let affected = action.affected.isEmpty ? "" : " (first: \(action.affected.joined(separator: ", ")))"
            plan.steps.append(.init(store: displayPath, title: "\(action.name)" + (action.entity.map { " on \($0)" } ?? ""),
                                    detail: "\(action.summary) — \(plural(action.count, "row"))\(affected); tables: \(action.tables.joined(separator: ", ")).",
                                    resolves: [action.answers]))
        }
        if !repair.actions.isEmpty {
            plan.note = "Nothing was changed. `storelens repair INPUT --store PATH --plan` prints the same plan; `--out FILE` applies it to a copy and checks the copy again."
        }
        if !repair.unrepaired.isEmpty {
            planNotes.append("\(plural(repair.unrepaired.count, "finding")) in \(displayPath) ha\(repair.unrepaired.count == 1 ? "s" : "ve") no automatic repair (\(Set(repair.unrepaired.map(\.id)).sorted().joined(separator: ", "))).")
        }
    }
}

/// History's timeline and writers, as far as they could be read.
struct HistoryPart {
    var timeline: HistoryTimeline?
    var writers: [HistoryEntitySummary]?
    var error: Error?

    /// On a connection of its own; a store without history leaves both nil.
    static func read(_ copy: WorkingCopy, displayPath: String) -> HistoryPart {
        var part = HistoryPart()
        do {
            let connection = try copy.open()
            if let coreData = try CoreDataStore.read(connection), coreData.history.present {
                let reader = try HistoryReader(connection: connection, store: coreData, model: nil, displayPath: displayPath)
                part.timeline = try reader.timeline()
                part.writers = try reader.summary()
            }
        } catch {
            part.error = error
        }
        return part
    }
}

/// The parts of one store's reading, run on two threads before they are put together.
final class Parts: @unchecked Sendable {
    // Each field is written by one thread and read only after both are done (`other.result()`).
    var inspection: Result<StoreInspection, Error>?
    let evidence: Result<WALEvidence, Error>
    /// The WAL analysis, run as for a Core Data store when the store opened as one.
    var wal: (assumedCoreData: Bool, result: Result<WALAnalysis, Error>)?
    /// Only when the store opened as Core Data.
    var history: HistoryPart?
    var opened: Result<OpenedStore, Error>?
    var integrity: Result<StoreChecker.IntegrityOutcome, Error>?
    var invariants: Result<[Finding], Error>?

    /// Set only when the store opened as Core Data and both parts of the checks ran.
    var checks: (opened: Result<OpenedStore, Error>, integrity: Result<StoreChecker.IntegrityOutcome, Error>,
                 invariants: Result<[Finding], Error>)? {
        guard let opened, let integrity, let invariants else { return nil }
        return (opened, integrity, invariants)
    }

    /// Read by both threads, and only once nothing of it is loaded lazily any more (its -wal
    /// and -journal are loaded before the second thread starts); each part makes its own
    /// connections to it.
    private let copy: WorkingCopy
    /// The counts go to whichever thread is free first (`claimCounts`); the other thread's
    /// reading is about as long, so neither waits for the other's last part.
    private let countsClaim = NSLock()
    private var countsClaimed = false
    /// The counts ran before the integrity task's answer, taking the WAL's tables as sound.
    private var countsAssumedSound = false

    private func claimCounts() -> Bool {
        countsClaim.lock()
        defer { countsClaim.unlock() }
        if countsClaimed { return false }
        countsClaimed = true
        return true
    }

    private init(copy: WorkingCopy, evidence: Result<WALEvidence, Error>) {
        self.copy = copy
        self.evidence = evidence
    }

    static func concurrently(_ copy: WorkingCopy, displayPath: String, xcodeModel: URL?, counts placement: StoreReportReader.CountsPlacement,
                             timings: Timings?, stage: (String) -> Void) -> Parts {
        stage("reading the store")
        // Loads the copy's -wal and -journal.
        let parts = Parts(copy: copy, evidence: Result { try WALEvidence(copy: copy, displayPath: displayPath) })
        _ = copy.wal
        // Opening the model tells a Core Data store (the checks and history run) from plain SQLite.
        let opened = Result { try OpenedStore.open(copy, displayPath: displayPath, xcodeModel: xcodeModel) }
        // The integrity task on a connection of its own: the other thread's checker keeps the
        // opened store's connection (the repair plan reads it afterwards, on this thread). Where
        // either cannot be had, the checks run afterwards as in the sequence.
        var checker = try? StoreChecker(opened: opened.get(), copy: copy)
        let integrityChecker = try? checker.map { checker in checker.on(try copy.open()) }
        if integrityChecker == nil { checker = nil }
        let assumedCoreData = checker != nil

        let integrityRuns = integrityChecker != nil
        let other = BackgroundWork(decodingAsCaller: "storelens.report-parts") { [parts, checker] in
            let stopwatch = Stopwatch()
            if let checker {
                parts.invariants = Result { try checker.runInvariants() }
                parts.history = HistoryPart.read(parts.copy, displayPath: displayPath)
            }
            parts.wal = (assumedCoreData, parts.evidence.flatMap { evidence in
                Result { try WALAnalyzer.analyze(evidence, options: .init(integrityCheck: !assumedCoreData)) }
            })
            // Free before the integrity task: the counts, as if the exact comparison will find the
            // WAL's tables sound (it does on every store whose -wal belongs); where it does not,
            // they are read again below as the sequence reads them.
            if placement != .integrityThread, parts.claimCounts() {
                parts.countsAssumedSound = integrityRuns
                parts.inspection = Result { try StoreInspector.inspect(parts.copy, displayPath: displayPath, walTablesSound: parts.countsAssumedSound) }
            }
            // This thread's share, beside the integrity task's own line.
            timings?.record("report-part=\"checks, history, WAL\" seconds=\(stopwatch.seconds)")
        }

        if let integrityChecker {
            stage("running checks")
            parts.integrity = Result { try integrityChecker.runIntegrity() }
        }
        // What the exact comparison proved, the quick one in the counts need not look for again.
        let sound = (try? parts.integrity?.get())?.walTablesSound ?? false
        stage("counting rows")
        if placement == .otherThread { other.result() }
        if parts.claimCounts() {
            parts.inspection = Result { try StoreInspector.inspect(copy, displayPath: displayPath, walTablesSound: sound) }
        }
        if placement != .otherThread { other.result() }
        if parts.countsAssumedSound && !sound {
            parts.inspection = Result { try StoreInspector.inspect(copy, displayPath: displayPath, walTablesSound: false) }
        }
        parts.opened = checker == nil ? nil : opened
        return parts
    }
}
