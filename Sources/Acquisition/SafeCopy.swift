import Foundation
import StoreFormats

/// Copies one evidence file into the scratch folder without following links and without
/// overwriting anything: the destination is created with O_CREAT|O_EXCL|O_NOFOLLOW, mode 0600.
enum SafeCopy {
    /// Copies `source` to `destination`; with `hashing`, also returns the SHA-256 (hex) of the
    /// bytes copied, so one read of the evidence serves both the hash and the copy.
    @discardableResult
    static func copy(_ source: URL, to destination: URL, hashing: Bool = false) throws -> String? {
        let input = open(source.path, O_RDONLY | O_NOFOLLOW)
        EvidenceReads.pass(source.path)
        guard input >= 0 else {
            let reason = String(cString: strerror(errno))
            if let target = SymbolicLink.target(of: source.path) { throw AcquisitionError.linkInEvidence(path: source.path, target: target) }
            throw AcquisitionError.unreadable(path: source.path, reason: reason)
        }
        defer { close(input) }
        let output = open(destination.path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o600)
        guard output >= 0 else {
            throw WorkingFolderFailure(code: errno, neededBytes: FileWork.size(source))
        }
        defer { close(output) }
        let chunk = 1 << 20
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: chunk, alignment: 64)
        defer { buffer.deallocate() }
        var hasher = hashing ? SHA256() : nil
        let progress = ProgressReporter.current
        let total = progress.isSilent ? nil : Optional(FileWork.size(source))
        var done: Int64 = 0
        while true {
            let n = read(input, buffer, chunk)
            if n == 0 { break }
            guard n > 0 else {
                if errno == EINTR { continue }
                throw AcquisitionError.unreadable(path: source.path, reason: String(cString: strerror(errno)))
            }
            hasher?.update(UnsafeRawBufferPointer(start: buffer, count: n))
            var written = 0
            while written < n {
                let w = write(output, buffer + written, n - written)
                guard w > 0 else {
                    if w < 0 && errno == EINTR { continue }
                    throw WorkingFolderFailure(code: w == 0 ? EIO : errno, neededBytes: FileWork.size(source))
                }
                written += w
            }
            done += Int64(n)
            if hashing { progress.report("hashing \(source.lastPathComponent)", done: done, total: total, unit: .bytes) }
        }
        return hasher.map { hasher in
            var hasher = hasher
            return hasher.finalizeHex()
        }
    }
}

/// Symbolic links: followed only when the user typed one on the command line.
public enum SymbolicLink {
    /// What the link at `path` says, or nil when `path` is not a symbolic link.
    public static func target(of path: String) -> String? {
        var st = stat()
        guard lstat(path, &st) == 0, st.st_mode & S_IFMT == S_IFLNK else { return nil }
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let n = readlink(path, &buffer, buffer.count - 1)
        guard n >= 0 else { return "?" }
        return String(decoding: buffer.prefix(n).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The file a command-line argument names, with every link resolved, or nil when it names
    /// no link. Throws when the link points at nothing.
    public static func resolveArgument(_ path: String) throws -> String? {
        guard let target = target(of: path) else { return nil }
        guard let resolved = realpath(path, nil) else { throw AcquisitionError.brokenLink(path: path, target: target) }
        defer { free(resolved) }
        // A link into a folder named in another encoding: its target reached through an alias.
        guard let readable = RawPath.fromC(resolved) else { throw AcquisitionError.brokenLink(path: path, target: target) }
        return readable
    }
}
