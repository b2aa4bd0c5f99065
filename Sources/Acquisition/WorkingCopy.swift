import Foundation
import SQLiteAccess
import StoreFormats

/// Something about a store's files worth telling the user, though not an error.
public enum StoreNote: Equatable, Sendable, CustomStringConvertible {
    /// Header bytes 18/19 say WAL mode but no `-wal` came with the store: recent
    /// transactions may be missing, and SQLite would not say so. SQLite deletes both `-wal` and
    /// `-shm` when a store is closed cleanly, so a `-shm` without its `-wal` is the clear sign.
    case walModeWithoutWAL(shmPresent: Bool)
    /// A `-wal` is present while the header says rollback mode; SQLite still applies it.
    case walWithRollbackHeader
    /// The WAL header is unusable, so SQLite ignores the whole WAL.
    case walIgnored(reason: String)
    /// A hot journal was rolled back in the working copy, as asked.
    case journalRolledBack
    /// The `-wal`'s page size differs from the database's; it was left out (as asked).
    case walPageSizeMismatch(walPageSize: Int, databasePageSize: Int)
    /// The `-wal` cannot belong to the main file (`WALBelonging`); it was left out (as asked).
    case walDoesNotBelong(reason: String)

    public var description: String {
        switch self {
        case .walModeWithoutWAL(let shmPresent):
            return shmPresent
                ? "the header says WAL mode and a -shm came with the store, but no -wal file: transactions not yet checkpointed are missing; copy the -wal from the device too"
                : "the header says WAL mode but no -wal file came with the store: if the app was running when it was copied, transactions not yet checkpointed are missing (a cleanly closed store has none); copy the -wal from the device too"
        case .walWithRollbackHeader:
            return "a -wal is present although the header says rollback-journal mode; SQLite applies it anyway"
        case .walIgnored(let reason):
            return "SQLite ignores the -wal (\(reason)); only the main file's contents are visible"
        case .journalRolledBack:
            return "the hot -journal was rolled back in the working copy (the originals are unchanged)"
        case .walPageSizeMismatch(let wal, let db):
            return "the -wal has \(wal)-byte pages but the database has \(db)-byte pages, so it cannot belong to it; it was left out"
        case .walDoesNotBelong(let reason):
            return "the -wal does not belong to this main file (\(reason)); it was left out, and what follows is the main file alone"
        }
    }
}

/// Options for opening evidence.
public struct OpenOptions: Sendable {
    /// Roll back a hot `-journal` in the working copy instead of refusing the store.
    public var rollBackJournal = false
    /// Leave out a `-wal` whose page size differs from the database's instead of refusing the
    /// store (`check` reports it as a finding and checks the main file).
    public var ignoreMismatchedWAL = false
    /// Copy the store family into the working folder and read the copy (`--copy`), instead of
    /// reading the originals where they lie through the read-only evidence VFS. Stores that
    /// cannot be read in place are copied whatever this says (`WorkingCopy.readsInPlace`).
    /// Defaults to the `STORELENS_COPY` variable (`1`: copy).
    public var copyEvidence = OpenOptions.copyByDefault
    /// What to do with a `-wal` that cannot belong to the main file (`WALBelonging`): refuse the
    /// store naming the `-wal` (the default), read the main file alone with a note (`inspect`,
    /// `check`), or read it all the same (`wal`, whose own analysis says what the frames hold).
    public var foreignWAL = ForeignWAL.refuse

    public enum ForeignWAL: Sendable { case refuse, leaveOut, read }

    public init(rollBackJournal: Bool = false, ignoreMismatchedWAL: Bool = false, copyEvidence: Bool = OpenOptions.copyByDefault) {
        self.rollBackJournal = rollBackJournal
        self.ignoreMismatchedWAL = ignoreMismatchedWAL
        self.copyEvidence = copyEvidence
    }

    /// `STORELENS_COPY=1`: every command copies its stores, as `--copy` asks.
    public static var copyByDefault: Bool { ProcessInfo.processInfo.environment["STORELENS_COPY"] == "1" }
}

