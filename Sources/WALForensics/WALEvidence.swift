import Acquisition
import Foundation
import StoreFormats

/// Everything the WAL forensics read about one store: the main file's
/// bytes, the `-wal` and the `-shm`, as they came with the store.
///
/// Build it from a working copy (the normal way: the bytes SQLite reads, the originals read in
/// place or their scratch copies), or directly from bytes in tests.
public struct WALEvidence: @unchecked Sendable {
    /// How to name the store to the user.
    public let displayPath: String
    /// The main database file's bytes (possibly memory-mapped).
    public let mainFile: Data
    /// The main file's header, or nil when the main file is empty.
    public let header: DatabaseHeader?
    /// The parsed `-wal`, or nil when no `-wal` came with the store.
    public let wal: WAL?
    /// The bytes `wal` was parsed from.
    public let walData: Data?
    /// The `-journal` that came with the store, for carving; nil without one.
    public var journalData: Data?
    /// Whether a `-shm` came with the store.
    public let sharedMemoryPresent: Bool
    /// The `-shm` wal-index header, when one came with the store and is long enough.
    public let sharedMemory: SharedMemoryIndex?
    /// Where point-in-time images are written (inside a working copy's private folder); nil keeps
    /// them in memory (evidence built from bytes).
    public var imageFolder: URL?
    /// The working copy the evidence was read from: its own two views (the WAL applied, and the
    /// main file alone) serve the last commit and commit 0 without writing an image.
    public var workingCopy: WorkingCopy?
    /// The files `mainFile` and `walData` were mapped from, for readers that read page by page
    /// (`PageOwnershipTracker`); nil for evidence held in memory.
    public var files: (main: String, wal: String?)?

    public init(displayPath: String, mainFile: Data, wal: WAL?, walData: Data?,
                sharedMemoryPresent: Bool = false, sharedMemory: SharedMemoryIndex? = nil) {
        self.displayPath = displayPath
        self.mainFile = mainFile
        self.header = try? DatabaseHeader(data: mainFile)
        self.wal = wal
        self.walData = walData
        self.sharedMemoryPresent = sharedMemoryPresent || sharedMemory != nil
        self.sharedMemory = sharedMemory
    }

    /// Parses raw bytes: the convenience used by tests and benchmarks.
    public init(displayPath: String, mainFile: Data, walData: Data?, sharedMemoryData: Data? = nil) {
        self.init(displayPath: displayPath, mainFile: mainFile, wal: walData.map(WAL.init(data:)), walData: walData,
                  sharedMemoryPresent: sharedMemoryData != nil,
                  sharedMemory: sharedMemoryData.flatMap { try? SharedMemoryIndex(data: $0) })
    }

    /// The evidence of a working copy. The main file is read where SQLite reads it (the original
    /// read in place, or the scratch copy), mapped (`MappedFile`, so its pages are read on demand
    /// and given back): when a hot journal is to be rolled back in the copy (SQLite then rewrites
    /// it), from a copy of the copy as it is now (`stableMainFile`), never read whole into memory.
    public init(copy: WorkingCopy, displayPath: String? = nil) throws {
        // The frames of a -wal that cannot belong are not this store's history (refused, unless
        // the options read it anyway: the `wal` report, which says what they hold).
        try copy.checkWALBelongs()
        let data: Data
        let main = try copy.stableMainFile()
        do {
            data = try MappedFile.map(path: main.path)
        } catch {
            throw WorkingFolderFailure(code: error.code, whileReading: true)
        }
        self.init(displayPath: displayPath ?? copy.family.main.path, mainFile: data, wal: copy.wal, walData: copy.walData,
                  sharedMemoryPresent: copy.family.shm != nil, sharedMemory: copy.sharedMemory)
        imageFolder = copy.folder.appendingPathComponent("point-in-time", isDirectory: true)
        workingCopy = copy
        if !copy.rollsBackJournal {
            files = (copy.databaseFile.path, copy.sqliteWAL?.path)
        }
        journalData = copy.journalData
    }

    /// Number of committed transactions SQLite would apply (0 without a usable WAL).
    public var commitCount: Int {
        guard let wal, wal.isUsable else { return 0 }
        return wal.transactions.count
    }

    /// The name of the `-wal` for messages.
    var walName: String { displayPath + "-wal" }
}
