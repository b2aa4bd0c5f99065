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
/// was read. `Storelens.check(inputs, options, in: session)` reads through a session the caller
/// made (the command's, with its password source and warnings), and leaves finishing it to them.
public enum Storelens {
    /// What every command that reads stores takes: `--store`, `--roll-back-journal`, the archive
    /// limits and `--read-damaged`.
    public struct InputOptions: Sendable {
        /// Keep only the store whose path ends with this (an input with several stores).
        public var store: String?
        public var open: OpenOptions
        public var limits: ArchiveLimits
        /// Where an encrypted backup's password comes from (a file, a variable, the terminal); nil
        /// refuses an encrypted backup. The calls that make their own session use it; a session
        /// you make carries its own.
        public var backupPassword: BackupPasswordSource?

        public init(store: String? = nil, open: OpenOptions = OpenOptions(), limits: ArchiveLimits = ArchiveLimits(),
                    backupPassword: BackupPasswordSource? = nil) {
            self.store = store
            self.open = open
            self.limits = limits
            self.backupPassword = backupPassword
        }
    }

    /// A session whose working folder is removed whatever happens, and whose originals are checked
    /// unchanged before the answer is returned.
    static func reading<T>(_ input: InputOptions, _ body: (EvidenceSession) throws -> T) throws -> T {
        try EvidenceSession(backupPassword: input.backupPassword).reading { session in
            let result = try body(session)
            try session.finish()
            return result
        }
    }
}

extension EvidenceSession {
    /// The SQLite stores of `inputs` as `options` chooses them; refused stores go to `refused`.
    func stores(from inputs: [String], _ options: Storelens.InputOptions, refused: inout [RefusedStore]) throws -> [AcquiredStore] {
        try stores(from: inputs, select: options.store, options: options.open, limits: options.limits, refused: &refused)
    }
}
