import Acquisition
import Coexistence
import CoreDataStore
import Findings
import Foundation
import ModelReview
import StoreFormats

extension Storelens {
    /// What `storelens report` takes besides its inputs.
    public struct ReportOptions: Sendable {
        public var input: InputOptions
        /// `--model`: the app's Xcode model, for stores without a cached one.
        public var xcodeModel: URL?
        /// `--lint`: each store's CloudKit lint.
        public var lint: Bool
        /// `--migration-to`: each store's migration to this model (a model file or a store).
        public var migrationTarget: String?
        /// `--manifest`: the migration audited against it, its file hashed with the evidence.
        public var manifest: Manifest?
        /// The manifest's file as given (shown in the report as given).
        public var manifestPath: String?
        /// Shown in the report: how it was made.
        public var commandLine: String
        public var toolVersion: String
        /// False reads each store's parts one after another instead of on two threads (to compare).
        public var parallel: Bool
        /// The sentence an error becomes in the report: by default what the command prints for it
        /// (`Storelens.describe`).
        public var describe: @Sendable (Error) -> String
        /// Where each stage's start goes (`make bench`).
        public var timings: Timings?

        public init(input: InputOptions = InputOptions(), xcodeModel: URL? = nil, lint: Bool = false, migrationTarget: String? = nil,
                    manifest: Manifest? = nil, manifestPath: String? = nil, commandLine: String = "storelens report", toolVersion: String,
                    parallel: Bool = true, describe: @escaping @Sendable (Error) -> String = { Storelens.describe($0).sentence }, timings: Timings? = nil) {
            self.input = input
            self.xcodeModel = xcodeModel
            self.lint = lint
            self.migrationTarget = migrationTarget
            self.manifest = manifest
            self.manifestPath = manifestPath
            self.commandLine = commandLine
            self.toolVersion = toolVersion
            self.parallel = parallel
            self.describe = describe
            self.timings = timings
        }
    }

    /// What `storelens report` read: the document the HTML shows, and what the exit code is made of.
    public struct ReportContents: Sendable {
        public var document: ReportDocument
        /// Every store found, by path.
        public var stores: [String]
        /// Every finding once, errors first.
        public var findings: [Finding]
        /// Set when the report can be written but the input was read only in part (a damaged
        /// archive, a failed audit, no stores, checks that could not run): one sentence.
        public var problem: String?
    }

    /// `storelens report`: `inputs` read as one case, every store's counts, WAL, history,
    /// checks and repair plan (with the options, its lint and migration, and the audit against
    /// the manifest), and the originals verified unchanged. Throws only when there is nothing to
    /// report on (an input that cannot be opened, a bad migration target).
    public static func report(_ inputs: [String], _ options: ReportOptions) throws -> ReportContents {
        try reading(options.input) { try report(inputs, options, in: $0) }
    }

    /// `report(_:_:)` through a session `reading` opened; the report finishes it itself (the
    /// evidence verified is part of what it shows).
    public static func report(_ inputs: [String], _ options: ReportOptions, in session: EvidenceSession) throws -> ReportContents {
        // The stores are read as `check` reads them: a -wal that cannot belong is left out and
        // said (`wal-page-size-mismatch`), not a reason to refuse the store.
        var options = options
        options.input.open.ignoreMismatchedWAL = true
        let stopwatch = Stopwatch()
        func mark(_ what: String) { options.timings?.record("report-stage=\"\(what)\" at-seconds=\(stopwatch.seconds)") }
        var document = ReportDocument(inputs: inputs, commandLine: options.commandLine, toolVersion: options.toolVersion)
        document.manifestPath = options.manifestPath
        if let path = options.manifestPath { try session.record([URL(fileURLWithPath: path)]) }
        var auditor = options.manifest.map { manifest in
            var auditor = Auditor(manifest: manifest, session: session)
            auditor.openOptions = options.input.open
            auditor.limits = options.input.limits
            return auditor
        }
        let found = try reportInventories(inputs, options, auditor: auditor, into: &document, in: session)
        mark("inputs hashed and copied")
        // The target is read before the stores, through the same evidence path; a bad one stops here.
        let target = try options.migrationTarget.map { try MigrationTarget.load($0, session: session, options: options.input.open, limits: options.input.limits) }
        let copies = try readStores(found, options, target: target, into: &document, in: session, stopwatch: stopwatch)
        // A damaged archive read as asked: check's finding, under the first store it held.
        for inventory in document.inventories where options.input.limits.readDamaged {
            guard let damage = inventory.damage,
                  let i = document.stores.firstIndex(where: { $0.path.hasPrefix(inventory.input + "!") }) else { continue }
            document.stores[i].findings.insert(damagedArchive(DamagedInput(input: inventory.input, detail: damage)), at: 0)
        }
        mark("stores read")
        if auditor != nil {
            ProgressReporter.current.report("report: auditing against the manifest", done: 0, unit: .step)
            var made: [String: WorkingCopy] = [:]
            for (i, store) in found.enumerated() { if case .success(let copy) = copies[i] { made[store.path] = copy } }
            auditor?.acquired = (document.inventories, made)
            do {
                document.audit = try auditor?.run(inputs: inputs)
            } catch {
                document.auditProblem = options.describe(error)
            }
        }
        mark("verifying the evidence")
        try session.finish()
        mark("evidence verified")
        document.evidenceVerified = true
        document.originals = session.ledger.entries
        return ReportContents(document: document, stores: found.map(\.path), findings: document.allFindings,
                              problem: reportProblem(document, inputs: inputs, storeCount: found.count))
    }