/// A store ready to be opened two ways: with the WAL applied (what the app would see) and main
/// file only (what is already checkpointed).
///
/// SQLite's own file handling never touches the originals: a read-write open checkpoints and
/// deletes a `-wal`, `mode=ro` rewrites `-shm`, and `immutable=1` hides the WAL. So a store is
/// either read where it lies through storelens's read-only VFS (`Connection.openEvidence`: every
/// file opened `O_RDONLY`, the wal-index in memory, every write refused), or, where SQLite must
/// write or cannot find the files by their names (a hot journal to roll back, sidecars not named
/// after the main file, a path too long, `--copy`), copied into the private scratch folder first.
public final class WorkingCopy {
    /// The originals.
    public let family: StoreFamily
    /// The store's own folder in the scratch folder, holding its copies (a store read in place
    /// has none until something must be written: `privateFolder()`).
    public let folder: URL
    private let prepareFolder: () throws -> Void

    /// `folder`, made if it is not there yet (a store read in place writes point-in-time images
    /// and spools there): `WorkingFolderFailure` when it cannot be.
    public func privateFolder() throws -> URL {
        try prepareFolder()
        return folder
    }
    /// The main file SQLite reads: the original itself when the store is read in place
    /// (`readsInPlace`), else its copy in `folder` (with the copied `-wal` beside it).
    public let databaseFile: URL
    /// Whether SQLite reads the originals where they lie, through the read-only evidence VFS.
    public let readsInPlace: Bool
    /// The view `open()` shows: the WAL applied, unless a `-wal` that cannot belong to the
    /// database (its page size differs) is left out.
    private var walView: Connection.EvidenceView
    /// The `-wal` SQLite reads with the WAL applied (`open()`), nil when it reads none.
    public var sqliteWAL: URL? {
        guard family.wal != nil, walView == .walApplied else { return nil }
        let beside = URL(fileURLWithPath: databaseFile.path + "-wal")
        return FileManager.default.fileExists(atPath: beside.path) ? beside : nil
    }
    /// The file `walData` is read from (the copy's `-wal`, the original read in place, or a
    /// `-wal` kept aside), nil without a `-wal`.
    public var walFile: URL? { loadedWAL() != nil ? walSource : nil }
    private var walSource: URL?
    public let header: DatabaseHeader
    /// The `-wal` as read from the original, parsed; nil when there is none. Read on first use:
    /// opening a store only needs its 32-byte header, and a scan of many stores should not hold
    /// every WAL in memory.
    public var wal: WAL? { loadedWAL()?.wal }
    public var walData: Data? { loadedWAL()?.data }
    private var walCache: (wal: WAL, data: Data)?
    private var walLoaded = false

