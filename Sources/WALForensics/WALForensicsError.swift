import Acquisition
import Foundation
import OutputFiles
import SQLiteAccess
import StoreFormats

/// Why a WAL question about a store could not be answered. Each case names
/// the file, and its description is one sentence: what is wrong and what to do.
public enum WALForensicsError: Error, Equatable, Sendable, CustomStringConvertible {
    /// `--as-of`, `--from` or `--to` names a commit the WAL does not have.
    case commitOutOfRange(path: String, option: String, requested: Int, available: Int)
    /// The point-in-time image cannot be built (damaged main file, WAL refused, too large).
    case image(path: String, DatabaseImageError)
    /// The page walk could not start (unreadable main file, mismatched WAL).
    case pages(path: String, PageOwnershipError)
    /// `--out` names a file that already exists; storelens never overwrites.
    case outputExists(path: String)
    /// `--out` could not be written.
    case outputFailed(path: String, reason: String)
    /// `--out` could not be written, with the errno: a full or failing disk is storelens' own
    /// failure (exit 3), a path that cannot hold a file the request's (`OutputFileFailure`).
    case outputFile(OutputFileFailure)
    /// SQLite refused the built image or a query on it.
    case sqlite(path: String, SQLiteError)

    public var description: String {
        switch self {
        case .commitOutOfRange(let path, let option, let requested, let available):
            let range = available == 0 ? "only 0 (the main file alone)" : "0 (the main file alone) to \(available)"
            return "\(path) has \(plural(available, "valid WAL commit")), so \(option) \(requested) is out of range; give \(range)."
        case .image(let path, let error):
            return "\(path): the point-in-time image cannot be built (\(Self.clause(error.description)))."
        case .pages(let path, let error):
            return "\(path): the pages cannot be mapped to tables (\(Self.clause(error.description)))."
        case .outputExists(let path):
            return "\(path) already exists; storelens never overwrites a file, so give --out a new path."
        case .outputFailed(let path, let reason):
            return "\(path) cannot be written (\(reason)); give --out a path in a writable folder."
        case .outputFile(let failure):
            return failure.description
        case .sqlite(let path, let error):
            return "\(path): SQLite cannot read the point-in-time image (\(error.message)); the store or its -wal is damaged."
        }
    }

    /// Whether this is the input's fault (exit 2) rather than storelens' (exit 3).
    public var isInputError: Bool {
        switch self {
        case .sqlite(_, let error): return error.isCorrupt || error.isNotADatabase || error.isUnsupportedFileFormat
        case .outputFile(let failure): return !failure.isOurs
        default: return true
        }
    }

    /// A sentence turned into a clause: no trailing full stop.
    static func clause(_ sentence: String) -> String {
        sentence.hasSuffix(".") ? String(sentence.dropLast()) : sentence
    }
}

extension WALForensicsError: CarriesWorkingFolderFailure {
    /// An image that could not be written, or SQLite failing on our copy, is our own failure.
    public var workingFolderFailure: WorkingFolderFailure? {
        switch self {
        case .image(_, let error): return WorkingFolderFailure.from(error)
        case .sqlite(_, let error): return WorkingFolderFailure.from(error)
        default: return nil
        }
    }
}

extension WALForensicsError {
    /// Any error met while reading a store's states, as this type: its own kept, SQLite's named
    /// by the store, anything else as SQLite's generic error on the store.
    static func reading(_ error: Error, path: String) -> WALForensicsError {
        if let own = error as? WALForensicsError { return own }
        if let sqlite = error as? SQLiteError { return .sqlite(path: path, sqlite) }
        return .sqlite(path: path, SQLiteError(extendedCode: 1, message: "\(error)"))
    }
}

extension WALForensicsError: DescribedError {
    public var errorClass: ErrorClass { isInputError ? .input : .ours }
}
