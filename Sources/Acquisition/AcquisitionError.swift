import Foundation
import SQLiteAccess
import StoreFormats

/// Why a store could not be read. Each case carries the file it is about, and its description
/// is one sentence saying what is wrong, where, and what to do.
public enum AcquisitionError: Error, Equatable, CustomStringConvertible, Sendable {
    case notFound(path: String)
    case isDirectory(path: String)
    case unreadable(path: String, reason: String)
    case notSQLite(path: String)
    /// A Core Data XML or binary store given to a command that needs SQLite.
    case atomicStore(path: String, format: StoreFileFormat)
    case truncated(path: String, size: Int, expected: Int)
    /// No valid in-header page count, and the file ends part-way through a page.
    case partialPage(path: String, size: Int, pageSize: Int)
    case walPageSizeMismatch(wal: String, walPageSize: Int, databasePageSize: Int)
    /// A file named like an archive (`.zip`, `.tar`, `.tar.gz`) whose bytes are neither an archive's nor a store's.
    case notAnArchive(path: String, kind: String)
    /// A Core Data XML or binary store larger than storelens reads (`StoreFileFormat.atomicStoreByteLimit`).
    case atomicStoreTooLarge(path: String, size: Int64, limit: Int)
    /// The `-wal` cannot belong to the main file (`WALBelonging`): another database's, or the
    /// store's from another moment.
    case walDoesNotBelong(wal: String, store: String, reason: String)
    case hotJournal(path: String, journal: String)
    /// The hot journal's header says the database had more pages than the store and its journal hold.
    case journalSizeImpossible(journal: String, pages: Int64, pageSize: Int, availableBytes: Int64)
    case corrupt(path: String, detail: String)
    /// An archive damaged part-way (cut, failing CRC or length, bytes after its end): refused
    /// whole unless `ArchiveLimits.readDamaged`.
    case archiveDamaged(path: String, detail: String)
    case evidenceChanged(path: String, before: String, after: String)
    case sqlite(SQLiteError)
    /// `--store` matched no store, or more than one.
    case storeSelection(select: String, candidates: [String], matched: Int)
    /// The inputs hold no SQLite store at all.
    case noStores(inputs: [String])
    /// A backup folder whose Manifest.db lists files, none of which came with it (Manifest.db
    /// copied alone, say): no store can be read, and the cure is the whole folder.
    case backupFilesMissing(backup: String, listed: Int)
    /// A link given on the command line points at nothing.
    case brokenLink(path: String, target: String)
    /// A file of the evidence (a store's -wal, say) is a symbolic link: never followed.
    case linkInEvidence(path: String, target: String)

