import Foundation
import SQLiteAccess
import StoreFormats

/// A file the user asked for (`--out`, a report, a scan listing) that storelens could not write to
/// the end.
///
/// A full, over-quota or failing disk is storelens' own failure, as for its working folder (exit
/// 3): the request was fine and the evidence has nothing to do with it. A path that cannot hold a
/// file at all (no such folder, no permission, a read-only file system) is the request's (exit 2).
/// Either way nothing half-written is left at the path.
public struct OutputFileFailure: Error, Equatable, Sendable, CustomStringConvertible {
    public let path: String
    /// The errno of the failing call (ENOSPC, EDQUOT, EIO, EFBIG, EACCES, …).
    public let code: Int32

    public init(path: String, code: Int32) {
        self.path = path
        self.code = code
    }

    /// The disk failed the write, not the path (exit 3).
    public var isOurs: Bool { code == ENOSPC || code == EDQUOT || code == EIO || code == EFBIG }

    public var description: String {
        let reason = String(cString: strerror(code))
        if isOurs {
            return "\(path) could not be written (\(reason)) and was not left half-written; make room there or give another path, "
                + "and run the command again (this is storelens' own failure, not a finding about the evidence)."
        }
        return "\(path) cannot be written (\(reason)); give a path in a writable folder."
    }

    /// SQLite writing an output file: its full and I/O errors as the errno they stand for, nil for
    /// any other error (a constraint, a bug: not the disk).
    public static func code(of error: SQLiteError) -> Int32? {
        switch error.primaryCode {
        case 13: return ENOSPC  // SQLITE_FULL
        case 10: return EIO     // SQLITE_IOERR
        default: return nil
        }
    }

    /// Writes all of `bytes` to `fd` at its offset, retrying short and interrupted writes; 0 or the errno.
    public static func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Int32 {
        bytes.withUnsafeBytes { raw in
            FileTransfer.all(raw.count) { done, _ in Foundation.write(fd, raw.baseAddress! + done, raw.count - done) }
        }
    }
}

extension OutputFileFailure: DescribedError {
    public var errorClass: ErrorClass { isOurs ? .ours : .input }
}