    private func loadedWAL() -> (wal: WAL, data: Data)? {
        if !walLoaded {
            walLoaded = true
            // The copy's -wal, mapped: the bytes that were hashed as they were copied, read once
            // more here (the original is read only by the copy and the after-hash). A -wal left
            // out of the copy (its page size is wrong) is read from where it was kept instead.
            // Read in place, the original -wal is mapped where it lies (`MappedFile` guards a
            // mapping of a file another process cuts short while it is read).
            let copied = databaseFile.path + "-wal"
            if family.wal != nil, walKeptAside == nil, FileManager.default.fileExists(atPath: copied), let data = try? MappedFile.map(path: copied) {
                walCache = (WAL(data: data), data)
                walSource = URL(fileURLWithPath: copied)
            } else if let url = walKeptAside ?? (family.wal != nil ? URL(fileURLWithPath: copied) : nil), let data = try? Self.read(url) {
                walCache = (WAL(data: data), data)
                walSource = url
            }
        }
        return walCache
    }
    /// The `-journal` that came with the store, as read from the original (never opened by SQLite),
    /// for carving its page images; nil when there is none, it is empty, or it is larger than
    /// `maxWALBytes`. Mapped on first use (`MappedFile`): a journal of any size costs the pages
    /// its reader has touched since the last release, not its size in memory.
    public var journalData: Data? {
        if !journalLoaded {
            journalLoaded = true
            // The copy kept as it came (`journalAsCopied`): SQLite rolls a hot journal back and
            // removes it from beside the copy, and the original is read only by the copy and the
            // after-hash (each evidence byte at most twice). Nothing writes that copy.
            if let url = journalAsCopied, FileWork.size(url) > 0, FileWork.size(url) <= Int64(Self.maxWALBytes) {
                journalCache = try? MappedFile.map(path: url.path)
            }
        }
        return journalCache
    }
    private var journalCache: Data?
    private var journalLoaded = false
    /// The store's `_EXTERNAL_DATA` as it came, each regular file copied into the working folder
    /// and hashed as it was read.
    public let externalData: ExternalDataFolder
    /// The `-shm` header, when a readable one came with the store (a hint only).
    public let sharedMemory: SharedMemoryIndex?
    public private(set) var notes: [StoreNote]
    /// How errors and reports name this store.
    public let displayPath: String
    private let hasJournal: Bool
    /// What `open()` does with a `-wal` that cannot belong (`OpenOptions.foreignWAL`), and
    /// whether it has looked yet (once, on the first open of the WAL view).
    private let foreignWAL: OpenOptions.ForeignWAL
    private var belongingChecked = false
    /// The `-wal` was found not to belong and left out: every view is the main file alone.
    private var walLeftOut = false
    /// The `-journal` as it came with the store, copied into the working folder before SQLite
    /// opens anything; nil when there is none.
    private var journalAsCopied: URL?
    /// A `-wal` SQLite must not see (its page size is wrong), copied aside for the analysis.
    private var walKeptAside: URL?
    /// Where the main file alone lives when a hot journal is rolled back in the copy.
    private var mainOnlyFolder: URL { folder.appendingPathComponent("main-file-only", isDirectory: true) }
    /// Whether a hot `-journal` came with the store: SQLite rolls it back in the copy when the
    /// copy is first opened with the WAL view, so the copy's main file may change once.
    public var rollsBackJournal: Bool { hasJournal }

    /// SQLite's unix VFS refuses a path of 512 bytes or more (`MAX_PATHNAME`), and it opens the
    /// file's `-journal`, `-wal` and `-shm` beside it too.
    static let sqlitePathLimit = 512

    /// Whether SQLite can open `path` and the sidecars it makes beside it.
    static func sqliteCanOpen(_ path: String) -> Bool {
        path.utf8.count + "-journal".utf8.count < sqlitePathLimit
    }

    /// Largest `-wal` read into memory for parsing. WALs past this are refused rather than
    /// risking the machine; raise it with `STORELENS_MAX_WAL_BYTES`.
    public static var maxWALBytes: Int {
        ProcessInfo.processInfo.environment["STORELENS_MAX_WAL_BYTES"].flatMap(Int.init) ?? 4 << 30
    }