    /// The inputs' inventories into `document`, and the stores found (the one `--store` chose).
    static func reportInventories(_ inputs: [String], _ options: ReportOptions, auditor: Auditor?, into document: inout ReportDocument,
                                  in session: EvidenceSession) throws -> [FoundStore] {
        let select = options.input.store
        // With a manifest, the audit reads the same inventories and working copies: the files its
        // JSON stacks need are found here too.
        let resolver = InputResolver(session: session, limits: options.input.limits, hashArchives: true, wanted: auditor?.wantedFiles ?? [],
                                     stagesCopies: { [mayBind = auditor?.mayBind] path in
                                         (select.map { path.hasSuffix($0) } ?? true) || mayBind?(path) == true
                                     }, open: options.input.open)
        document.inventories = try InputResolver.distinct(inputs).map { try resolver.inventory(of: $0) }
        let found = document.inventories.flatMap(\.stores)
        guard let select else { return found }
        let matches = found.filter { $0.path.hasSuffix(select) }
        guard matches.count == 1 else {
            throw AcquisitionError.storeSelection(select: select, candidates: found.map(\.path), matched: matches.count)
        }
        return matches
    }

    /// Every store's working copy, then each read into its section of `document` with its
    /// repair steps; the copies are returned for the audit.
    static func readStores(_ found: [FoundStore], _ options: ReportOptions, target: MigrationTarget?, into document: inout ReportDocument,
                           in session: EvidenceSession, stopwatch: Stopwatch) throws -> [Result<WorkingCopy, Error>] {
        var plan = ReportDocument.RepairPlan(steps: [])
        var planNotes: [String] = []
        var reader = StoreReportReader(describe: options.describe)
        reader.xcodeModel = options.xcodeModel
        reader.lint = options.lint
        reader.migrationTarget = target
        reader.parallel = options.parallel
        reader.timings = options.timings
        let progress = ProgressReporter.current
        func stage(_ i: Int, _ store: FoundStore) -> (String) -> Void {
            { what in
                progress.report("report: store \(i + 1) of \(found.count) (\(store.name)): \(what)", done: Int64(i), unit: .step)
                options.timings?.record("report-stage=\"\(what)\" store=\(i + 1) at-seconds=\(stopwatch.seconds)")
            }
        }
        // Every store's working copy first: the originals are not read again after that, so
        // their after-hash runs beside the reading (`finish()` waits for it, and compares every
        // file's size, times and inode at the end, as `check` does).
        let copies = found.enumerated().map { i, store in
            stage(i, store)("copying")
            return Result { try session.workingCopy(of: store, options: options.input.open) }
        }
        session.verifyInBackground()
        for (i, store) in found.enumerated() {
            var section = ReportDocument.StoreSection(path: store.path, found: store)
            reader.read(copies[i], store: store, into: &section, plan: &plan, planNotes: &planNotes, stage: stage(i, store))
            document.stores.append(section)
        }
        document.repairPlan = plan.steps.isEmpty ? nil : plan
        document.repairPlanNote = planNotes.isEmpty ? nil : planNotes.joined(separator: " ")
        return copies
    }

    /// Why the report, though written, is an input error: the first of a damaged input, a failed
    /// audit, no stores, no store readable, checks that could not run.
    static func reportProblem(_ document: ReportDocument, inputs: [String], storeCount: Int) -> String? {
        if let damaged = document.inventories.first(where: { $0.damage != nil }), let damage = damaged.damage {
            return "\(damaged.input): \(damage); the report shows what could be read."
        }
        if let auditProblem = document.auditProblem { return auditProblem }
        if storeCount == 0 { return AcquisitionError.noStores(inputs: inputs).description }
        if !document.stores.isEmpty, document.stores.allSatisfy({ $0.inspection == nil }), let first = document.stores.first?.problems.first {
            // A report in which no store could be read at all is written, but it is an input error.
            return "\(inputs.joined(separator: ", ")): no store could be read (\(first)); the report says why."
        }
        if let section = document.stores.first(where: { !$0.problems.isEmpty }), let first = section.problems.first {
            // Checks that could not run are not a clean bill of health: the report says which, and
            // so does the exit code.
            return "\(section.path): \(first) The report lists what could not run."
        }
        return nil
    }
}
