import Foundation
import StoreFormats

/// What the file system says about a file: enough to notice any write to it. `ctime` changes on
/// every write and every metadata change and cannot be set back by ordinary means.
public struct FileIdentity: Equatable, Sendable {
    public let device: UInt64
    public let inode: UInt64
    public let size: Int64
    public let modifiedNanoseconds: Int64
    public let changedNanoseconds: Int64

    public static func of(_ path: String) -> FileIdentity? {
        var st = stat()
        guard lstat(path, &st) == 0 else { return nil }
        #if os(Linux)
        let m = Int64(st.st_mtim.tv_sec) * 1_000_000_000 + Int64(st.st_mtim.tv_nsec)
        let c = Int64(st.st_ctim.tv_sec) * 1_000_000_000 + Int64(st.st_ctim.tv_nsec)
        #else
        let m = Int64(st.st_mtimespec.tv_sec) * 1_000_000_000 + Int64(st.st_mtimespec.tv_nsec)
        let c = Int64(st.st_ctimespec.tv_sec) * 1_000_000_000 + Int64(st.st_ctimespec.tv_nsec)
        #endif
        return FileIdentity(device: UInt64(st.st_dev), inode: UInt64(st.st_ino), size: Int64(st.st_size),
                            modifiedNanoseconds: m, changedNanoseconds: c)
    }
}

/// What a file looked like when storelens first touched it: enough to prove afterwards that
/// it was not changed.
public struct FileEvidence: Equatable, Sendable {
    public let path: String
    public let size: Int
    /// SHA-256, when the file was hashed (store families always; archives when evidence is asked for).
    public let sha256: String?
    public let identity: FileIdentity?

    /// Records the file at `url`, hashing it when `hash` is set.
    public static func record(_ url: URL, hash: Bool = true) throws -> FileEvidence {
        let identified = try identify(url)
        guard hash else { return identified }
        EvidenceReads.pass(url.path)
        return FileEvidence(path: url.path, size: identified.size, sha256: try SHA256.hexOfFile(at: url), identity: identified.identity)
    }

    /// What the file at `url` is now (its identity, no hash), after the checks a hash would make
    /// first: no link inside the evidence is ever hashed (its target is not what came off the
    /// device), and the file must open for reading as the regular file it is.
    static func identify(_ url: URL) throws -> FileEvidence {
        guard let identity = FileIdentity.of(url.path) else {
            throw AcquisitionError.unreadable(path: url.path, reason: String(cString: strerror(errno)))
        }
        if let target = SymbolicLink.target(of: url.path) { throw AcquisitionError.linkInEvidence(path: url.path, target: target) }
        return FileEvidence(path: url.path, size: Int(identity.size), sha256: nil, identity: identity)
    }

    /// The same record with its hash.
    func hashed(_ sha256: String) -> FileEvidence {
        FileEvidence(path: path, size: size, sha256: sha256, identity: identity)
    }
}

/// The evidence for a set of input files, taken before reading and checked after.
public struct EvidenceLedger: Sendable {
    /// Every file recorded, in order, each with its hash (waited for when it is still being
    /// taken: `recordHashingBeside`).
    public var entries: [FileEvidence] { recorded.map(resolved) }
    private var recorded: [FileEvidence] = []
    /// The files recorded, in order (without waiting for a hash still being taken).
    public var paths: [String] { recorded.map(\.path) }
    /// Position of each path in `recorded`: a scan of thousands of stores looks paths up once per
    /// file, and a linear search made the whole scan grow with the square of the store count.
    private var index: [String: Int] = [:]
    /// Hashes still being taken on a thread of their own, and which of them takes each path's.
    private var pending: [PendingHashes] = []
    private var pendingIndex: [String: Int] = [:]

    /// Sidecars a store family did not have when it was recorded (`<main>-wal`, `-journal`,
    /// `-shm`): one that appears while the store is read (a live app's first write after a
    /// checkpoint) changes what SQLite would show, so the closing checks prove none did.
    public private(set) var absent: [String] = []

    public init() {}