    /// Validates a store family and copies it (main, `-wal`, `-journal`; never `-shm`) into
    /// `folder`, the main file named `name`. `displayPath` names the store in errors (for a store
    /// inside an archive or backup, its path there rather than its place in the scratch folder).
    ///
    /// - Parameter alreadyPrivate: the family is storelens's own copy (extracted from an archive into
    ///   the scratch folder) with its sidecars beside it under their standard names: it is used where
    ///   it is instead of being copied again.
    /// - Parameter staged: copies of the family's files already made in the scratch folder (by
    ///   `EvidenceSession` while it hashed them), by original path: moved into place, not copied.
    /// - Parameter externalData: the `_EXTERNAL_DATA` files, copied and hashed by the session
    ///   while it recorded them; when nil they are copied (and hashed) here.
    /// - Parameter preparing: makes `folder` (and the scratch folder holding it), called before
    ///   anything is written there; nil: `folder` exists.
    public init(family: StoreFamily, name: String, displayPath: String, into folder: URL, options: OpenOptions = OpenOptions(),
                alreadyPrivate: Bool = false, staged: [String: URL] = [:], externalData: ExternalDataFolder? = nil,
                preparing: (() throws -> Void)? = nil) throws {
        let main = family.main
        let path = displayPath
        let (header, size) = try Self.validatedMain(main, path: path)
        self.header = header
        self.family = family
        self.displayPath = displayPath

        let walChecks = try Self.walNotes(family, header: header, options: options, path: path)
        var notes = walChecks.notes
        let mismatchedWAL = walChecks.mismatched
        self.sharedMemory = Self.sharedMemoryHeader(family, pageSize: header.pageSize)

        let hotJournal = try Self.isHotJournal(family, mainBytes: size, pageSize: header.pageSize, options: options, path: path)
        self.hasJournal = hotJournal
        if hotJournal { notes.append(.journalRolledBack) }
        self.notes = notes

        self.folder = folder
        self.foreignWAL = options.ignoreMismatchedWAL && options.foreignWAL == .refuse ? .leaveOut : options.foreignWAL
        self.prepareFolder = preparing ?? {}
        // A -wal the family did not have when it was recorded is never read, even where SQLite
        // would find one by name: it was not hashed, and `finish` refuses the run if one appeared.
        self.walView = mismatchedWAL || family.wal == nil ? .mainFileOnly : .walApplied
        // A session that staged copies of the family chose the copy; one that did not, reading in place.
        let inPlace = !alreadyPrivate && staged.isEmpty && !hotJournal && Self.readsInPlace(family, options: options)
        self.readsInPlace = inPlace
        if !inPlace { try prepareFolder() }
        self.externalData = try externalData ?? ExternalDataFolder.copying(family, storeName: family.main.lastPathComponent, into: folder,
                                                                           alreadyPrivate: alreadyPrivate, inPlace: inPlace)
        if inPlace {
            // The originals, read where they lie: SQLite through the evidence VFS, the rest by
            // `MappedFile` and `pread`. A -wal that cannot belong is hidden from SQLite by the view.
            self.databaseFile = main
            self.journalAsCopied = family.journal
            self.walKeptAside = mismatchedWAL ? family.wal : nil
            return
        }
        // An extracted file deeper than SQLite's path limit is copied up into the (short) working
        // folder: opening it where it lies would fail, and that is no fault of the evidence.
        if alreadyPrivate && Self.sidecarsBeside(family) && !mismatchedWAL && !hotJournal && Self.sqliteCanOpen(main.path) {
            self.databaseFile = main
            // Our own extracted file, never opened by SQLite with a hot journal beside it.
            self.journalAsCopied = family.journal
            self.walKeptAside = family.wal
            return
        }
        let databaseFile = folder.appendingPathComponent(name)
        guard Self.sqliteCanOpen(databaseFile.path) else {
            throw WorkingFolderFailure(folder: folder.deletingLastPathComponent().deletingLastPathComponent().path, code: ENAMETOOLONG)
        }
        self.databaseFile = databaseFile
        (journalAsCopied, walKeptAside) = try Self.copy(family, to: databaseFile, in: folder, staged: staged, keepingWALAside: mismatchedWAL)
        if hotJournal, let journalCopy = journalAsCopied { try Self.prepareRollback(of: databaseFile, journal: journalCopy, mainOnlyFolder: mainOnlyFolder) }
    }

