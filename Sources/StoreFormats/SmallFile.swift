import Foundation

/// Reads a file from the evidence that is small by nature (a backup's Manifest.plist, a container's
/// identity plist) without trusting it to be: no link is followed, nothing but a regular file is
/// opened (a FIFO would block, a device never end), and its size is checked against `limit`
/// before a byte is read, so a sparse 2 GiB plist costs nothing.
public enum SmallFile {
    public enum Refusal: Error, Equatable, Sendable, CustomStringConvertible {
        case unreadable(reason: String)
        case notRegular
        case tooLarge(size: Int64, limit: Int)

        public var description: String {
            switch self {
            case .unreadable(let reason): return reason
            case .notRegular: return "it is not a regular file"
            case .tooLarge(let size, let limit): return "it is \(size) bytes, more than the \(limit) such a file can plausibly hold"
            }
        }
    }

    /// Opens `url` for reading if it is a regular file (no link followed, no FIFO waited for):
    /// the descriptor, which the caller closes, and the file's size.
    public static func openRegular(_ url: URL) throws(Refusal) -> (fd: Int32, size: Int64) {
        // O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused just below.
        let fd = open(url.path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { throw .unreadable(reason: String(cString: strerror(errno))) }
        var st = stat()
        guard fstat(fd, &st) == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw .unreadable(reason: reason)
        }
        guard (st.st_mode & S_IFMT) == S_IFREG else {
            close(fd)
            throw .notRegular
        }
        return (fd, Int64(st.st_size))
    }

    public static func contents(of url: URL, limit: Int) throws(Refusal) -> Data {
        let (fd, size) = try openRegular(url)
        defer { close(fd) }
        guard size <= Int64(limit) else { throw .tooLarge(size: size, limit: limit) }
        var data = Data(count: Int(size))
        var done = 0
        while done < Int(size) {
            let n = data.withUnsafeMutableBytes { read(fd, $0.baseAddress! + done, Int(size) - done) }
            if n < 0 && errno == EINTR { continue }
            guard n >= 0 else { throw .unreadable(reason: String(cString: strerror(errno))) }
            if n == 0 { break }
            done += n
        }
        // A file that shrank while read is what it now holds; one that grew is read to its stated size.
        return data.prefix(done)
    }
}