    /// Records that these files do not exist now (those that do are left out).
    mutating func recordAbsent(_ paths: [String]) {
        for path in paths where !absent.contains(path) {
            var st = stat()
            if lstat(path, &st) != 0 && errno == ENOENT { absent.append(path) }
        }
    }

    /// The first change to the recorded files that their identities show (inode, size, times),
    /// or a file recorded absent that exists now; nil when none. Waits for no hash: it is the
    /// question a failing run asks before blaming the evidence.
    func firstChange() -> AcquisitionError? {
        for before in recorded where before.identity != nil && FileIdentity.of(before.path) != before.identity {
            return .evidenceChanged(path: before.path, before: before.sha256 ?? "(identity)", after: "(size, times or inode changed)")
        }
        do { try verifyStillAbsent() } catch let changed as AcquisitionError { return changed } catch {}
        return nil
    }

    /// Throws for the first file recorded as absent that exists now.
    func verifyStillAbsent() throws {
        for path in absent {
            var st = stat()
            if lstat(path, &st) == 0 || errno != ENOENT {
                throw AcquisitionError.evidenceChanged(path: path, before: "(absent)", after: "(it was not there when storelens began and appeared while it read the store)")
            }
        }
    }

    /// The evidence recorded for `path`, if any (its hash waited for when still being taken).
    public func entry(for path: String) -> FileEvidence? {
        index[path].map { resolved(recorded[$0]) }
    }

    /// Where the hash of `path` comes from, without waiting: taken already, or still being taken;
    /// nil when the file was not recorded or not hashed.
    enum HashSource {
        case known(String)
        case pending(PendingHashes)
    }

    func hashSource(for path: String) -> HashSource? {
        guard let at = index[path] else { return nil }
        if let hash = recorded[at].sha256 { return .known(hash) }
        return pendingIndex[path].map { .pending(pending[$0]) }
    }

    private func resolved(_ evidence: FileEvidence) -> FileEvidence {
        guard evidence.sha256 == nil, let hashing = pendingIndex[evidence.path].map({ pending[$0] }),
              let hash = hashing.hash(for: evidence.path) else { return evidence }
        return evidence.hashed(hash)
    }

    /// Waits for every hash still being taken; throws the first that could not be.
    public func settle() throws {
        for hashing in pending { try hashing.wait() }
    }

    /// Adds evidence taken elsewhere (an encrypted file hashed while it was decrypted).
    mutating func add(_ evidence: FileEvidence) {
        if let at = index[evidence.path] {
            recorded[at] = evidence
        } else {
            index[evidence.path] = recorded.count
            recorded.append(evidence)
        }
    }

    /// Records `urls` now (identity, and the checks a hash makes first) and hashes them on a
    /// thread of their own (`PendingHashes`), so a store read in place is read while it is hashed.
    /// Files already hashed are left as they are.
    mutating func recordHashingBeside(_ urls: [URL]) throws {
        var todo: [URL] = []
        for url in urls where index[url.path] == nil && !todo.contains(url) {
            let evidence = try FileEvidence.identify(url)
            // Unreadable is said now, as a hash taken at once would say it, not after SQLite
            // has failed to open the file for the same reason.
            do {
                close(try SmallFile.openRegular(url).fd)
            } catch {
                throw AcquisitionError.unreadable(path: url.path, reason: error.description)
            }
            add(evidence)
            todo.append(url)
        }
        guard !todo.isEmpty else { return }
        for url in todo { pendingIndex[url.path] = pending.count }
        pending.append(PendingHashes(todo))
    }

    public mutating func record(_ urls: [URL], hash: Bool = true) throws {
        try record(urls, hash: hash, copying: [])
    }

