import Acquisition
import Foundation
import OutputFiles
import SQLiteAccess
import StoreFormats

/// The database as it stood after any commit of its WAL: the committed
/// frames laid over the main file, header switched to rollback mode. Built
/// in memory from the evidence; SQLite only ever sees the finished image.
public enum PointInTime {
    /// The image after commit `commit` (1-based; 0 is the main file alone,
    /// nil the last valid commit, as SQLite would show it).
    ///
    /// - Parameter option: how the commit was asked for, for the error message (`--as-of`).
    public static func image(_ evidence: WALEvidence, commit: Int?, option: String = "--as-of") throws(WALForensicsError) -> Data {
        let available = evidence.commitCount
        if let commit, commit < 0 || commit > available {
            throw .commitOutOfRange(path: evidence.displayPath, option: option, requested: commit, available: available)
        }
        do {
            if commit == 0 || available == 0 {
                return try DatabaseImage.make(mainFile: evidence.mainFile)
            }
            return try DatabaseImage.make(mainFile: evidence.mainFile, wal: evidence.wal, walData: evidence.walData,
                                          upToCommit: commit, maxBytes: imageLimit(evidence))
        } catch {
            throw .image(path: evidence.displayPath, error)
        }
    }

    /// A read-only connection to the image after `commit` (see `image`).
    ///
    /// Evidence from a working copy has a folder for images: the image is written there a page at
    /// a time and opened from the file, so a large store's views cost disk in the private working
    /// folder, not memory (an in-memory image is held twice while SQLite takes it over). Each
    /// commit's image is written once per command.
    public static func open(_ evidence: WALEvidence, commit: Int?, option: String = "--as-of") throws(WALForensicsError) -> Connection {
        guard let folder = evidence.imageFolder else {
            let image = try image(evidence, commit: commit, option: option)
            return try open(image: image, name: evidence.displayPath, commit: commit)
        }
        let available = evidence.commitCount
        if let commit, commit < 0 || commit > available {
            throw .commitOutOfRange(path: evidence.displayPath, option: option, requested: commit, available: available)
        }
        if let connection = workingCopyView(evidence, commit: min(commit ?? available, available)) { return connection }
        let path = try imageFile(evidence, commit: commit, folder: folder)
        do {
            let connection = try Connection.open(path: path, mode: .readOnly)
            try connection.makeQueryOnly()
            _ = try connection.scalar("SELECT count(*) FROM sqlite_master")
            return connection
        } catch {
            throw .sqlite(path: evidence.displayPath, error)
        }
    }

    /// The working copy's own view of `commit` when it has one: commit 0 is the copy's main file
    /// opened alone (`openMainFileOnly`), the last commit the copy opened with its WAL, as SQLite
    /// shows it (`open`). Both are the bytes an image would hold (the tests compare them), without
    /// writing one: for a 250 MB store that was 500 MB written per `wal` or `report`. Nil where an
    /// image is needed (any other commit, a WAL SQLite would not read as parsed, a copy whose hot
    /// journal is rolled back) or the view cannot be opened; the image then says why.
    static func workingCopyView(_ evidence: WALEvidence, commit: Int) -> Connection? {
        guard let copy = evidence.workingCopy, !copy.rollsBackJournal, let header = evidence.header,
              evidence.mainFile.count >= header.pageSize else { return nil }
        if commit == 0 {
            // Without usable commits, SQLite's own view of the copy is the main file too, but a
            // WAL it refuses would stop it: the main file alone is asked of the copy in both cases.
            return try? copy.openMainFileOnly()
        }
        guard workingCopyShowing(evidence, commit: commit) != nil else { return nil }
        return try? copy.open()
    }

    /// The working copy when SQLite, opening it with its `-wal` (`WorkingCopy.open`), shows
    /// `commit` (the last one) as its image would (`workingCopyView`'s conditions), else nil.
    static func workingCopyShowing(_ evidence: WALEvidence, commit: Int) -> WorkingCopy? {
        guard commit > 0, let copy = evidence.workingCopy, !copy.rollsBackJournal, let header = evidence.header,
              evidence.mainFile.count >= header.pageSize, commit == evidence.commitCount, let wal = evidence.wal,
              wal.isUsable, wal.headerProblem == nil, wal.pageSize == header.pageSize, copy.sqliteWAL != nil
        else { return nil }
        return copy
    }