    /// The notes the `-wal` earns (or its absence), and whether it is left out for its page size;
    /// throws for a `-wal` too large to read or, unless asked to leave it out, of the wrong page size.
    static func walNotes(_ family: StoreFamily, header: DatabaseHeader, options: OpenOptions, path: String) throws -> (notes: [StoreNote], mismatched: Bool) {
        guard let walURL = family.wal else {
            let missing = StoreNote.missingWAL(headerSaysWAL: header.isWALMode, walPresent: false, shmPresent: family.shm != nil)
            return (missing.map { [$0] } ?? [], false)
        }
        var notes: [StoreNote] = []
        var mismatched = false
        let walSize = (try? FileManager.default.attributesOfItem(atPath: walURL.path)[.size] as? NSNumber)?.intValue ?? 0
        guard walSize <= Self.maxWALBytes else {
            throw AcquisitionError.unreadable(path: path + "-wal", reason: "the -wal is \(walSize) bytes, above the \(Self.maxWALBytes)-byte limit; set STORELENS_MAX_WAL_BYTES to raise it")
        }
        // The header alone says whether SQLite will use the WAL and whether it can belong here.
        let head = try Self.readPrefix(walURL, count: WALHeader.length)
        let wal = WAL(data: head)
        let fit = StoreNote.walAgainstHeader(databasePageSize: header.pageSize, headerSaysWAL: header.isWALMode,
                                             walPageSize: wal.header?.pageSize, walPresent: true)
        if case .walPageSizeMismatch(let walPageSize, let databasePageSize)? = fit.first {
            guard options.ignoreMismatchedWAL else {
                throw AcquisitionError.walPageSizeMismatch(wal: path + "-wal", walPageSize: walPageSize, databasePageSize: databasePageSize)
            }
            notes.append(fit[0])
            mismatched = true
        }
        if let problem = wal.headerProblem, !head.isEmpty { notes.append(.walIgnored(reason: problem.description)) }
        notes += fit.filter { $0 == .walWithRollbackHeader }
        return (notes, mismatched)
    }

    /// Copies the family into `folder`: the main file as `databaseFile` with its `-wal` beside it
    /// (or kept aside, when SQLite must not see it), the `-journal` kept as it came (for carving;
    /// beside the copy only for a rollback). Staged copies are moved into place instead.
    static func copy(_ family: StoreFamily, to databaseFile: URL, in folder: URL, staged: [String: URL],
                     keepingWALAside: Bool) throws -> (journal: URL?, walAside: URL?) {
        var copies = [(family.main, databaseFile)]
        let walAside = folder.appendingPathComponent("wal-kept-aside")
        if let wal = family.wal { copies.append((wal, keepingWALAside ? walAside : URL(fileURLWithPath: databaseFile.path + "-wal"))) }
        let journalCopy = folder.appendingPathComponent("journal-as-copied")
        if let journal = family.journal { copies.append((journal, journalCopy)) }
        let targets = Dictionary(uniqueKeysWithValues: copies.map { ($0.0, $0.1) })
        _ = try FileWork.map(copies.map(\.0)) { source in
            // A staged copy is moved with link + unlink, which cannot replace an existing file.
            if let copy = staged[source.path], link(copy.path, targets[source]!.path) == 0 {
                unlink(copy.path)
                return
            }
            try SafeCopy.copy(source, to: targets[source]!)
        }
        return (family.journal != nil ? journalCopy : nil, family.wal != nil && keepingWALAside ? walAside : nil)
    }

    /// Copies of our copies, made before any connection opens: the journal SQLite rolls back
    /// beside the copy, and the main file alone as it came (the rollback rewrites the copy's), its
    /// header switched to rollback mode so SQLite reads no -wal beside it.
    static func prepareRollback(of databaseFile: URL, journal: URL, mainOnlyFolder: URL) throws {
        try SafeCopy.copy(journal, to: URL(fileURLWithPath: databaseFile.path + "-journal"))
        guard mkdir(mainOnlyFolder.path, 0o700) == 0 else { throw WorkingFolderFailure(code: errno) }
        let mainOnly = mainOnlyFolder.appendingPathComponent(databaseFile.lastPathComponent)
        try SafeCopy.copy(databaseFile, to: mainOnly)
        let handle = try FileHandle(forUpdating: mainOnly)
        try handle.seek(toOffset: 18)
        try handle.write(contentsOf: Data([1, 1]))
        try handle.close()
    }