    /// Records `urls` and copies each `copying` pair (original → new file in the scratch folder) on
    /// the same two threads. A file both hashed and copied is read once: its hash is taken from the
    /// bytes as they are copied (every evidence byte is read at most twice, here and in the
    /// after-hash).
    mutating func record(_ urls: [URL], hash: Bool = true, copying: [(from: URL, to: URL)]) throws {
        var todo: [URL] = []
        var queued = Set<String>()
        for url in urls where !(entry(for: url.path).map { $0.sha256 != nil || !hash } ?? false) && queued.insert(url.path).inserted {
            todo.append(url)
        }
        enum Job { case hash(URL), copy(URL, URL), copyHashing(URL, URL) }
        let hashedWhileCopied = Set(copying.map(\.from.path)).intersection(todo.map(\.path))
        let jobs = todo.filter { !hashedWhileCopied.contains($0.path) }.map(Job.hash)
            + copying.map { hashedWhileCopied.contains($0.from.path) ? Job.copyHashing($0.from, $0.to) : Job.copy($0.from, $0.to) }
        // A hash costs about three times a copy of the same bytes (measured: SHA-256 at 2 GB/s,
        // a page-cache copy at 6 GB/s).
        let weights = jobs.map { job -> Int64 in
            switch job {
            case .hash(let url): return 3 * FileWork.size(url)
            case .copy(let url, _): return FileWork.size(url)
            case .copyHashing(let url, _): return 4 * FileWork.size(url)
            }
        }
        let done = try FileWork.map(jobs, weights: weights) { job -> FileEvidence? in
            switch job {
            case .copy(let from, let to):
                try SafeCopy.copy(from, to: to)
                return nil
            case .copyHashing(let from, let to):
                // The identity is taken before the first byte is read, as `FileEvidence.record` does;
                // SafeCopy opens with O_NOFOLLOW and names a link in the evidence as such.
                guard let identity = FileIdentity.of(from.path) else {
                    throw AcquisitionError.unreadable(path: from.path, reason: String(cString: strerror(errno)))
                }
                if let target = SymbolicLink.target(of: from.path) { throw AcquisitionError.linkInEvidence(path: from.path, target: target) }
                let sha256 = try SafeCopy.copy(from, to: to, hashing: true)
                return FileEvidence(path: from.path, size: Int(identity.size), sha256: sha256, identity: identity)
            case .hash(let url):
                do {
                    return try FileEvidence.record(url, hash: hash)
                } catch let error as AcquisitionError {
                    throw error
                } catch {
                    throw AcquisitionError.unreadable(path: url.path, reason: "\(error.localizedDescription)")
                }
            }
        }
        // In the order the files were asked for, whichever job read them: a manifest lists a
        // family main file first, whether or not its hash was taken while it was copied.
        let byPath = Dictionary(done.compactMap { $0 }.map { ($0.path, $0) }, uniquingKeysWith: { _, last in last })
        for evidence in todo.compactMap({ byPath[$0.path] }) { add(evidence) }
    }

    /// Checks every recorded file; throws if any changed. A change is a bug in storelens.
    ///
    /// Hashed files are hashed again; every file's identity (inode, size, mtime, ctime) must match.
    /// Checks every recorded file's identity (inode, size, mtime, ctime) without hashing: any write
    /// to a file changes its ctime, so this proves nothing was written since it was recorded.
    public func verifyIdentities() throws {
        try settle()
        try verifyStillAbsent()
        for before in entries {
            let after = FileIdentity.of(before.path)
            if after != before.identity {
                throw AcquisitionError.evidenceChanged(path: before.path, before: before.sha256 ?? "(identity)", after: "(size, times or inode changed)")
            }
        }
    }

    public func verifyUnchanged(where include: (String) -> Bool = { _ in true }) throws {
        try settle()
        let checked = entries.filter { include($0.path) }
        let after = try FileWork.map(checked.map { URL(fileURLWithPath: $0.path) }) { url in
            try FileEvidence.record(url, hash: entry(for: url.path)?.sha256 != nil)
        }
        for (before, after) in zip(checked, after) where after.sha256 != before.sha256 || after.identity != before.identity {
            throw AcquisitionError.evidenceChanged(path: before.path, before: before.sha256 ?? "(identity)", after: after.sha256 ?? "(identity)")
        }
        try verifyStillAbsent()
    }
}