    public var description: String {
        switch self {
        case .notFound(let path):
            return "\(path): no such file or folder; check the path."
        case .isDirectory(let path):
            return "\(path) is a folder, but a store file was expected; give the path of the store file itself (for example …/default.store)."
        case .unreadable(let path, let reason):
            return "\(path) cannot be read (\(reason)); check its permissions."
        case .notSQLite(let path):
            return "\(path) is not a SQLite database (it does not start with \"SQLite format 3\"); give the path of a Core Data or SwiftData store."
        case .atomicStore(let path, let format):
            return "\(path) is a \(format.title), not a SQLite database, so this command cannot read it; `storelens inspect`, `rows` and `export` read it (`scan` lists it)."
        case .truncated(let path, let size, let expected):
            return "\(path) is truncated: it has \(size) bytes but its header describes \(expected); copy the store off the device again, with its -wal and -shm."
        case .partialPage(let path, let size, let pageSize):
            return "\(path) is truncated: it has \(size) bytes, which ends \(size % max(pageSize, 1)) bytes into a \(pageSize)-byte page, and its header keeps no valid page count; copy the store off the device again, with its -wal and -shm."
        case .notAnArchive(let path, let kind):
            return "\(path) is named like a \(kind) archive but is not one, nor a SQLite store (its first bytes are neither); copy the archive off the device again, or give the container folder or the store itself."
        case .atomicStoreTooLarge(let path, let size, let limit):
            return "\(path) holds \(size) bytes, more than the \(limit) storelens reads; it is refused rather than risk the machine's memory (set STORELENS_MAX_ATOMIC_STORE_BYTES to raise the limit)."
        case .walDoesNotBelong(let wal, let store, let reason):
            return "\(wal) does not belong to \(store) (\(reason)): SQLite would apply it without an error and show another database's pages. Copy the main file, -wal and -shm again at one moment (quit the app first); `storelens check` checks the main file alone and `storelens wal` shows what the -wal holds."
        case .walPageSizeMismatch(let wal, let walPageSize, let databasePageSize):
            return "\(wal) has \(walPageSize)-byte pages but its database has \(databasePageSize)-byte pages, so it cannot belong to this store; check that the -wal was copied together with its own database."
        case .hotJournal(let path, let journal):
            return "\(path) has a hot rollback journal (\(journal)): a transaction was interrupted; rerun with --roll-back-journal to read the store as SQLite would after rolling it back (on a copy)."
        case .archiveDamaged(let path, let detail):
            return "\(path): \(detail); storelens stopped rather than show what may be an older or partial state. Copy the archive again, or add --read-damaged to read what it still holds."
        case .journalSizeImpossible(let journal, let pages, let pageSize, let available):
            return "\(journal) says the database had \(pages) pages of \(pageSize) bytes before the interrupted transaction, more than the store and its journal hold together (\(available) bytes): the journal is damaged or belongs to another store; copy the store without its -journal to read the main file alone."
        case .corrupt(let path, let detail):
            return "\(path) is damaged (\(detail)); run `storelens check` on it, or copy it off the device again."
        case .evidenceChanged(let path, let before, let after):
            // Most often another process wrote to it; storelens itself writing is the other cause.
            let what = ["(identity)", "(size, times or inode changed)"].contains(after) ? "its size, times or inode changed"
                : after.hasPrefix("(") ? String(after.dropFirst().dropLast()) : Self.hashChange(before, after)
            return "\(path) changed while storelens read it (\(what)), so this run's answers are withdrawn: make sure nothing writes to the evidence (the app, a sync tool, another copy in progress) and run again; if nothing does, please report it as a storelens bug."
        case .sqlite(let error):
            return error.description
        case .noStores(let inputs):
            return "no SQLite store was found in \(inputs.joined(separator: ", ")); check that the container or archive holds the app's Library folder (run `storelens scan` to see what it holds)."
        case .backupFilesMissing(let backup, let listed):
            return "\(backup) is an iOS backup whose Manifest.db lists \(listed) files, but none of them is in the folder; copy the whole backup folder (Manifest.db with its two-hex-digit subfolders), or give \(backup)/Manifest.db itself to read the manifest as a plain SQLite database."
        case .brokenLink(let path, let target):
            return "\(path) is a symbolic link to \(target), which does not exist; give the path of the store, folder or archive itself."
        case .linkInEvidence(let path, let target):
            return "\(path) is a symbolic link (to \(target)), and storelens does not follow links inside the evidence (a link can point anywhere, and is not what came off the device); replace it with the file itself (for example with cp -L), or give the file it points to on the command line."
        case .storeSelection(let select, let candidates, let matched):
            let list = candidates.prefix(10).joined(separator: ", ")
            return matched == 0
                ? "--store \(select) matches none of the stores found (\(list)); give a path that ends one of them."
                : "--store \(select) matches \(matched) stores (\(list)); give a longer path."
        }
    }

    /// Whether this is the tool's fault (exit 3) rather than the input's (exit 2).
    public var isInternal: Bool {
        switch self {
        case .evidenceChanged: return true
        case .sqlite(let e): return !(e.isCorrupt || e.isNotADatabase)
        default: return false
        }
    }
}

extension AcquisitionError {
    /// "SHA-256 x… became y…", each shown far enough to see where they differ (at least 12 digits).
    static func hashChange(_ before: String, _ after: String) -> String {
        let same = zip(before, after).prefix { $0 == $1 }.count
        let shown = max(12, same + 4)
        return "SHA-256 \(before.prefix(shown))… became \(after.prefix(shown))…"
    }
}

extension AcquisitionError: DescribedError {
    public var errorClass: ErrorClass { isInternal ? .ours : .input }
}
