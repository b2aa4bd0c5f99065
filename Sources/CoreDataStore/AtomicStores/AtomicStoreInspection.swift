import Acquisition
import Foundation

/// What `inspect` shows of a Core Data XML or binary store: its type and metadata, the model's
/// entities (from the version hashes) with their objects, and what was odd in it.
public struct AtomicStoreInspection: Sendable {
    public let path: String
    public let sizeBytes: Int
    public let contents: AtomicStoreContents

    public init(path: String, sizeBytes: Int, contents: AtomicStoreContents) {
        self.path = path
        self.sizeBytes = sizeBytes
        self.contents = contents
    }
}

extension AtomicStoreInspection {
    /// Reads an atomic store from its private copy (`EvidenceSession.atomicCopy`).
    public static func inspect(_ store: AcquiredAtomicStore) throws(AtomicStoreError) -> AtomicStoreInspection {
        let contents = try AtomicStoreReader.read(store.copy, format: store.format, displayPath: store.displayPath)
        return AtomicStoreInspection(path: store.displayPath, sizeBytes: store.found.size, contents: contents)
    }
}
