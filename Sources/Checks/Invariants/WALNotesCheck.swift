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
            case .walPageSizeMismatch:
                return note.walFitFinding(store: path)
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
