import Acquisition
import CoreDataStore
import Foundation
import StoreFormats

/// One found store with what opening it said (format and stack), for `scan`.
public struct ScannedStore: Sendable {
    public let found: FoundStore
    public let format: StoreInspection.Format?
    public let stack: StackVerdict.Stack?
    /// Why the store could not be classified (it is still listed).
    public let problem: String?
    /// External binary storage: files that came and values that name them (Core Data stores).
    public let externalData: ExternalDataCensus?

    public init(found: FoundStore, format: StoreInspection.Format?, stack: StackVerdict.Stack?, problem: String?,
                externalData: ExternalDataCensus? = nil) {
        self.found = found
        self.format = format
        self.stack = stack
        self.problem = problem
        self.externalData = externalData
    }

    /// What `scan` prints as the format: `coredata` or `sqlite` from opening a SQLite store,
    /// `coredata-xml` or `coredata-binary` for an atomic store (told by its first bytes).
    public var formatName: String? {
        found.format == .sqlite ? format?.rawValue : found.format.rawValue
    }
}

extension Storelens {
    /// What `storelens scan` takes besides its inputs.
    public struct ScanOptions: Sendable {
        public var input: InputOptions
        /// Hash every archive (its SHA-256 is in the JSON and the evidence file); costs a read of each.
        public var hashArchives: Bool

        public init(input: InputOptions = InputOptions(), hashArchives: Bool = true) {
            self.input = input
            self.hashArchives = hashArchives
        }
    }

    /// What `storelens scan` found: the inputs' inventories and every store, classified.
    public struct ScanResult: Sendable {
        public var inventories: [Inventory]
        public var stores: [ScannedStore]
        /// The first input whose archive is damaged, with what is wrong with it.
        public var damaged: Inventory? { inventories.first { $0.damage != nil } }
    }

    /// `storelens scan`: the stores in `inputs` (containers, archives, backups), each opened to
    /// tell Core Data from plain SQLite and SwiftData from Core Data; a store that cannot be
    /// opened is listed with its problem, not left out.
    public static func scan(_ inputs: [String], _ options: ScanOptions = ScanOptions()) throws -> ScanResult {
        try reading(options.input) { try scan(inputs, options, in: $0) }
    }

    /// `scan(_:_:)` through a session `reading` opened, which finishes it.
    public static func scan(_ inputs: [String], _ options: ScanOptions, in session: EvidenceSession) throws -> ScanResult {
        // Every store listed is opened to classify it: copied while it is hashed.
        let select = options.input.store
        let resolver = InputResolver(session: session, limits: options.input.limits, hashArchives: options.hashArchives,
                                     stagesCopies: { path in select.map { path.hasSuffix($0) } ?? true })
        var inventories: [Inventory] = []
        for path in InputResolver.distinct(inputs) { inventories.append(try resolver.inventory(of: path)) }
        var scanned: [ScannedStore] = []
        let progress = ProgressReporter.current
        defer { progress.setContext(nil) }
        let total = ProgressReporter.Update.grouped(Int64(inventories.reduce(0) { $0 + $1.stores.count }))
        var number = 0
        for inventory in inventories {
            for found in inventory.stores where select.map({ found.path.hasSuffix($0) }) ?? true {
                number += 1
                progress.setContext("store \(number) of \(total)")
                progress.report("opening \(found.name)", done: Int64(number), unit: .step)
                scanned.append(classify(found, options.input, in: session))
            }
        }
        return ScanResult(inventories: inventories, stores: scanned)
    }

    /// One found store opened and classified; one that cannot be does not hide the others: it
    /// is listed with its problem.
    static func classify(_ found: FoundStore, _ input: InputOptions, in session: EvidenceSession) -> ScannedStore {
        do {
            if found.format != .sqlite {
                // Read whole from its copy: a file that only looks like one is listed with its problem.
                let atomic = try session.atomicCopy(of: found)
                _ = try AtomicStoreReader.read(atomic.copy, format: found.format, displayPath: found.path)
                return ScannedStore(found: found, format: nil, stack: nil, problem: nil)
            }
            let copy = try session.workingCopy(of: found, options: input.open)
            let (format, verdict) = try StoreInspector.classify(copy)
            return ScannedStore(found: found, format: format, stack: verdict.stack, problem: nil,
                                externalData: format == .coreData ? try StoreInspector.externalData(copy) : nil)
        } catch {
            return ScannedStore(found: found, format: nil, stack: nil, problem: "\(error)")
        }
    }
}