    /// Whether the family's `-wal` and `-journal` (when it has them) are named after its main
    /// file, where SQLite looks for them (a backup's files are named by their hashes instead).
    static func sidecarsBeside(_ family: StoreFamily) -> Bool {
        (family.wal.map { $0.path == family.main.path + "-wal" } ?? true) && (family.journal.map { $0.path == family.main.path + "-journal" } ?? true)
    }

    /// Whether `family` can be read where it lies, through the read-only evidence VFS, rather
    /// than copied first: not when `--copy` asks for a copy, when SQLite would not find its
    /// sidecars by name, when its path is too long for SQLite, or when a `-journal` beside it
    /// would make SQLite roll back (any first byte but zero makes a journal hot to SQLite, which
    /// must then write; a hot journal is only ever rolled back in a copy).
    public static func readsInPlace(_ family: StoreFamily, options: OpenOptions) -> Bool {
        guard !options.copyEvidence, sidecarsBeside(family), sqliteCanOpen(family.main.path) else { return false }
        if let journal = family.journal, let first = (try? readPrefix(journal, count: 1))?.first, first != 0 { return false }
        return true
    }

    /// The `-shm` header, when a readable one came with the store. Only the bytes a -shm can hold
    /// for this WAL's frames are read (a sparse 1 GiB -shm would otherwise cost 1 GiB of memory);
    /// an unreadable -shm is a hint missing, not an error: SQLite itself rebuilds it.
    static func sharedMemoryHeader(_ family: StoreFamily, pageSize: Int) -> SharedMemoryIndex? {
        guard let shmURL = family.shm else { return nil }
        let walBytes = family.wal.map { FileWork.size($0) } ?? 0
        let frames = walBytes > 32 ? Int((walBytes - 32) / Int64(24 + pageSize)) : 0
        let data = try? readPrefix(shmURL, count: SharedMemoryIndex.byteLimit(walFrames: frames))
        return data.flatMap { try? SharedMemoryIndex(data: $0) }
    }

    /// Whether a hot `-journal` (an interrupted transaction) came with the store: refused unless
    /// it is to be rolled back, and then its header checked against the files' sizes.
    static func isHotJournal(_ family: StoreFamily, mainBytes: Int, pageSize: Int, options: OpenOptions, path: String) throws -> Bool {
        guard let journal = family.journal else { return false }
        // A journal is hot when it is non-empty and its header still has the magic:
        // SQLite zeroes or truncates it when a transaction completes.
        let magic: [UInt8] = [0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7]
        let head = (try? readPrefix(journal, count: JournalHeader.length)) ?? Data()
        guard Array(head.prefix(8)) == magic else { return false }
        guard options.rollBackJournal else { throw AcquisitionError.hotJournal(path: path, journal: path + "-journal") }
        try JournalHeader(head).check(mainBytes: Int64(mainBytes), journalBytes: FileWork.size(journal), databasePageSize: pageSize,
                                      journal: path + "-journal")
        return true
    }

