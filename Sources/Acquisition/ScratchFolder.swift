import Foundation

/// A private (0700) working folder for copies of evidence and storelens's own temporary files.
/// SQLite opens no file of the evidence with its own file handling but here.
///
/// Made on first use (`makeSubfolder`) when asked to be made lazily: a store read in place needs
/// none, so a command reading plain store files works without a writable `$TMPDIR` (evidence on a
/// read-only mount, read from a read-only system).
///
/// Every folder is registered so that the executable can remove them all on exit, on error
/// and on Ctrl-C; `keep` leaves it for inspection (`--keep-scratch`).
public final class ScratchFolder: @unchecked Sendable {
    /// Where the folder is (or will be, until it is first used).
    public let url: URL
    public let keep: Bool
    private let parent: String
    private let lock = NSLock()
    private var removed = false
    private var made: Bool
    private var counter = 0

    /// A fresh folder `storelens-XXXXXX` under `parent` (default: `$TMPDIR` or /tmp), made now, or
    /// (`lazily`) when first used: its name is then chosen now, from 64 random bits.
    public init(parent: URL? = nil, keep: Bool = false, lazily: Bool = false) throws {
        let base = parent?.path ?? Self.defaultParent
        self.parent = base
        self.keep = keep
        if lazily {
            var random = SystemRandomNumberGenerator()
            url = URL(fileURLWithPath: base + "/storelens-" + String(random.next() as UInt64, radix: 36), isDirectory: true)
            made = false
        } else {
            guard let path = ScratchRegistry.shared.makeFolder(in: base) else {
                throw WorkingFolderFailure(folder: base, code: errno)
            }
            // mkdtemp already creates the folder 0700; say so explicitly in case of an odd umask.
            chmod(path, 0o700)
            url = URL(fileURLWithPath: path, isDirectory: true)
            made = true
        }
        ScratchRegistry.shared.add(self)
    }

    /// Where scratch folders go by default: `$TMPDIR`, or /tmp.
    public static var defaultParent: String {
        ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
    }

    /// Whether the folder has been made (a session that read every store in place made none).
    public var exists: Bool { lock.withLock { made && !removed } }

    /// Makes the folder if it is not there yet. Throws `WorkingFolderFailure` (ours, never the
    /// evidence's) when it cannot be made, or once it has been removed.
    public func create() throws {
        try lock.withLock {
            guard !made else { return }
            // mkdir fails on anything already there (a link planted at the name included).
            guard !removed, ScratchRegistry.shared.makeFolder(at: url.path) else {
                throw WorkingFolderFailure(folder: parent, code: removed ? ECANCELED : errno)
            }
            chmod(url.path, 0o700)
            made = true
        }
    }

    /// The path of a new subfolder with a unique name, for one store: made by `makeSubfolder(at:)`
    /// when something must be written there.
    public func subfolderPath(named hint: String) -> URL {
        lock.lock()
        counter += 1
        let n = counter
        lock.unlock()
        let safe = String(hint.unicodeScalars.map { CharacterSet.alphanumerics.contains($0) || $0 == "." || $0 == "-" ? Character($0) : "_" }.prefix(40))
        return url.appendingPathComponent(String(format: "%03d-", n) + (safe.isEmpty ? "store" : safe), isDirectory: true)
    }

    /// Makes the subfolder `sub` (from `subfolderPath`), and the folder itself first, unless made already.
    public func makeSubfolder(at sub: URL) throws {
        try create()
        guard mkdir(sub.path, 0o700) == 0 || errno == EEXIST && sub.deletingLastPathComponent().path == url.path else {
            throw WorkingFolderFailure(folder: url.deletingLastPathComponent().path, code: errno)
        }
    }

    /// A new, empty subfolder with a unique name, for one store's working copy.
    public func makeSubfolder(named hint: String) throws -> URL {
        let sub = subfolderPath(named: hint)
        try create()
        guard mkdir(sub.path, 0o700) == 0 else {
            throw WorkingFolderFailure(folder: url.deletingLastPathComponent().path, code: errno)
        }
        return sub
    }

