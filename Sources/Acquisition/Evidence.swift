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
        guard let identity = FileIdentity.of(url.path) else {
            throw AcquisitionError.unreadable(path: url.path, reason: String(cString: strerror(errno)))
        }
        return FileEvidence(path: url.path, size: Int(identity.size),
                            sha256: hash ? try SHA256.hexOfFile(at: url) : nil, identity: identity)
    }
}

/// The evidence for a set of input files, taken before reading and checked after.
public struct EvidenceLedger: Sendable {
    public private(set) var entries: [FileEvidence] = []

    public init() {}

    public mutating func record(_ urls: [URL], hash: Bool = true) throws {
        for url in urls where !entries.contains(where: { $0.path == url.path && ($0.sha256 != nil || !hash) }) {
            do {
                entries.removeAll { $0.path == url.path }
                entries.append(try FileEvidence.record(url, hash: hash))
            } catch let error as AcquisitionError {
                throw error
            } catch {
                throw AcquisitionError.unreadable(path: url.path, reason: "\(error.localizedDescription)")
            }
        }
    }

    /// Checks every recorded file; throws if any changed. A change is a bug in storelens.
    ///
    /// Hashed files are hashed again; every file's identity (inode, size, mtime, ctime) must match.
    public func verifyUnchanged() throws {
        for before in entries {
            let after = try FileEvidence.record(URL(fileURLWithPath: before.path), hash: before.sha256 != nil)
            if after.sha256 != before.sha256 || after.identity != before.identity {
                throw AcquisitionError.evidenceChanged(path: before.path, before: before.sha256 ?? "(identity)", after: after.sha256 ?? "(identity)")
            }
        }
    }
}
