import Foundation
import SQLiteAccess
import StoreFormats

/// Storelens' own I/O failure in its private working folder (the full, unwritable or failing
/// disk under TMPDIR), as opposed to anything about the evidence.
///
/// Such a failure must never turn into a finding: an image of the WAL that cannot be written
/// is not a WAL that "does not belong", a copy SQLite cannot grow is not a plain SQLite file.
/// Every place that catches an error to decide a verdict asks `from(_:)` first and rethrows
/// what it recognises; the command then exits 3 with this sentence.
public struct WorkingFolderFailure: Error, Equatable, CustomStringConvertible, Sendable {
    /// The working folder's parent (TMPDIR), which the user can change.
    public let folder: String
    /// The errno of the failure (ENOSPC, EDQUOT, EACCES, EROFS, EIO, …).
    public let code: Int32
    /// How much the failed write needed, when known.
    public let neededBytes: Int64?
    /// Free space in the folder when the failure was seen, when it can be measured.
    public let freeBytes: Int64?
    /// Reading back one of storelens' own files failed, not writing one.
    public let whileReading: Bool

    public init(folder: String = ScratchFolder.defaultParent, code: Int32, neededBytes: Int64? = nil, whileReading: Bool = false) {
        self.folder = folder
        self.code = code
        self.neededBytes = neededBytes
        self.whileReading = whileReading
        var info = statvfs()
        self.freeBytes = statvfs(folder, &info) == 0 ? Int64(info.f_bavail) * Int64(info.f_frsize) : nil
    }

    public var isFull: Bool { code == ENOSPC || code == EDQUOT }

    public var description: String {
        let notEvidence = "this is storelens' own failure, not a finding about the evidence"
        if isFull {
            var sizes: [String] = []
            if let neededBytes, neededBytes > 0 { sizes.append("\(Self.megabytes(neededBytes)) needed") }
            if let freeBytes { sizes.append("\(Self.megabytes(freeBytes)) free") }
            let detail = sizes.isEmpty ? "" : ": " + sizes.joined(separator: ", ")
            return "the working folder \(folder) is full\(detail); set TMPDIR to a folder with more free space (\(notEvidence))."
        }
        let reason = String(cString: strerror(code))
        if code == ENAMETOOLONG {
            return "the working folder \(folder) is too deep for SQLite, which opens no path of \(WorkingCopy.sqlitePathLimit) bytes or more; set TMPDIR to a shorter folder (\(notEvidence))."
        }
        if code == EACCES || code == EPERM || code == EROFS {
            return "the working folder \(folder) cannot be written (\(reason)); set TMPDIR to a writable local folder (\(notEvidence))."
        }
        let free = freeBytes.map { "; \(Self.megabytes($0)) free" } ?? ""
        return "\(whileReading ? "reading" : "writing") in the working folder \(folder) failed (\(reason)\(free)); set TMPDIR to a healthy local folder and try again (\(notEvidence))."
    }

    /// Megabytes, or kilobytes under 10 MB (so that a small shortfall still shows).
    static func megabytes(_ bytes: Int64) -> String {
        if bytes < 10 << 20 { return "\((bytes + 1023) >> 10) KB" }
        return "\((bytes + (1 << 20) - 1) >> 20) MB"
    }

    /// The working-folder failure `error` is, or carries, or nil when it is about something
    /// else (the evidence, the user's request).
    ///
    /// SQLite only ever opens storelens' own copies, so its I/O, full-disk and cannot-open
    /// errors are about the working folder too.
    public static func from(_ error: Error) -> WorkingFolderFailure? {
        switch error {
        case let failure as WorkingFolderFailure:
            return failure
        case let carrier as CarriesWorkingFolderFailure:
            return carrier.workingFolderFailure
        case let error as AcquisitionError:
            if case .sqlite(let e) = error { return from(e) }
            return nil
        case let error as SQLiteError:
            switch error.primaryCode {
            case 13: return WorkingFolderFailure(code: ENOSPC)                // SQLITE_FULL
            case 10: return WorkingFolderFailure(code: Self.ioCode())        // SQLITE_IOERR
            case 14: return WorkingFolderFailure(code: Self.ioCode(EACCES))  // SQLITE_CANTOPEN
            default: return nil
            }
        case let error as DatabaseImageError:
            switch error {
            case .writeFailed(_, let code, let bytes): return WorkingFolderFailure(code: code, neededBytes: bytes > 0 ? Int64(bytes) : nil)
            case .sourceReadFailed(_, let code): return WorkingFolderFailure(code: code, whileReading: true)
            default: return nil
            }
        default:
            return nil
        }
    }

    /// SQLite's I/O errors do not carry the errno; a folder with (almost) no space left (under
    /// 1 MB or 1% free) says it was a full disk: SQLite grows the copy's -shm and journal a
    /// page at a time and fails on the first that does not fit.
    static func ioCode(_ otherwise: Int32 = EIO) -> Int32 {
        var info = statvfs()
        guard statvfs(ScratchFolder.defaultParent, &info) == 0 else { return otherwise }
        let free = Int64(info.f_bavail) * Int64(info.f_frsize)
        if free < 1 << 20 || info.f_bavail < info.f_blocks / 100 { return ENOSPC }
        if access(ScratchFolder.defaultParent, W_OK) != 0 { return EACCES }
        return otherwise
    }

    /// Runs `body`; a working-folder failure is rethrown, any other error gives nil. For the
    /// places where an error means "the evidence is not like that" (a view SQLite cannot open
    /// is a finding) and so must not be confused with our own.
    public static func unlessOurs<T>(_ body: () throws -> T) throws -> T? {
        do {
            return try body()
        } catch {
            if let ours = from(error) { throw ours }
            return nil
        }
    }
}

/// An error of a higher layer that may wrap a working-folder failure.
public protocol CarriesWorkingFolderFailure: Error {
    var workingFolderFailure: WorkingFolderFailure? { get }
}

extension WorkingFolderFailure: DescribedError {
    public var errorClass: ErrorClass { .ours }
}
