import Foundation
import StoreFormats

/// SHA-256 of evidence files being taken on a thread of its own, beside SQLite's reads of a store
/// read in place: the hash before reading need not hold the command up. What each file was when
/// recorded (its identity: inode, size, times) is taken at once; a write to it at any time after
/// changes its ctime, so the closing identity comparison catches a file changed while it was hashed.
/// Asking for a hash waits for it.
final class PendingHashes: @unchecked Sendable {
    let paths: Set<String>
    private let work: BackgroundWork<[String: Result<String, AcquisitionError>]>
    /// The files in the order they were recorded: the first failure in that order is the one told.
    private let order: [String]

    init(_ urls: [URL]) {
        order = urls.map(\.path)
        paths = Set(order)
        work = BackgroundWork(name: "storelens.hash") {
            let hashes = (try? FileWork.map(urls) { url -> Result<String, AcquisitionError> in
                EvidenceReads.pass(url.path)
                do {
                    return .success(try SHA256.hexOfFile(at: url))
                } catch {
                    return .failure(.unreadable(path: url.path, reason: error.localizedDescription))
                }
            }) ?? []
            return Dictionary(uniqueKeysWithValues: zip(urls.map(\.path), hashes))
        }
    }

    /// The hash of `path`, once taken; nil when it could not be (`wait` throws why).
    func hash(for path: String) -> String? {
        try? work.result()[path]?.get()
    }

    /// Waits for every hash; throws the first failure.
    func wait() throws {
        let results = work.result()
        for path in order { _ = try results[path]?.get() }
    }
}

/// A value computed the first time it is asked for (a store's hashes while they are still being
/// taken: `FoundStore.sha256`, `Inventory.inputSHA256`), then kept.
public final class Deferred<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value?
    private var make: (@Sendable () -> Value)?

    public init(_ value: Value) { self.value = value }
    public init(computing make: @escaping @Sendable () -> Value) { self.make = make }

    public var wrappedValue: Value {
        lock.withLock {
            if let value { return value }
            let made = make!()
            value = made
            make = nil
            return made
        }
    }
}
