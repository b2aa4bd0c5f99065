import Foundation

/// The one way a file named by the evidence (an archive entry, a backup's domain and path) is
/// created: beneath one private folder of the working folder, component by component.
///
/// Each folder is opened relative to the one before it with `O_NOFOLLOW|O_DIRECTORY` and the file
/// is created with `O_CREAT|O_EXCL|O_NOFOLLOW`, so neither a name that slipped past `ArchivePath`
/// nor a link planted by an earlier entry (or by another process in the folder) can lead a write
/// outside the root. Components must already have passed `ArchivePath`; one that could still
/// climb or nest (`..`, `.`, empty, a `/` or a NUL inside) is refused here as well.
public struct PrivateTree: Sendable {
    public let root: URL

    public init(root: URL) { self.root = root }

    public enum Failure: Error, Equatable, Sendable {
        /// Our own working folder failed (full, unwritable, out of descriptors): never the evidence's fault.
        case ours(code: Int32)
        /// The name cannot be made here (too long for the file system, a file and a folder of the
        /// same name): the entry's fault, reported as a skipped entry.
        case name(reason: String)
    }

    /// Errors of the working folder itself, as opposed to errors about the name asked for.
    static let ownCodes: Set<Int32> = [ENOSPC, EDQUOT, EACCES, EPERM, EROFS, EIO, EMFILE, ENFILE, ENOMEM]

    /// Creates the file `components` names beneath the root (folders 0700, the file 0600) and
    /// returns it open for writing, with its path.
    public func createFile(_ components: [String]) throws(Failure) -> (fd: Int32, url: URL) {
        guard let last = components.last else { throw .name(reason: "no file name") }
        for part in components where !Self.isPlain(part) {
            throw .name(reason: "the path component \"\(part.prefix(40))\" could lead outside the working folder")
        }
        var folder = open(root.path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard folder >= 0 else { throw .ours(code: errno) }
        defer { close(folder) }
        for part in components.dropLast() {
            if mkdirat(folder, part, 0o700) != 0 && errno != EEXIST { throw Self.failure(errno, part) }
            let next = openat(folder, part, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            guard next >= 0 else {
                // ENOTDIR or ELOOP: something other than a folder we made holds the name.
                if errno == ENOTDIR || errno == ELOOP { throw .name(reason: "a file and a folder share the name \(part)") }
                throw Self.failure(errno, part)
            }
            close(folder)
            folder = next
        }
        let fd = openat(folder, last, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw Self.failure(errno, last) }
        return (fd, components.reduce(root) { $0.appendingPathComponent($1) })
    }

    /// A name that stays one level below its folder.
    public static func isPlain(_ part: String) -> Bool {
        !part.isEmpty && part != "." && part != ".." && !part.unicodeScalars.contains("/") && !part.unicodeScalars.contains("\0")
    }

    private static func failure(_ code: Int32, _ part: String) -> Failure {
        if ownCodes.contains(code) { return .ours(code: code) }
        if code == EEXIST { return .name(reason: "\(part) already exists in the working folder") }
        return .name(reason: String(cString: strerror(code)))
    }
}