    /// The file holding the image after `commit` in `folder`, written on first use (the commit
    /// must be in range).
    static func imageFile(_ evidence: WALEvidence, commit: Int?, folder: URL) throws(WALForensicsError) -> String {
        let available = evidence.commitCount
        let resolved = min(commit ?? available, available)
        let path = folder.appendingPathComponent("commit-\(resolved).sqlite").path
        if !FileManager.default.fileExists(atPath: path) {
            // The store's private folder is made on first use (a store read in place has none yet).
            do {
                _ = try evidence.workingCopy?.privateFolder()
            } catch {
                throw .image(path: evidence.displayPath, .writeFailed(path: folder.path, code: (error as? WorkingFolderFailure)?.code ?? EIO, bytes: 0))
            }
            if mkdir(folder.path, 0o700) != 0 && errno != EEXIST {
                throw .image(path: evidence.displayPath, .writeFailed(path: folder.path, code: errno, bytes: 0))
            }
            do {
                if resolved == 0 {
                    try DatabaseImage.write(toNewFile: path, mainFile: evidence.mainFile, sources: (evidence.files?.main, nil))
                } else {
                    try DatabaseImage.write(toNewFile: path, mainFile: evidence.mainFile, wal: evidence.wal, walData: evidence.walData,
                                            upToCommit: resolved, maxBytes: imageLimit(evidence),
                                            sources: (evidence.files?.main, evidence.files?.wal))
                }
            } catch {
                throw .image(path: evidence.displayPath, error)
            }
        }
        return path
    }

    /// Every page of a real image comes from the main file or a WAL frame, so a commit size
    /// beyond both is damage (or hostile) and must not make storelens allocate or write it.
    static func imageLimit(_ evidence: WALEvidence) -> Int {
        min(DatabaseImage.defaultMaxBytes, evidence.mainFile.count + (evidence.walData?.count ?? 0) + 65536)
    }

    /// Opens a built image read-only and checks that SQLite can read its schema.
    public static func open(image: Data, name: String, commit: Int?) throws(WALForensicsError) -> Connection {
        let label = "in-memory image of \(name)" + (commit.map { " as of commit \($0)" } ?? "")
        do {
            let connection = try Connection.deserialize(image, name: label, readOnly: true)
            try connection.makeQueryOnly()
            _ = try connection.scalar("SELECT count(*) FROM sqlite_master")
            return connection
        } catch {
            throw .sqlite(path: name, error)
        }
    }

    /// Writes `image` to a new file at `url`: created with `O_CREAT|O_EXCL|O_NOFOLLOW`
    /// and mode 0644, so an existing file (or a symbolic link) is never written through.
    public static func write(_ image: Data, to url: URL) throws(WALForensicsError) {
        let path = url.path
        switch writeNewFile(path, image) {
        case 0: return
        case EEXIST: throw .outputExists(path: path)
        case let code: throw .outputFile(OutputFileFailure(path: path, code: code))
        }
    }
}

/// Creates `path` (it must not exist) and writes `bytes` to it; 0 or the errno of the failure.
/// A file left half-written is removed.
private func writeNewFile(_ path: String, _ bytes: Data) -> Int32 {
    let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
    guard fd >= 0 else { return errno }
    var failure: Int32 = 0
    bytes.withUnsafeBytes { (raw: UnsafeRawBufferPointer) in
        guard let base = raw.baseAddress else { return }
        var offset = 0
        while offset < raw.count {
            let written = write(fd, base + offset, raw.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                failure = errno
                return
            }
            offset += written
        }
    }
    if failure == 0, fsync(fd) != 0 { failure = errno }
    close(fd)
    if failure != 0 { unlink(path) }
    return failure
}

extension WorkingCopy {
    /// A read-only connection to this store as it stood after WAL commit
    /// `commit` (0: the main file alone). For `--as-of N` in read commands.
    ///
    /// - Throws: `WALForensicsError` (`commitOutOfRange` names the store and the valid range).
    public func open(asOfCommit commit: Int, displayPath: String? = nil) throws -> Connection {
        let evidence = try WALEvidence(copy: self, displayPath: displayPath)
        return try PointInTime.open(evidence, commit: commit)
    }
}

extension PointInTime {
    /// Removes the image of `commit` written in the evidence's working folder, once no connection
    /// needs it (`wal --diff --each` keeps two states at a time, whatever the number of commits).
    static func discardImage(_ evidence: WALEvidence, commit: Int) {
        guard let folder = evidence.imageFolder else { return }
        unlink(folder.appendingPathComponent("commit-\(min(commit, evidence.commitCount)).sqlite").path)
    }
}