    /// The main file's header and size, after the checks that tell a file cut off in transfer,
    /// a file that is not SQLite (a Core Data XML or binary store named as such) or a damaged
    /// header from a store SQLite can open.
    static func validatedMain(_ main: URL, path: String) throws -> (header: DatabaseHeader, size: Int) {
        let fm = FileManager.default
        var isDir: ObjCBool = false
        guard fm.fileExists(atPath: main.path, isDirectory: &isDir) else { throw AcquisitionError.notFound(path: path) }
        guard !isDir.boolValue else { throw AcquisitionError.isDirectory(path: path) }
        guard fm.isReadableFile(atPath: main.path) else {
            throw AcquisitionError.unreadable(path: path, reason: "permission denied")
        }
        let size = (try? fm.attributesOfItem(atPath: main.path)[.size] as? NSNumber)?.intValue ?? 0
        let prefix = try Self.readPrefix(main, count: DatabaseHeader.length)
        guard DatabaseHeader.isSQLite(prefix) else {
            // The one place every SQLite command learns its input is not SQLite: an atomic store
            // is named as such, with the commands that read it.
            if let atomic = StoreFileFormat.atomic(head: try Self.readPrefix(main, count: 262)) {
                throw AcquisitionError.atomicStore(path: path, format: atomic)
            }
            throw AcquisitionError.notSQLite(path: path)
        }
        let header: DatabaseHeader
        switch Result(catching: { () throws(DatabaseHeaderError) -> DatabaseHeader in try DatabaseHeader(data: prefix) }) {
        case .success(let parsed):
            header = parsed
        case .failure(.tooShort):
            throw AcquisitionError.truncated(path: path, size: size, expected: DatabaseHeader.length)
        case .failure(let error):
            throw AcquisitionError.corrupt(path: path, detail: error.description)
        }
        // A main file shorter than its header's page count was cut off in transfer; SQLite would
        // only say "malformed" on some later query. A longer one is fine: SQLite trusts a valid
        // in-header count and ignores what follows (an iOS backup's Manifest.db is 16 bytes longer).
        // Without a valid count, a file that ends part-way through a page is the damage case.
        let (pages, pagesOverflow) = Int(header.pageCount).multipliedReportingOverflow(by: header.pageSize)
        let described = header.pageCountIsValid && !pagesOverflow ? pages : 0
        if size < header.pageSize {
            throw AcquisitionError.truncated(path: path, size: size, expected: max(described, header.pageSize))
        }
        if size < described {
            throw AcquisitionError.truncated(path: path, size: size, expected: described)
        }
        if described == 0 && size % header.pageSize != 0 {
            throw AcquisitionError.partialPage(path: path, size: size, pageSize: header.pageSize)
        }
        return (header, size)
    }

    /// The copy's main file as it is now, in a file nothing writes: the copy itself, or — when a
    /// hot journal is to be rolled back in it, which rewrites it — a copy of it made now (copied
    /// through a bounded buffer), so that a reader can map it rather than hold it in memory.
    public func stableMainFile() throws -> URL {
        guard hasJournal else { return databaseFile }
        snapshots += 1
        let snapshot = folder.appendingPathComponent("main-as-read-\(snapshots)")
        try SafeCopy.copy(databaseFile, to: snapshot)
        return snapshot
    }
    private var snapshots = 0

    /// Opens the copy with the WAL applied: what the app would see.
    ///
    /// Read-write (needed to roll back a hot journal) but with checkpoint-on-close disabled and
    /// `query_only` on, so the copy's WAL survives for frame analysis and our own SQL cannot write.
    public func open() throws -> Connection {
        if walLeftOut { return try openMainFileOnly() }
        let connection = try openWALView()
        guard !belongingChecked, walView == .walApplied, family.wal != nil, foreignWAL != .read else { return connection }
        belongingChecked = true
        guard let reason = WALBelonging.foreignSign(walView: connection, mainOnly: try openMainFileOnly()) else { return connection }
        guard foreignWAL == .leaveOut else { throw AcquisitionError.walDoesNotBelong(wal: displayPath + "-wal", store: displayPath, reason: reason) }
        walLeftOut = true
        walView = .mainFileOnly
        notes.append(.walDoesNotBelong(reason: reason))
        return try openMainFileOnly()
    }

    /// Throws `walDoesNotBelong` where the `-wal` cannot belong to the main file and the options
    /// refuse such a store: for readers that build their own views from the frames (recover)
    /// rather than open the WAL view.
    public func checkWALBelongs() throws {
        guard !belongingChecked, family.wal != nil, foreignWAL != .read else { return }
        _ = try open()
    }

    private func openWALView() throws -> Connection {
        if readsInPlace { return try openInPlace(walView) }
        do {
            let connection = try Connection.open(path: databaseFile.path, mode: .readWrite, label: displayPath)
            try connection.disableCheckpointOnClose()
            if hasJournal {
                // The first read rolls the hot journal back in the copy.
                _ = try connection.scalar("SELECT count(*) FROM sqlite_master")
            }
            try connection.makeQueryOnly()
            // Reading the schema now turns "not a database" and "malformed" into errors here,
            // with the original's path, rather than in the middle of a report.
            _ = try connection.scalar("SELECT count(*) FROM sqlite_master")
            return connection
        } catch {
            throw Self.translate(error, path: displayPath)
        }
    }

