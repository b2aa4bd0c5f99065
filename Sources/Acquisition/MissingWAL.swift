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
}
