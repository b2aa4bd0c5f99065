import Foundation

/// Copies one evidence file into the scratch folder without following links and without
/// overwriting anything: the destination is created with O_CREAT|O_EXCL|O_NOFOLLOW, mode 0600.
enum SafeCopy {
    static func copy(_ source: URL, to destination: URL) throws {
        let input = open(source.path, O_RDONLY | O_NOFOLLOW)
        guard input >= 0 else {
            throw AcquisitionError.unreadable(path: source.path, reason: String(cString: strerror(errno)))
        }
        defer { close(input) }
        let output = open(destination.path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o600)
        guard output >= 0 else {
            throw WorkingFolderFailure(code: errno, neededBytes: FileWork.size(source))
        }
        defer { close(output) }
        let chunk = 1 << 20
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: chunk, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            let n = read(input, buffer, chunk)
            if n == 0 { break }
            guard n > 0 else {
                if errno == EINTR { continue }
                throw AcquisitionError.unreadable(path: source.path, reason: String(cString: strerror(errno)))
            }
            var written = 0
            while written < n {
                let w = write(output, buffer + written, n - written)
                guard w > 0 else {
                    if w < 0 && errno == EINTR { continue }
                    throw WorkingFolderFailure(code: w == 0 ? EIO : errno, neededBytes: FileWork.size(source))
                }
                written += w
            }
        }
    }
}