    /// Opens the main file alone, as if no `-wal` existed: what is already checkpointed.
    ///
    /// The copy itself, opened with `immutable=1`: SQLite then reads no `-wal`, `-shm` or
    /// `-journal`, and the copy's main file is what was hashed (the WAL view never writes it: no
    /// checkpoint, `query_only`). A copy whose hot journal the WAL view rolls back is the one
    /// exception: its main file changes when that view is opened, so the main file alone is a
    /// copy of the copy made before anything opened it, its header switched to rollback mode, in
    /// a folder of its own.
    public func openMainFileOnly() throws -> Connection {
        if readsInPlace { return try openInPlace(.mainFileOnly) }
        do {
            guard hasJournal else {
                let connection = try Connection.openImmutable(path: databaseFile.path, label: displayPath)
                try connection.makeQueryOnly()
                _ = try connection.scalar("SELECT count(*) FROM sqlite_master")
                return connection
            }
            // Made when the copy was (see init): the original is not read again.
            let connection = try Connection.open(path: mainOnlyFolder.appendingPathComponent(databaseFile.lastPathComponent).path, mode: .readOnly,
                                                 label: displayPath)
            try connection.makeQueryOnly()
            _ = try connection.scalar("SELECT count(*) FROM sqlite_master")
            return connection
        } catch {
            throw Self.translate(error, path: displayPath)
        }
    }

    /// The original opened where it lies through the evidence VFS, showing `view`. Checkpoint on
    /// close is off all the same: the VFS would refuse its writes, but a normal run asks none
    /// (the tests count them).
    private func openInPlace(_ view: Connection.EvidenceView) throws -> Connection {
        do {
            let connection = try Connection.openEvidence(path: databaseFile.path, view: view, label: displayPath)
            try connection.disableCheckpointOnClose()
            try connection.makeQueryOnly()
            _ = try connection.scalar("SELECT count(*) FROM sqlite_master")
            return connection
        } catch {
            throw Self.translate(error, path: displayPath)
        }
    }

    /// Attaches this store with its WAL applied (`open()`'s view) to `connection` as `schema`,
    /// read-only: the original through the evidence VFS when it is read in place, else the copy.
    public func attachWALView(to connection: Connection, as schema: String) throws(SQLiteError) {
        if walLeftOut && !readsInPlace {
            try connection.attachImmutable(databaseFile.path, as: schema)
        } else if readsInPlace {
            try connection.attachEvidence(databaseFile.path, view: walView, as: schema)
        } else {
            try connection.attachFile(databaseFile.path, as: schema)
        }
    }

    static func translate(_ error: SQLiteError, path: String) -> AcquisitionError {
        // Opening our own copy and reading its schema fails on the input's account also with
        // SQLITE_ERROR ("unsupported file format": an unknown schema format or text encoding)
        // and SQLITE_CANTOPEN (a -wal whose header has an unknown format version).
        if error.isCorrupt || error.isNotADatabase || error.primaryCode == 1 || error.primaryCode == 14 {
            return .corrupt(path: path, detail: "SQLite: \(error.message)")
        }
        return .sqlite(error.with(path: path))
    }

    static func readPrefix(_ url: URL, count: Int) throws -> Data {
        do {
            let handle = try FileHandle(forReadingFrom: url)
            defer { try? handle.close() }
            return try handle.read(upToCount: count) ?? Data()
        } catch {
            throw AcquisitionError.unreadable(path: url.path, reason: error.localizedDescription)
        }
    }

    static func read(_ url: URL) throws -> Data {
        do {
            return try Data(contentsOf: url)
        } catch {
            throw AcquisitionError.unreadable(path: url.path, reason: error.localizedDescription)
        }
    }
}
