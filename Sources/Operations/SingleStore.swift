import Acquisition

extension EvidenceSession {
    /// The one store of `path`, for the operations that read a single store; an input holding
    /// several needs `--store`, and the error says which stores it found.
    public func singleStore(_ path: String, _ input: Storelens.InputOptions) throws -> AcquiredStore {
        let stores = try stores(from: [path], select: input.store, options: input.open, limits: input.limits)
        guard stores.count == 1, let store = stores.first else {
            throw InputError(message: "\(path) holds \(stores.count) stores (\(stores.prefix(10).map(\.displayPath).joined(separator: ", "))); choose one with --store.")
        }
        return store
    }

    /// The one store of `path`, which may be a Core Data XML or binary store (`rows`, `export`).
    public func singleStoreOrAtomic(_ path: String, _ input: Storelens.InputOptions) throws -> SingleStore {
        var refused: [RefusedStore] = []
        var atomic: [AcquiredAtomicStore] = []
        let stores = try stores(from: [path], select: input.store, options: input.open, limits: input.limits, refused: &refused, atomic: &atomic)
        if let first = refused.first { throw first.error }
        let names = stores.map(\.displayPath) + atomic.map(\.displayPath)
        guard names.count == 1 else {
            throw InputError(message: "\(path) holds \(names.count) stores (\(names.prefix(10).joined(separator: ", "))); choose one with --store.")
        }
        return stores.first.map(SingleStore.sqlite) ?? .atomic(atomic[0])
    }
}

/// The one store an operation reads: a SQLite store, or a Core Data XML or binary one.
public enum SingleStore {
    case sqlite(AcquiredStore)
    case atomic(AcquiredAtomicStore)
}
