import Acquisition
import CoreDataStore
import Foundation

extension Storelens {
    /// What `storelens inspect` takes besides its inputs.
    public struct InspectOptions: Sendable {
        public var input: InputOptions
        /// `--as-of N`: every store as it stood after WAL commit N (0: the main file alone).
        public var asOfCommit: Int?

        public init(input: InputOptions = InputOptions(), asOfCommit: Int? = nil) {
            self.input = input
            self.asOfCommit = asOfCommit
        }
    }

    /// What `storelens inspect` found.
    public struct InspectResult {
        /// The SQLite stores: metadata, entities with their record counts (with and without the
        /// -wal), history, WAL.
        public var inspections: [StoreInspection]
        /// The Core Data XML and binary stores: type, metadata, the model's entities with their
        /// objects, anomalies.
        public var atomicStores: [AtomicStoreInspection]
        /// Stores an input held that could not be read; the others were inspected.
        public var refused: [RefusedStore]
    }

    /// `storelens inspect`: every store in `inputs` (store files, containers, archives, backups).
    public static func inspect(_ inputs: [String], _ options: InspectOptions = InspectOptions()) throws -> InspectResult {
        try reading(options.input) { try inspect(inputs, options, in: $0) }
    }

    /// `inspect(_:_:)` through a session `reading` opened, which finishes it.
    public static func inspect(_ inputs: [String], _ options: InspectOptions, in session: EvidenceSession) throws -> InspectResult {
        var refused: [RefusedStore] = []
        var atomicStores: [AcquiredAtomicStore] = []
        var input = options.input
        // A -wal that cannot belong is said in the notes, and the main file alone is inspected.
        input.open.foreignWAL = .leaveOut
        let stores = try session.stores(from: inputs, select: input.store, options: input.open, limits: input.limits,
                                        refused: &refused, atomic: &atomicStores)
        if options.asOfCommit != nil, let first = atomicStores.first {
            throw InputError(message: "\(first.displayPath) is a \(first.format.title), which has no WAL commits; drop --as-of to inspect it.")
        }
        let atomic = try atomicStores.map { try AtomicStoreInspection.inspect($0) }
        let inspections = try stores.map { try inspect($0, asOfCommit: options.asOfCommit) }
        return InspectResult(inspections: inspections, atomicStores: atomic, refused: refused)
    }

    /// One store's inspection, as `inspect` gives it for each store it reads (and `report` for
    /// each of its stores).
    public static func inspect(_ store: AcquiredStore, asOfCommit: Int? = nil) throws -> StoreInspection {
        try inspect(store, asOfCommit: asOfCommit, walTablesSound: false)
    }

    /// `walTablesSound`: the checks already proved the tables the `-wal` changed agree with their
    /// indexes (`StoreChecker.IntegrityOutcome`), so the counts need not compare them again.
    static func inspect(_ store: AcquiredStore, asOfCommit: Int?, walTablesSound: Bool) throws -> StoreInspection {
        let view = try asOfCommit.map { n in try store.copy.open(asOfCommit: n, displayPath: store.displayPath) }
        return try StoreInspector.inspect(store.copy, displayPath: store.displayPath, view: view, asOfCommit: asOfCommit,
                                          walTablesSound: walTablesSound)
    }
}
