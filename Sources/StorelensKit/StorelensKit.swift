// StorelensKit: storelens as a library, for an app's own tests (docs/library.md).
//
// `import StorelensKit` brings every capability's module; `Storelens` below is the short way in,
// one call per question, each reading the input the way the command of the same name does.
@_exported import Acquisition
@_exported import Checks
@_exported import Coexistence
@_exported import CoreDataStore
@_exported import Findings
@_exported import ModelReview
@_exported import Repair
@_exported import Reports
@_exported import SQLiteAccess
@_exported import StoreFormats
@_exported import WALForensics

/// One call per question. Every call hashes the input's files, copies each store family into a
/// private working folder, reads only the copies, removes the folder on every path, and throws
/// when an original changed while it was read (`EvidenceSession`): the inputs are never written.
public enum Storelens {
    /// What the commands take as `--store`, `--roll-back-journal` and the archive limits.
    public struct Options: Sendable {
        /// Keep only the store whose path ends with this (an input with several stores).
        public var store: String?
        public var open: OpenOptions
        public var limits: ArchiveLimits

        public init(store: String? = nil, open: OpenOptions = OpenOptions(), limits: ArchiveLimits = ArchiveLimits()) {
            self.store = store
            self.open = open
            self.limits = limits
        }
    }

    /// `storelens inspect`: every store in `inputs` (store files, containers, archives, backups):
    /// metadata, entities with their record counts (with and without the -wal), history, WAL.
    public static func inspect(_ inputs: [String], options: Options = Options()) throws -> [StoreInspection] {
        try reading { session in
            try session.stores(from: inputs, select: options.store, options: options.open, limits: options.limits).map {
                try StoreInspector.inspect($0.copy, displayPath: $0.displayPath)
            }
        }
    }

    /// `storelens inspect` of the Core Data XML and binary stores in `inputs` (the other calls read
    /// SQLite stores only): type, metadata, the model's entities with their objects, anomalies.
    public static func atomicStores(_ inputs: [String], options: Options = Options()) throws -> [AtomicStoreInspection] {
        try reading { session in
            var refused: [RefusedStore] = []
            var atomic: [AcquiredAtomicStore] = []
            _ = try session.stores(from: inputs, select: options.store, options: options.open, limits: options.limits,
                                   refused: &refused, atomic: &atomic)
            return try atomic.map { try AtomicStoreInspection.inspect($0) }
        }
    }

    /// `storelens check`: Core Data's invariants that SQLite cannot see, for every store, as
    /// findings (a plain SQLite database gets SQLite's own check).
    public static func check(_ inputs: [String], options: Options = Options()) throws -> [Finding] {
        var open = options.open
        open.ignoreMismatchedWAL = true
        return try reading { session in
            var findings: [Finding] = []
            for store in try session.stores(from: inputs, select: options.store, options: open, limits: options.limits) {
                do {
                    let opened = try OpenedStore.open(store.copy, displayPath: store.displayPath)
                    findings += try StoreChecker(opened: opened, copy: store.copy).run()
                } catch ModelError.notCoreData {
                    findings += try StoreChecker.plainSQLite(store.copy, displayPath: store.displayPath, full: false)
                }
            }
            return findings.bySeverity
        }
    }

    /// `storelens wal`: what each store's -wal and -shm hold (transactions, the tables they
    /// wrote, frames beyond the last commit).
    public static func wal(_ inputs: [String], options: Options = Options()) throws -> [WALAnalysis] {
        try reading { session in
            try session.stores(from: inputs, select: options.store, options: options.open, limits: options.limits).map {
                try WALAnalyzer.analyze(try WALEvidence(copy: $0.copy, displayPath: $0.displayPath))
            }
        }
    }

    /// `storelens audit`: a migration checked against its manifest (docs/manifest.md): who wrote
    /// each entity, and whether the legacy side's records reached the new store once each.
    /// `inputs` is read as one case (one container, or the stores of one test).
    public static func audit(_ inputs: [String], manifest: Manifest, options: Options = Options()) throws -> AuditResult {
        try reading { session in
            var auditor = Auditor(manifest: manifest, session: session)
            auditor.openOptions = options.open
            auditor.limits = options.limits
            return try auditor.run(inputs: inputs)
        }
    }

    /// A session whose working folder is removed whatever happens, and whose originals are checked
    /// unchanged before the answer is returned.
    static func reading<T>(_ body: (EvidenceSession) throws -> T) throws -> T {
        let session = try EvidenceSession()
        defer { session.scratch.remove() }
        let result = try body(session)
        try session.finish()
        return result
    }
}

extension AuditResult {
    /// The ids of `lostRecords`, `doubledRecords` and `writerViolations`.
    public static let lostRecordIDs: Set<String> = ["not-migrated", "json-not-imported"]
    public static let doubledRecordIDs: Set<String> = ["duplicate-import"]
    public static let writerViolationIDs: Set<String> = ["writer-violation", "write-after-cutover", "unattributed-write"]

    /// Records the legacy side (a store or a JSON file) has and the writer's store lacks.
    public var lostRecords: [Finding] { findings.filter { Self.lostRecordIDs.contains($0.id) } }
    /// Records the writer's store holds more than once (an import that ran twice).
    public var doubledRecords: [Finding] { findings.filter { Self.doubledRecordIDs.contains($0.id) } }
    /// Writes by a stack that does not own the entity, after its cutover, or by no stack the
    /// manifest names: anything but "one writer".
    public var writerViolations: [Finding] { findings.filter { Self.writerViolationIDs.contains($0.id) } }
}
