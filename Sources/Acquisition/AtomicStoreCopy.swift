import Foundation
import StoreFormats

/// A Core Data XML or binary store found in an input and copied into the working folder: one
/// file, no sidecars, read whole from the copy (never from the original).
public struct AcquiredAtomicStore: Sendable {
    public let displayPath: String
    public let found: FoundStore
    public var format: StoreFileFormat { found.format }
    /// storelens's private copy, the only file its readers open.
    public let copy: URL
}

extension EvidenceSession {
    /// Copies an atomic store into a fresh subfolder of the working folder: the copy made while
    /// it was hashed is moved into place; otherwise the original is copied and the copy's SHA-256
    /// compared with the one recorded, so what is read is what was hashed.
    public func atomicCopy(of store: FoundStore) throws -> AcquiredAtomicStore {
        let main = store.family.main
        // The size first: a store its reader refuses is never copied (`SmallFile`'s rule).
        let size = FileWork.size(main)
        if size > Int64(StoreFileFormat.atomicStoreByteLimit) {
            throw AcquisitionError.atomicStoreTooLarge(path: store.path, size: size, limit: StoreFileFormat.atomicStoreByteLimit)
        }
        let folder = try scratch.makeSubfolder(named: store.name)
        // Tests change the evidence here: the copy exists and the after-hash has not started.
        defer { TestPause.reach("working-copy") }
        // Extracted from an archive: already storelens's own copy.
        if main.standardizedFileURL.path.hasPrefix(scratch.url.standardizedFileURL.path + "/") {
            return AcquiredAtomicStore(displayPath: store.path, found: store, copy: main)
        }
        let destination = folder.appendingPathComponent("store")
        if let staged = takeStaged(store.family)[main.path], rename(staged.path, destination.path) == 0 {
            return AcquiredAtomicStore(displayPath: store.path, found: store, copy: destination)
        }
        let hash = try SafeCopy.copy(main, to: destination, hashing: true)
        if let recorded = ledger.entry(for: main.path)?.sha256, let hash, recorded != hash {
            throw AcquisitionError.evidenceChanged(path: store.path, before: recorded, after: hash)
        }
        return AcquiredAtomicStore(displayPath: store.path, found: store, copy: destination)
    }
}
