import Findings

extension StoreNote {
    /// The one rule for a store whose header says WAL mode but whose `-wal` did not come with it;
    /// the working copy, the WAL analysis and `check` all ask it, so they cannot disagree.
    public static func missingWAL(headerSaysWAL: Bool, walPresent: Bool, shmPresent: Bool) -> StoreNote? {
        headerSaysWAL && !walPresent ? .walModeWithoutWAL(shmPresent: shmPresent) : nil
    }

    /// `walModeWithoutWAL` as a finding about `store`: a warning (`wal-missing`) when a `-shm` came
    /// (SQLite deletes both on a clean close, so the `-wal` was left behind), information
    /// (`wal-mode-without-wal`) when neither came (most likely closed cleanly). Nil for other notes.
    public func missingWALFinding(store: String) -> Finding? {
        guard case .walModeWithoutWAL(let shmPresent) = self else { return nil }
        if shmPresent {
            return Finding(id: "wal-missing", severity: .warning, store: store,
                           message: "The header says WAL mode and a -shm came with the store, but its -wal did not.",
                           explanation: "Transactions not yet checkpointed live only in the -wal; without it the store shows an older state.",
                           suggestion: "Copy the store again together with its -wal and -shm files.")
        }
        return Finding(id: "wal-mode-without-wal", severity: .info, store: store,
                       message: "The header says WAL mode and neither a -wal nor a -shm came with the store: it was most likely closed cleanly, with everything checkpointed into the main file.",
                       explanation: "SQLite removes the -wal and -shm when the last connection closes cleanly; had the app been running, the -shm would have come too.")
    }

    /// The one detector of a `-wal` that does not fit the header that came with it: a page size
    /// that differs (it cannot belong), or a rollback-journal header (SQLite applies it anyway).
    public static func walAgainstHeader(databasePageSize: Int, headerSaysWAL: Bool, walPageSize: Int?, walPresent: Bool) -> [StoreNote] {
        var notes: [StoreNote] = []
        if let walPageSize, walPageSize != databasePageSize {
            notes.append(.walPageSizeMismatch(walPageSize: walPageSize, databasePageSize: databasePageSize))
        }
        if walPresent && !headerSaysWAL { notes.append(.walWithRollbackHeader) }
        return notes
    }

    /// A -wal that does not fit its header as a finding about `store`, the same in every command
    /// (`wal`, `check`, the report). Nil for other notes.
    public func walFitFinding(store: String?) -> Finding? {
        switch self {
        case .walPageSizeMismatch(let wal, let db):
            // An error: a -wal of another database would give wrong answers without a word from SQLite.
            return Finding(id: "wal-page-size-mismatch", severity: .error, store: store,
                           message: "The -wal has \(wal)-byte pages but the database has \(db)-byte pages, so it cannot belong to this database.",
                           evidence: ["walPageSize": .int(wal), "databasePageSize": .int(db)],
                           explanation: "A -wal from another database would silently produce wrong answers; what storelens reads of this store is the main file alone.",
                           suggestion: "Find the -wal that belongs to this database (copied at the same moment).")
        case .walWithRollbackHeader:
            return Finding(id: "wal-with-rollback-header", severity: .warning, store: store,
                           message: "A -wal is present although the header says rollback-journal mode; SQLite still applies it.",
                           explanation: "An app in rollback-journal mode writes no -wal: this one may have been copied from another store or another moment.",
                           suggestion: "Check that the -wal belongs to this database (`storelens wal` shows what it holds).")
        default:
            return nil
        }
    }
}
