import Acquisition
import CoreDataStore
import Foundation
import StoreFormats
import WALForensics

extension Storelens {
    /// What `storelens recover` takes besides its input.
    public struct RecoverOptions: Sendable {
        public var input: InputOptions
        /// `--entity`, `--pk`, `--state`: keep only these versions.
        public var filter: RecordRecovery.Filter
        /// False: `--no-carve`, no records carved from free pages and freeblocks.
        public var carve: Bool

        public init(input: InputOptions = InputOptions(), filter: RecordRecovery.Filter = RecordRecovery.Filter(), carve: Bool = true) {
            self.input = input
            self.filter = filter
            self.carve = carve
        }
    }

    /// What `recover` hands out, in order: a store begins (with its WAL's commit count), each
    /// version of its records, it ends.
    public enum RecoveryWalk {
        case storeBegins(String, commits: Int)
        case version(String, RecordVersion)
        /// The store is done; `turnedAway`: how many carving candidates each rule turned away.
        case storeEnds(String, turnedAway: [String: Int])
    }

    /// `storelens recover`: every version of every record the stores of `input` still hold (live,
    /// superseded in the WAL, deleted, uncommitted, carved), handed to `visit` as it is found.
    public static func recover(_ input: String, _ options: RecoverOptions = RecoverOptions(), visit: (RecoveryWalk) throws -> Void) throws {
        try reading(options.input) { try recover(input, options, in: $0, visit: visit) }
    }

    /// `recover(_:_:visit:)` through a session `reading` opened, which finishes it.
    public static func recover(_ input: String, _ options: RecoverOptions, in session: EvidenceSession, visit: (RecoveryWalk) throws -> Void) throws {
        for store in try session.stores(from: [input], select: options.input.store, options: options.input.open, limits: options.input.limits) {
            try checkEntity(options.filter, in: store)
            let evidence = try WALEvidence(copy: store.copy, displayPath: store.displayPath)
            try visit(.storeBegins(store.displayPath, commits: evidence.commitCount))
            let turnedAway = try RecordRecovery.forEachVersion(evidence, filter: options.filter, carve: options.carve, decoder: ValueDecoder(store.copy)) {
                try visit(.version(store.displayPath, $0))
            }
            try visit(.storeEnds(store.displayPath, turnedAway: turnedAway))
        }
    }

    /// `--entity` names an entity the store has (`Z_PRIMARYKEY`, any case, or `#n`), or the run
    /// is refused with the nearest name: "no record versions" for a misspelt name would read as
    /// "nothing was deleted". A store without `Z_PRIMARYKEY` (plain SQLite) names none to check.
    static func checkEntity(_ filter: RecordRecovery.Filter, in store: AcquiredStore) throws {
        guard let wanted = filter.entity, !(wanted.hasPrefix("#") && Int(wanted.dropFirst()) != nil) else { return }
        let connection = try store.copy.open()
        guard (try? connection.tableExists("Z_PRIMARYKEY")) == true,
              let names = try? connection.rows("SELECT Z_NAME FROM Z_PRIMARYKEY LIMIT 100000").compactMap({ $0[0].string }) else { return }
        guard !names.contains(where: { $0.lowercased() == wanted.lowercased() }) else { return }
        throw ModelError.unknownEntity(name: wanted, path: store.displayPath, suggestion: EditDistance.closest(to: wanted, in: names) { $0.lowercased() })
    }

    /// What `recover --out` wrote.
    public struct RecoveredFile: Sendable {
        public let output: String
        public let versions: Int
        /// One table per entity (and one for carved records).
        public let tables: [String]
        /// Each store with the versions it gave.
        public let stores: [(path: String, versions: Int)]
    }

    /// `storelens recover --out FILE`: every version into a new SQLite file (never over an existing one).
    public static func recover(_ input: String, _ options: RecoverOptions = RecoverOptions(), into output: String) throws -> RecoveredFile {
        try reading(options.input) { try recover(input, options, into: output, in: $0) }
    }

    /// `recover(_:_:into:)` through a session `reading` opened, which finishes it.
    public static func recover(_ input: String, _ options: RecoverOptions, into output: String, in session: EvidenceSession) throws -> RecoveredFile {
        if FileManager.default.fileExists(atPath: output) || (try? FileManager.default.destinationOfSymbolicLink(atPath: output)) != nil {
            throw WALForensicsError.outputExists(path: output)
        }
        let stores = try session.stores(from: [input], select: options.input.store, options: options.input.open, limits: options.input.limits)
        let database = try RecoveredDatabase.create(at: output)
        var counts: [(path: String, versions: Int)] = []
        do {
            for store in stores {
                try checkEntity(options.filter, in: store)
                let evidence = try WALEvidence(copy: store.copy, displayPath: store.displayPath)
                let before = database.versions
                try RecordRecovery.forEachVersion(evidence, filter: options.filter, carve: options.carve, decoder: ValueDecoder(store.copy)) {
                    try database.add(store: store.displayPath, $0)
                }
                counts.append((store.displayPath, database.versions - before))
            }
            try database.finish()
        } catch {
            database.abandon()
            throw error
        }
        return RecoveredFile(output: output, versions: database.versions, tables: database.tableNames, stores: counts)
    }
}
