import Acquisition
import Checks
import CoreDataStore
import Findings
import Foundation
import StoreFormats

extension Storelens {
    /// What `storelens check` takes besides its inputs.
    public struct CheckOptions: Sendable {
        public var input: InputOptions
        /// `--full`: PRAGMA integrity_check instead of quick_check.
        public var full: Bool
        /// `--only`: run only these checks (nil: all).
        public var only: Set<StoreChecker.Check>?
        /// `--model`: the app's Xcode model, for stores without a cached model.
        public var xcodeModel: URL?
        /// Where the checks' durations go (`make bench`).
        public var timings: Timings?

        public init(input: InputOptions = InputOptions(), full: Bool = false, only: Set<StoreChecker.Check>? = nil,
                    xcodeModel: URL? = nil, timings: Timings? = nil) {
            self.input = input
            self.full = full
            self.only = only
            self.xcodeModel = xcodeModel
            self.timings = timings
        }
    }

    /// What `storelens check` found.
    public struct CheckResult: Sendable {
        /// Every store checked, by display path.
        public var stores: [String]
        /// The checks that ran (check-not-run is what a check that could not finish reports, not a check of its own).
        public var checks: [StoreChecker.Check]
        /// Every finding, most severe first.
        public var findings: [Finding]
        /// Stores an input held that could not be read; the others were checked.
        public var refused: [RefusedStore]
    }

    /// `storelens check`: SQLite's own check, then Core Data's invariants that SQLite cannot see,
    /// on every store of `inputs`. A plain SQLite database gets SQLite's check alone; a store that
    /// cannot be read is listed in `refused` and the others are still checked.
    public static func check(_ inputs: [String], _ options: CheckOptions = CheckOptions()) throws -> CheckResult {
        try reading(options.input) { try check(inputs, options, in: $0) }
    }

    /// `check(_:_:)` through a session `reading` opened, which finishes it.
    public static func check(_ inputs: [String], _ options: CheckOptions, in session: EvidenceSession) throws -> CheckResult {
        var input = options.input
        input.open.ignoreMismatchedWAL = true
        var refused: [RefusedStore] = []
        let acquired = try session.stores(from: inputs, input, refused: &refused)
        // Every original has been read into its working copy; `stores(from:)` has started hashing
        // them again beside the checks.
        var findings = session.damagedInputs.map(damagedArchive)
        var stores: [String] = []
        for store in acquired {
            findings += try check(store, options).findings
            stores.append(store.displayPath)
        }
        let checks = (options.only.map { Array($0) } ?? StoreChecker.Check.allCases).filter { $0 != .checkNotRun }
        return CheckResult(stores: stores, checks: checks.sorted { $0.rawValue < $1.rawValue }, findings: findings.bySeverity, refused: refused)
    }

    /// One store's checks: what `check` gives for it, and the store as they opened it.
    public struct StoreCheck {
        /// Every finding, most severe first.
        public var findings: [Finding]
        /// The store with its model (nil: plain SQLite, which has none): what the repair plan,
        /// lint and the migration read after the checks.
        public var opened: OpenedStore?
        /// The integrity task proved the tables the `-wal` changed sound (every check ran).
        var walTablesSound = false
    }

    /// Every check on one store, as `check` runs them on each store it reads (and `report` on
    /// each of its stores).
    public static func check(_ store: AcquiredStore, _ options: CheckOptions) throws -> StoreCheck {
        let opened: OpenedStore
        do {
            opened = try OpenedStore.open(store.copy, displayPath: store.displayPath, xcodeModel: options.xcodeModel)
        } catch ModelError.notCoreData {
            // A plain SQLite database (an iOS backup's Manifest.db): SQLite's own check applies,
            // Core Data's invariants do not. Saying so is information, not a failure.
            return StoreCheck(findings: try StoreChecker.plainSQLite(store.copy, displayPath: store.displayPath, full: options.full))
        }
        return try check(opened, of: store, options)
    }

    /// The checks on a store already opened as Core Data.
    static func check(_ opened: OpenedStore, of store: AcquiredStore, _ options: CheckOptions) throws -> StoreCheck {
        var checker = StoreChecker(opened: opened, copy: store.copy)
        checker.full = options.full
        var result = StoreCheck(findings: [], opened: opened)
        let took = try ContinuousClock().measure {
            if options.only == nil && !options.full {
                let outcome = try checker.runProvingWALTables()
                (result.findings, result.walTablesSound) = (outcome.findings, outcome.walTablesSound)
            } else {
                result.findings = try checker.run(only: options.only)
            }
        }
        // For `make bench`: the checks alone, without acquisition and hashing.
        options.timings?.record("checks-seconds=\(Stopwatch.seconds(of: took))")
        return result
    }

    /// A damaged archive read as asked (`--read-damaged`): every result is about what it still holds.
    static func damagedArchive(_ damaged: DamagedInput) -> Finding {
        Finding(id: "archive-damaged", severity: .error, store: damaged.input,
                message: "The archive is damaged and was read as asked (--read-damaged).",
                evidence: ["damage": .string(damaged.detail)],
                explanation: "A damaged archive can hold an older state (a -wal cut short shows fewer commits) or corrupt bytes; every result below is about what it still holds.",
                suggestion: "Copy the archive off the device again.")
    }
}
