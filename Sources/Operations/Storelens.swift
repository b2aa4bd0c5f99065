import Acquisition
import Foundation
import StoreFormats

/// One call per capability, the same call the command of that name makes: options in, results
/// out. None reads argv, the environment or standard output, or decides an exit code; the
/// command parses, calls, renders and exits, and `StorelensKit` re-exports these calls, so the
/// library and the command cannot answer differently.
///
/// Every call comes in two forms. `Storelens.check(inputs, options)` makes its own session: it
/// hashes the input's files, copies each store family into a private working folder, reads only
/// the copies, removes the folder on every path, and throws when an original changed while it
/// was read. `Storelens.check(inputs, options, in: session)` reads through a session opened by
/// `Storelens.reading`, which finishes it: the one place a session is opened and ended, for the
/// first form and for every command alike.
public enum Storelens {
    /// What every command that reads stores takes: `--store`, `--roll-back-journal`, the archive
    /// limits and `--read-damaged`.
    public struct InputOptions: Sendable {
        /// Keep only the store whose path ends with this (an input with several stores).
        public var store: String?
        public var open: OpenOptions
        public var limits: ArchiveLimits
        /// Where an encrypted backup's password comes from (a file, a variable, the terminal); nil
        /// refuses an encrypted backup. The session `reading` opens carries it.
        public var backupPassword: BackupPasswordSource?
        /// `--keep-scratch`: the session's private working folder stays after it ends.
        public var keepScratch: Bool
        /// Told, one sentence each (no final period), of what is read anyway but never silently: a
        /// damaged archive read on request (`ArchiveLimits.readDamaged`), a store another process
        /// has open or is writing (`StoreInUse`). Before the results, so a command can warn first.
        public var warn: (@Sendable (String) -> Void)?

        public init(store: String? = nil, open: OpenOptions = OpenOptions(), limits: ArchiveLimits = ArchiveLimits(),
                    backupPassword: BackupPasswordSource? = nil, keepScratch: Bool = false, warn: (@Sendable (String) -> Void)? = nil) {
            self.store = store
            self.open = open
            self.limits = limits
            self.backupPassword = backupPassword
            self.keepScratch = keepScratch
            self.warn = warn
        }
    }

    /// A session as `input` asks for it: its password source, working folder kept or not, warnings.
    /// `reading` opens one and ends it; open one here only to end it yourself (`finish`, then its
    /// `reading` removes the working folder).
    public static func session(_ input: InputOptions) throws -> EvidenceSession {
        let session = try EvidenceSession(keepScratch: input.keepScratch, backupPassword: input.backupPassword)
        if let warn = input.warn {
            session.onDamagedInput = { warn($0.warning) }
            session.onStoreInUse = warn
        }
        return session
    }

    /// The one place a session is opened and ended. Opens it as `input` asks (`session`), runs
    /// `read` with it, then checks every original unchanged (`EvidenceSession.finish`, unless `read`
    /// did: an export and a report check them before they write, an in-place repair before its
    /// swap), then runs `then` with what was read: nothing it does (print, write a file) comes
    /// before the originals are checked. The working folder is removed on every path (kept with
    /// `keepScratch`), and a failure is reported as `EvidenceSession.explaining` tells (an
    /// original that changed while it was read is the answer, not SQLite's complaint about it).
    public static func reading<T, R>(_ input: InputOptions, _ read: (EvidenceSession) throws -> T,
                                     then: (T, EvidenceSession) throws -> R) throws -> R {
        try ending(session(input), read, then: then)
    }

    /// `reading(_:_:then:)` past the opening: ends `session`, made by `session(_:)` (a batch makes
    /// one per input, `BatchEvidence`).
    static func ending<T, R>(_ session: EvidenceSession, _ read: (EvidenceSession) throws -> T,
                             then: (T, EvidenceSession) throws -> R) throws -> R {
        try session.reading { session in
            let result = try read(session)
            if !session.isFinished { try session.finish() }
            return try then(result, session)
        }
    }

    /// `reading(_:_:then:)` with nothing to do after the originals are checked: what `read`
    /// returns, from a session that is over.
    public static func reading<T>(_ input: InputOptions, _ read: (EvidenceSession) throws -> T) throws -> T {
        try reading(input, read, then: { result, _ in result })
    }
}

extension EvidenceSession {
    /// The SQLite stores of `inputs` as `options` chooses them; refused stores go to `refused`.
    func stores(from inputs: [String], _ options: Storelens.InputOptions, refused: inout [RefusedStore]) throws -> [AcquiredStore] {
        try stores(from: inputs, select: options.store, options: options.open, limits: options.limits, refused: &refused)
    }
}
