import Acquisition
import CoreDataStore
import Findings
import Foundation
import SQLiteAccess
import StoreFormats

extension StoreChecker {
    func walNotes() -> [Finding] {
        notes.compactMap { note in
            switch note {
            case .walModeWithoutWAL(let shmPresent):
                // Without a -shm either, the store was most likely closed cleanly: nothing to report.
                guard shmPresent else { return nil }
                return note.missingWALFinding(store: path)
            case .walPageSizeMismatch(let wal, let db):
                return finding(.walPageSizeMismatch, .error, entity: nil, "The -wal has \(wal)-byte pages but the database has \(db)-byte pages; it was ignored.",
                               evidence: ["walPageSize": .int(wal), "databasePageSize": .int(db)],
                               explanation: "A -wal from another database would silently produce wrong answers; the checks ran on the main file alone.",
                               suggestion: "Find the -wal that belongs to this database (copied at the same moment).")
            case .walDoesNotBelong(let reason):
                return finding(.walMismatch, .error, entity: nil, "The -wal does not belong to this main file: \(reason); it was left out.",
                               evidence: ["reason": .string(reason)],
                               explanation: "Its frames are valid, so SQLite would apply them without an error and show another database's pages as this store's; the checks ran on the main file alone.",
                               suggestion: "Find the -wal that belongs to this store (copy the main file, -wal and -shm again at one moment); `storelens wal` shows what this one holds.")
            default:
                return nil
            }
        }
    }
}
