import Foundation
import StoreBuilder
import StoreTestSupport

/// A store with something to repair, for the tests that interrupt or disturb a run.
enum LaggingKeyStore {
    /// A store whose Z_MAX lags (so there is something to repair) and whose last notes live only in its -wal.
    static func withNotesInWAL(in folder: URL) throws -> URL {
        let url = folder.appendingPathComponent("default.store")
        let w = try StoreWriter(url: url, model: InvariantFixture.model)
        try w.transaction(nil) { w in for n in 1...3 { try w.insert("Note", ["title": .string("note \(n)")]) } }
        try w.checkpoint()
        try w.transaction(nil) { w in for n in 4...6 { try w.insert("Note", ["title": .string("wal note \(n)")]) } }
        try w.executeRaw("UPDATE Z_PRIMARYKEY SET Z_MAX = 1 WHERE Z_NAME = 'Note'")
        try w.close(leavingWAL: true)
        return url
    }
}