    /// Removes the folder unless it is to be kept. Safe to call more than once.
    public func remove() {
        lock.lock()
        defer { lock.unlock() }
        guard !removed, !keep else { return }
        removed = true
        guard made else {
            ScratchRegistry.shared.forget(self)
            return
        }
        // On an interrupt, copying and hashing threads may still be creating files in here while
        // the tree is walked, and one created after its folder was listed makes the removal stop
        // short. Once the folder itself is gone nothing can be created in it again, so try until
        // it is.
        var st = stat()
        for _ in 0..<100 {
            try? FileManager.default.removeItem(at: url)
            guard lstat(url.path, &st) == 0 else { break }
            usleep(1_000)
        }
        ScratchRegistry.shared.forget(self)
    }

    deinit { remove() }
}

/// All live scratch folders of this process, so an interrupt can remove them.
///
/// Folders are held weakly: the registry must not keep a folder alive, or a library caller
/// that drops its session after an error (the usual Swift pattern) would leave the copies of
/// the evidence on disk until the process ends, and forever in a long-lived process. A folder
/// whose owner lets go is removed by its `deinit`.
public final class ScratchRegistry: @unchecked Sendable {
    public static let shared = ScratchRegistry()
    private let lock = NSLock()
    private struct Entry {
        weak var folder: ScratchFolder?
    }
    private var folders: [ObjectIdentifier: Entry] = [:]

    /// Folders made but not yet registered, so an interrupt in between still removes them.
    private var unregistered: Set<String> = []
    /// Files of ours outside the scratch folders (a repair's hidden temporary output beside its
    /// destination) that an interrupt must remove too.
    private var files: Set<String> = []
    /// Set by `removeAll`: no new folder is made after it (the process is on its way out).
    private var closing = false

    /// Makes `base/storelens-XXXXXX` (mode 0700) under the lock `removeAll` takes, so a folder is
    /// either known to it or never made. Nil, with errno set, when it cannot be made.
    func makeFolder(in base: String) -> String? {
        lock.lock()
        defer { lock.unlock() }
        guard !closing else {
            errno = ECANCELED
            return nil
        }
        var template = Array((base + "/storelens-XXXXXX").utf8CString)
        let made = template.withUnsafeMutableBufferPointer { buffer -> Bool in
            guard let base = buffer.baseAddress else { return false }
            return mkdtemp(base) != nil
        }
        guard made else { return nil }
        let path = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        unregistered.insert(path)
        return path
    }

    /// Makes the folder at `path` (mode 0700) under the lock `removeAll` takes; false, with errno
    /// set, when it cannot be made (or the process is on its way out).
    func makeFolder(at path: String) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        guard !closing else {
            errno = ECANCELED
            return false
        }
        return mkdir(path, 0o700) == 0
    }

    func add(_ folder: ScratchFolder) {
        lock.lock()
        folders[ObjectIdentifier(folder)] = Entry(folder: folder)
        unregistered.remove(folder.url.path)
        lock.unlock()
    }
    func forget(_ folder: ScratchFolder) {
        lock.lock(); folders[ObjectIdentifier(folder)] = nil; lock.unlock()
    }

    /// Registers a file of ours that an interrupt must remove. Returns false when the process is
    /// already on its way out (the caller must not create the file then).
    @discardableResult
    public func track(file path: String) -> Bool {
        lock.lock(); defer { lock.unlock() }
        guard !closing else { return false }
        files.insert(path)
        return true
    }

    /// The file was renamed into place or removed: an interrupt leaves it alone from now on.
    public func untrack(file path: String) {
        lock.lock(); files.remove(path); lock.unlock()
    }

    /// Removes every registered folder (those marked `keep` stay). Called on exit and on signals.
    public func removeAll() {
        lock.lock()
        closing = true
        let all = folders.values.compactMap(\.folder)
        let orphans = unregistered
        let ours = files
        lock.unlock()
        for path in ours { unlink(path) }
        for folder in all { folder.remove() }
        for path in orphans { try? FileManager.default.removeItem(atPath: path) }
    }

    /// The folders still present (used by tests and by `--keep-scratch` to print where they are).
    public var live: [URL] {
        lock.lock()
        let all = folders.values.compactMap(\.folder)
        lock.unlock()
        // Asked outside the registry's lock: a folder's own lock is taken before the registry's.
        return all.filter(\.exists).map(\.url)
    }
}
