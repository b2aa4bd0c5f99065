import Acquisition
import Checks
import CoreDataStore
import Foundation
import StoreTestSupport
import Testing

/// Stores taken in as the repair takes them, and what check then finds in them.
enum RepairInputs {
    /// The first store `url` holds, copied into `session`'s scratch.
    static func acquire(_ url: URL, session: EvidenceSession) throws -> AcquiredStore {
        try #require(try session.stores(from: [url.path]).first)
    }

    /// The ids of what check finds in the store at `url`, in a session of its own.
    static func checkIDs(_ url: URL) throws -> [String] {
        let session = try EvidenceSession()
        defer { session.scratch.remove() }
        let store = try acquire(url, session: session)
        let opened = try OpenedStore.open(store.copy, displayPath: url.path)
        return try StoreChecker(opened: opened, notes: store.copy.notes).run().map(\.id)
    }
}
