import Acquisition
import Coexistence
import CoreDataStore
import Findings
import Foundation
import Repair

extension Storelens {
    /// What `storelens repair` takes besides its input.
    public struct RepairOptions: Sendable {
        /// What to do with the plan.
        public enum Mode: Sendable {
            /// `--plan`: the plan alone; nothing is written.
            case plan
            /// `--out FILE`: the repaired store as a new file (the input untouched).
            case newFile(URL)
            /// `--in-place --backup DIR`: the family copied to DIR and verified, then the store replaced.
            case inPlace(backup: URL)
        }

        public var mode: Mode
        public var input: InputOptions
        /// `--keep`: which of duplicates stays.
        public var keep: KeepRule
        /// `--only`: repair only these findings (ids).
        public var only: Set<String>?
        /// `--model`: the app's Xcode model, for stores without a cached one.
        public var xcodeModel: URL?
        /// `--manifest`: repair what a migration audit found (an import that ran twice, records
        /// not migrated) instead of the store's own findings.
        public var manifestPath: String?
        /// `--record-history`: write the repair's changes into the store's persistent history.
        public var recordHistory: Bool

        public init(mode: Mode, input: InputOptions = InputOptions(), keep: KeepRule = .highestOpt, only: Set<String>? = nil,
                    xcodeModel: URL? = nil, manifestPath: String? = nil, recordHistory: Bool = false) {
            self.mode = mode
            self.input = input
            self.keep = keep
            self.only = only
            self.xcodeModel = xcodeModel
            self.manifestPath = manifestPath
            self.recordHistory = recordHistory
        }
    }

    /// The files a repair run will write, checked before any work starts, so that a run that would
    /// fail to write its log fails before it makes anything (and never after the store was
    /// written): `out` (`.newFile`) and `log` (the repair log the caller writes, `--log`) must not
    /// exist, in a folder that does; `backup` (`.inPlace`) must be a folder; `out` and `log` differ.
    public static func checkRepairOutputs(out: String?, log: String?, backup: String?) throws {
        var named: [(option: String, path: String)] = []
        if let out { named.append(("--out", out)) }
        if let log { named.append(("--log", log)) }
        for (option, path) in named {
            let url = URL(fileURLWithPath: path)
            var st = stat()
            if lstat(url.path, &st) == 0 {
                if option == "--out" { throw RepairError.outputExists(path: url.path) }
                throw InputError(message: "\(path) already exists; give \(option) a new file name (repair never overwrites).")
            }
            var isDir: ObjCBool = false
            guard FileManager.default.fileExists(atPath: url.deletingLastPathComponent().path, isDirectory: &isDir), isDir.boolValue else {
                throw InputError(message: "the folder for \(path) does not exist; create it or choose another \(option).")
            }
        }
        if let backup {
            var isDir: ObjCBool = false
            guard FileManager.default.fileExists(atPath: backup, isDirectory: &isDir), isDir.boolValue else {
                throw RepairError.backupFailed(path: backup, detail: "no such folder")
            }
        }
        if named.count == 2, URL(fileURLWithPath: named[0].path).standardizedFileURL == URL(fileURLWithPath: named[1].path).standardizedFileURL {
            throw InputError(message: "--out and --log name the same file; give each its own.")
        }
    }

    /// `storelens repair`: a plan for the one store of `input`, and (unless `.plan`) the plan
    /// applied to a copy in one transaction, checked again after; the input is never changed
    /// except by `.inPlace`, and then only after a verified backup.
    public static func repair(_ input: String, _ options: RepairOptions) throws -> RepairOutcome {
        try reading(options.input) { try repair(input, options, in: $0) }
    }

    /// `repair(_:_:)` through a session `reading` opened and finishes (in place, the input is
    /// proven unchanged up to the swap, which changes it on purpose: the session says so,
    /// `EvidenceSession.replacedOriginals`, and is not checked again).
    public static func repair(_ input: String, _ options: RepairOptions, in session: EvidenceSession) throws -> RepairOutcome {
        let store: AcquiredStore
        var migrationPlan: RepairPlan?
        if let manifestPath = options.manifestPath {
            try session.record([URL(fileURLWithPath: manifestPath)])
            var auditor = Auditor(manifest: try Manifest.load(path: manifestPath), session: session)
            auditor.openOptions = options.input.open
            auditor.limits = options.input.limits
            let migration = try auditor.migrationRepair(inputs: [input], select: options.input.store, recordHistory: options.recordHistory)
            store = migration.store
            migrationPlan = migration.plan
        } else {
            store = try session.singleStore(input, options.input)
        }
        var repairer = Repairer(session: session, store: store)
        repairer.givenPlan = migrationPlan
        repairer.keep = options.keep
        repairer.only = options.only
        repairer.xcodeModel = options.xcodeModel
        switch options.mode {
        case .plan:
            let (plan, findings) = try repairer.plan()
            return RepairOutcome(input: store.displayPath, plan: plan, findings: findings, written: false, output: nil, outputSHA256: nil,
                                 changes: [], tablesBefore: [:], tablesAfter: [:], remaining: findings)
        case .inPlace(let backup):
            return try InPlace.repair(repairer, store: store, backup: backup, session: session)
        case .newFile(let output):
            return try repairer.run(output: output)
        }
    }

    /// The repair steps `repair --plan` would take for one store's findings (and `report`'s plan).
    public static func repairPlan(_ opened: OpenedStore, for findings: [Finding]) throws -> RepairPlan {
        try RepairPlanner(opened: opened).plan(for: findings)
    }
}
