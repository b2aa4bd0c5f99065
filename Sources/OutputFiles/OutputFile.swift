import Acquisition
import Foundation
import StoreFormats

/// Writes a file the user named (a report, an export, a point-in-time image, an evidence list):
/// never over an existing file unless forced, never over an input, and never half-written (a
/// temporary file beside the target, then a link or rename).
public enum OutputFile {
    public static func checkWritable(_ path: String, force: Bool) throws {
        var st = stat()
        if lstat(path, &st) == 0 {
            if (st.st_mode & S_IFMT) == S_IFDIR {
                throw OutputFileRefusal(message: "\(path) is a folder; give --out the name of the HTML file to write.")
            }
            if !force {
                throw OutputFileRefusal(message: "\(path) already exists; give a new file name, or add --force to replace it.")
            }
        }
    }

    public static func write(_ text: String, to path: String, force: Bool, originals: [String]) throws {
        try write(Data(text.utf8), to: path, force: force, originals: originals)
    }

    public static func write(_ data: Data, to path: String, force: Bool, originals: [String]) throws {
        try place(at: path, force: force, originals: originals) { fd, _ in
            let code = OutputFileFailure.writeAll(fd, [UInt8](data))
            if code != 0 { throw OutputFileFailure(path: path, code: code) }
        }
    }

    /// Creates a temporary file beside `path`, lets `fill` write it (through the descriptor, or by
    /// opening the temporary path itself, e.g. with SQLite), then links it into place — or, when
    /// forced, renames it over an existing file. The target is never half-written.
    public static func place(at path: String, force: Bool, originals: [String], fill: (Int32, String) throws -> Void) throws {
        try checkWritable(path, force: force)
        let url = URL(fileURLWithPath: path)
        let resolvedTarget = url.resolvingSymlinksInPath().path
        if originals.contains(where: { URL(fileURLWithPath: $0).resolvingSymlinksInPath().path == resolvedTarget }) {
            throw OutputFileRefusal(message: "\(path) is one of the inputs; give --out another file, the evidence is never overwritten.")
        }
        let folder = url.deletingLastPathComponent().path
        var template = Array((folder + "/." + url.lastPathComponent + ".storelens-XXXXXX").utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard fd >= 0 else {
            throw OutputFileRefusal(message: "cannot write in \(folder) (\(String(cString: strerror(errno)))); give --out a path in a writable folder.")
        }
        let temp = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        var linked = false
        defer { if !linked { unlink(temp) } }
        let mask = umask(0)
        umask(mask)
        fchmod(fd, 0o666 & ~mask)
        do {
            try fill(fd, temp)
        } catch {
            close(fd)
            throw error
        }
        let synced = fsync(fd) == 0
        close(fd)
        guard synced else { throw OutputFileFailure(path: path, code: errno) }
        if force {
            guard rename(temp, path) == 0 else {
                throw OutputFileRefusal(message: "cannot write \(path) (\(String(cString: strerror(errno)))).")
            }
            linked = true
            return
        }
        // link() never replaces: if someone created the file meanwhile, this fails with EEXIST.
        if link(temp, path) == 0 {
            unlink(temp)
            linked = true
            return
        }
        let linkError = errno
        if linkError == EEXIST {
            throw OutputFileRefusal(message: "\(path) already exists; give a new file name, or add --force to replace it.")
        }
        // File systems without hard links: create the target exclusively, then rename over it.
        let placeholder = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o644)
        guard placeholder >= 0 else {
            throw OutputFileRefusal(message: errno == EEXIST ? "\(path) already exists; give a new file name, or add --force to replace it."
                                                       : "cannot create \(path) (\(String(cString: strerror(errno)))).")
        }
        close(placeholder)
        guard rename(temp, path) == 0 else {
            unlink(path)
            throw OutputFileRefusal(message: "cannot write \(path) (\(String(cString: strerror(errno)))).")
        }
        linked = true
    }

    /// Creates `path` with `text`, never replacing an existing file (`O_EXCL|O_NOFOLLOW`).
    public static func create(_ text: String, at path: String) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o644)
        guard fd >= 0 else {
            throw OutputFileRefusal(message: "cannot create \(path) (\(String(cString: strerror(errno)))); give a path that does not exist yet.")
        }
        let code = OutputFileFailure.writeAll(fd, Array(text.utf8))
        close(fd)
        // Nothing half-written is left under the name the user gave.
        if code != 0 {
            unlink(path)
            throw OutputFileFailure(path: path, code: code)
        }
    }
}

/// An output file that cannot be written as asked (it exists, it is a folder or an input, its
/// folder is not writable): the user's to change, said in one sentence.
public struct OutputFileRefusal: Error, CustomStringConvertible, Sendable {
    public let message: String

    public init(message: String) {
        self.message = message
    }

    public var description: String { RawPath.shownInText(message) }
}

extension OutputFileRefusal: DescribedError {
    public var errorClass: ErrorClass { .input }
}
