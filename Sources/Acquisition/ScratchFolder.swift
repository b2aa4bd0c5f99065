import Foundation

/// A private (0700) working folder for copies of evidence. SQLite only ever opens files here.
///
/// Every folder is registered so that the executable can remove them all on exit, on error
/// and on Ctrl-C; `keep` leaves it for inspection (`--keep-scratch`).
public final class ScratchFolder: @unchecked Sendable {
    public let url: URL
    public let keep: Bool
    private let lock = NSLock()
    private var removed = false
    private var counter = 0

    /// Creates a fresh folder `storelens-XXXXXX` under `parent` (default: `$TMPDIR` or /tmp).
    public init(parent: URL? = nil, keep: Bool = false) throws {
        let base = parent?.path ?? ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        var template = Array((base + "/storelens-XXXXXX").utf8CString)
        let made = template.withUnsafeMutableBufferPointer { buffer -> Bool in
            guard let base = buffer.baseAddress else { return false }
            return mkdtemp(base) != nil
        }
        guard made else {
            throw AcquisitionError.scratchFailed(path: base, reason: String(cString: strerror(errno)))
        }
        let path = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        // mkdtemp already creates the folder 0700; say so explicitly in case of an odd umask.
        chmod(path, 0o700)
        self.url = URL(fileURLWithPath: path, isDirectory: true)
        self.keep = keep
        ScratchRegistry.shared.add(self)
    }

    /// A new, empty subfolder with a unique name, for one store's working copy.
    public func makeSubfolder(named hint: String) throws -> URL {
        lock.lock()
        counter += 1
        let n = counter
        lock.unlock()
        let safe = String(hint.unicodeScalars.map { CharacterSet.alphanumerics.contains($0) || $0 == "." || $0 == "-" ? Character($0) : "_" }.prefix(40))
        let sub = url.appendingPathComponent(String(format: "%03d-", n) + (safe.isEmpty ? "store" : safe), isDirectory: true)
        guard mkdir(sub.path, 0o700) == 0 else {
            throw AcquisitionError.scratchFailed(path: sub.path, reason: String(cString: strerror(errno)))
        }
        return sub
    }

    /// Removes the folder unless it is to be kept. Safe to call more than once.
    public func remove() {
        lock.lock()
        defer { lock.unlock() }
        guard !removed, !keep else { return }
        removed = true
        try? FileManager.default.removeItem(at: url)
        ScratchRegistry.shared.forget(self)
    }

    deinit { remove() }
}

/// All live scratch folders of this process, so an interrupt can remove them.
public final class ScratchRegistry: @unchecked Sendable {
    public static let shared = ScratchRegistry()
    private let lock = NSLock()
    private var folders: [ObjectIdentifier: ScratchFolder] = [:]

    func add(_ folder: ScratchFolder) {
        lock.lock(); folders[ObjectIdentifier(folder)] = folder; lock.unlock()
    }
    func forget(_ folder: ScratchFolder) {
        lock.lock(); folders[ObjectIdentifier(folder)] = nil; lock.unlock()
    }

    /// Removes every registered folder (those marked `keep` stay). Called on exit and on signals.
    public func removeAll() {
        lock.lock()
        let all = Array(folders.values)
        lock.unlock()
        for folder in all { folder.remove() }
    }

    /// The folders still present (used by tests and by `--keep-scratch` to print where they are).
    public var live: [URL] {
        lock.lock(); defer { lock.unlock() }
        return folders.values.map(\.url)
    }
}
