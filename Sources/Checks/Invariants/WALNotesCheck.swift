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
            default:
                return nil
            }
        }
    }
}
