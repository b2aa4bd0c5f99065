import Acquisition
import Checks
import CoreDataStore
import Findings
import Foundation
import ModelReview
import Repair
import StoreFormats
import WALForensics

/// Reads one store of a report into its section from the operations' own answers for that store:
/// `Storelens.inspect`, `.wal`, `.check`, `.historyOverview`, `.repairPlan` (and with the options
/// `.lint` and `.migration`) — the calls the commands make for each store they read, so the
/// report cannot say of a store what the command would not.
///
/// The parts read one working copy and do not depend on each other's answers, so by default they
/// run on two threads, each on connections of its own (`parallel`): the checks on one (they use a
/// second connection of their own), the WAL analysis, history and the counts on the other. The
/// counts there take the tables the `-wal` changed as sound, as the checks' exact comparison of
/// them with their indexes proves on every store whose `-wal` belongs; where it does not, they
/// are counted again afterwards as the sequence counts them. Put together in the sequence's order
/// (`parallel = false`), both give the same section.
public struct StoreReportReader {
    /// `--model`: the Xcode model for the checks.
    public var xcodeModel: URL?
    /// `--lint`: each store's CloudKit lint.
    public var lint = false
    /// `--migration-to`: each store's migration to this model.
    public var migrationTarget: MigrationTarget?
    /// Run the parts on two threads (the default); false runs them one after another.
    public var parallel = true
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
    public func read(_ copy: Result<WorkingCopy, Error>, store found: FoundStore, into section: inout ReportDocument.StoreSection,
                     plan: inout ReportDocument.RepairPlan, planNotes: inout [String], stage: (String) -> Void) {
        switch copy {
        case .success(let copy):
            read(AcquiredStore(displayPath: found.path, found: found, copy: copy), into: &section, plan: &plan, planNotes: &planNotes, stage: stage)
        case .failure(let error):
            section.problems.append("This store could not be read: \(describe(error))")
        }
    }

    /// Reads one acquired store into `section` (see `read(_:store:…)`).
    public func read(_ store: AcquiredStore, into section: inout ReportDocument.StoreSection, plan: inout ReportDocument.RepairPlan,
                     planNotes: inout [String], stage: (String) -> Void) {
        let answers = StoreAnswers.read(store, xcodeModel: xcodeModel, parallel: parallel && !store.copy.rollsBackJournal,
                                        timings: timings, stage: stage)
        switch answers.inspection {
        case .success(let found): section.inspection = found
        // The WAL analysis below still says what it can (a -wal that does not belong, say).
        case .failure(let error): section.problems.append("This store could not be read: \(describe(error))")
        }
        switch answers.wal {
        case .success(let analysis):
            section.wal = analysis
            section.findings += analysis.findings
        case .failure(let error):
            section.problems.append("The WAL could not be analysed: \(describe(error))")
        }
        guard let checks = answers.checks else {
            section.findings.append(StoreChecker.notCoreData(displayPath: store.displayPath))
            return
        }
        if let timeline = answers.history?.timeline { section.timeline = timeline }
        if let writers = answers.history?.writers { section.entityWriters = writers }
        if let error = answers.historyError { section.problems.append("History could not be read: \(describe(error))") }
        do {
            let checked = try checks.get()
            // The WAL analysis and the checks ask the same questions of the files (a -wal left
            // behind): a finding both made is listed once.
            section.findings += checked.findings.filter { !section.findings.contains($0) }
            guard let opened = checked.opened else { return }
            stage("planning repairs")
            try Self.planRepairs(opened, findings: checked.findings, displayPath: store.displayPath, into: &plan, notes: &planNotes)
            // Before a release: the same findings `lint` and `migration` give, store by store.
            if lint {
                stage("linting the model")
                section.findings += try Storelens.lint(opened)
            }
            if let migrationTarget {
                stage("planning the migration")
                section.findings += try Storelens.migration([opened], to: migrationTarget).findings
            }
        } catch {
            section.problems.append("The checks could not run: \(describe(error))")
        }
    }

    /// The repair steps `storelens repair` would take for `findings`, in the report's shape; the
    /// findings no repair answers, as a note.
    static func planRepairs(_ opened: OpenedStore, findings: [Finding], displayPath: String, into plan: inout ReportDocument.RepairPlan,
                            notes planNotes: inout [String]) throws {
        let repair = try Storelens.repairPlan(opened, for: findings)
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

/// The operations' answers for one store, read one after another or on two threads.
final class StoreAnswers: @unchecked Sendable {
    // Each field is written by one thread and read only after both are done (`other.result()`).
    var inspection: Result<StoreInspection, Error> = .failure(CancellationError())
    var wal: Result<WALAnalysis, Error> = .failure(CancellationError())
    var history: Storelens.HistoryOverview?
    var historyError: Error?
    /// Nil when the store is plain SQLite: no checks, history or plans apply.
    var checks: Result<Storelens.StoreCheck, Error>?

    static func read(_ store: AcquiredStore, xcodeModel: URL?, parallel: Bool, timings: Timings?, stage: (String) -> Void) -> StoreAnswers {
        let answers = StoreAnswers()
        stage("reading the store")
        // Loads the copy's -wal and -journal before a second thread reads the copy.
        _ = store.copy.wal
        // Opening the model tells a Core Data store (checks, history, plans) from plain SQLite.
        let opened = Result { try OpenedStore.open(store.copy, displayPath: store.displayPath, xcodeModel: xcodeModel) }
        let isCoreData: Bool
        if case .failure(ModelError.notCoreData) = opened { isCoreData = false } else { isCoreData = true }
        let checkOptions = Storelens.CheckOptions(xcodeModel: xcodeModel)
        func runChecks() -> (proved: Bool, ran: Bool) {
            guard isCoreData else { return (false, false) }
            stage("running checks")
            answers.checks = opened.flatMap { opened in Result { try Storelens.check(opened, of: store, checkOptions) } }
            return ((try? answers.checks?.get())?.walTablesSound ?? false, true)
        }
        // On a Core Data store the checks run SQLite's quick_check, so the WAL analysis does not.
        let others = { (assumeSound: Bool) in
            answers.wal = Result { try Storelens.wal(store, integrityCheck: !isCoreData) }
            if isCoreData {
                do { answers.history = try Storelens.historyOverview(store) } catch { answers.historyError = error }
            }
            answers.inspection = Result { try Storelens.inspect(store, asOfCommit: nil, walTablesSound: assumeSound) }
        }
        guard parallel else {
            let proved = runChecks().proved
            stage("reading the WAL, history and counts")
            others(proved)
            return answers
        }
        let other = BackgroundWork(decodingAsCaller: "storelens.report-parts") {
            let stopwatch = Stopwatch()
            others(isCoreData)
            // This thread's share, beside the checks' own lines.
            timings?.record("report-part=\"WAL, history, counts\" seconds=\(stopwatch.seconds)")
        }
        let proved = runChecks().proved
        other.result()
        // Counted as if the exact comparison would prove the -wal's tables sound; it did not, and
        // the counts of a store with WAL commits depend on it: count as the sequence does.
        if isCoreData && !proved, let counted = try? answers.inspection.get(), counted.wal.present && counted.wal.commits > 0 {
            stage("counting rows")
            answers.inspection = Result { try Storelens.inspect(store, asOfCommit: nil, walTablesSound: false) }
        }
        return answers
    }
}
