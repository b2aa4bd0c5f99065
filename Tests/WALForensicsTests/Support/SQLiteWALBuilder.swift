import Foundation
import SQLiteAccess
import StoreFormats
import StoreTestSupport
@testable import WALForensics

/// Builds WALs with SQLite itself: a writer in WAL mode with automatic
/// checkpoints off writes a base state, checkpoints it into the main file,
/// then writes transactions that stay in the `-wal`; the files are copied
/// while the writer still holds the database open, as on a device.
struct SQLiteWALBuilder {
    struct Options {
        var pageSize = 4096
        var autoVacuum = "NONE"
    }

    /// A copied store: main file, `-wal` and `-shm`, in a folder of their own.
    struct Copy {
        let folder: URL
        var db: URL { folder.appendingPathComponent("db.sqlite") }
        var wal: URL { folder.appendingPathComponent("db.sqlite-wal") }
        var shm: URL { folder.appendingPathComponent("db.sqlite-shm") }

        /// A copy holding these bytes as main file and -wal, in a new folder (created here).
        static func holding(main: Data, wal: Data, in folder: URL) throws -> Copy {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let copy = Copy(folder: folder)
            try main.write(to: copy.db)
            try wal.write(to: copy.wal)
            return copy
        }

        /// A writable copy of a store's main file and -wal (never its -shm) in `folder`: SQLite
        /// rewrites a -shm even on a read-only open, so the originals are never opened.
        static func of(store: URL, wal: URL, in folder: URL) throws -> Copy {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let copy = Copy(folder: folder)
            for (from, to) in [(store, copy.db), (wal, copy.wal)] {
                try FileManager.default.copyItem(at: from, to: to)
                try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: to.path)
            }
            return copy
        }

        func evidence(withSharedMemory: Bool = true) throws -> WALEvidence {
            let walData = FileManager.default.fileExists(atPath: wal.path) ? try Data(contentsOf: wal) : nil
            let shmData = withSharedMemory && FileManager.default.fileExists(atPath: shm.path) ? try Data(contentsOf: shm) : nil
            return WALEvidence(displayPath: db.lastPathComponent, mainFile: try Data(contentsOf: db), walData: walData,
                               sharedMemoryData: shmData)
        }

        func read(_ file: URL) throws -> Data { try Data(contentsOf: file) }
        func write(_ data: Data, to file: URL) throws { try data.write(to: file) }
    }

    let root: TemporaryFolder
    let live: URL
    let writer: Connection
    private var copies = 0

    /// Opens a fresh writer and runs `base`, which is then checkpointed into the main file.
    init(_ name: String = "wal", options: Options = Options(), base: (Connection) throws -> Void) throws {
        root = try TemporaryFolder(name)
        let liveFolder = root.path("live")
        try FileManager.default.createDirectory(at: liveFolder, withIntermediateDirectories: true)
        live = liveFolder.appendingPathComponent("db.sqlite")
        writer = try Connection.open(path: live.path, mode: .create)
        try writer.execute("PRAGMA page_size = \(options.pageSize)")
        try writer.execute("PRAGMA auto_vacuum = \(options.autoVacuum)")
        try writer.execute("PRAGMA journal_mode = WAL")
        try writer.execute("PRAGMA wal_autocheckpoint = 0")
        try writer.disableCheckpointOnClose()
        try base(writer)
        try writer.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    }

    /// Runs `sql` as one transaction that stays in the WAL.
    func commit(_ sql: String) throws {
        try writer.execute("BEGIN; \(sql); COMMIT;")
    }

    /// Copies db, `-wal` and `-shm` as they are now, while the writer holds them open.
    mutating func copy() throws -> Copy {
        copies += 1
        let folder = root.path("copy-\(copies)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let copy = Copy(folder: folder)
        for (from, to) in [(live, copy.db), (URL(fileURLWithPath: live.path + "-wal"), copy.wal),
                           (URL(fileURLWithPath: live.path + "-shm"), copy.shm)]
            where FileManager.default.fileExists(atPath: from.path) {
            try FileManager.default.copyItem(at: from, to: to)
        }
        return copy
    }

    /// A scratch copy of `copy` in a new folder, for SQLite itself to open (it may change it).
    static func scratch(of copy: Copy, includeShm: Bool, in folder: TemporaryFolder) throws -> Copy {
        let target = folder.path("sqlite-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: target, withIntermediateDirectories: true)
        let scratch = Copy(folder: target)
        try FileManager.default.copyItem(at: copy.db, to: scratch.db)
        if FileManager.default.fileExists(atPath: copy.wal.path) { try FileManager.default.copyItem(at: copy.wal, to: scratch.wal) }
        if includeShm, FileManager.default.fileExists(atPath: copy.shm.path) { try FileManager.default.copyItem(at: copy.shm, to: scratch.shm) }
        return scratch
    }

    /// What SQLite itself shows for a copy: it opens a scratch copy the
    /// ordinary way and runs `query`; nil when SQLite reports an error.
    static func sqliteAnswer(_ copy: Copy, includeShm: Bool = false, query: String) throws -> [[DatabaseValue]]? {
        let folder = try TemporaryFolder("sqlite-truth")
        let scratch = try scratch(of: copy, includeShm: includeShm, in: folder)
        do {
            let connection = try Connection.open(path: scratch.db.path, mode: .readWrite)
            try connection.disableCheckpointOnClose()
            return try connection.rows(query).map(\.values)
        } catch {
            return nil
        }
    }

    /// SQLite's mxFrame for a copy: the "log" column of `PRAGMA wal_checkpoint` on a scratch copy.
    static func sqliteLastCommitFrame(_ copy: Copy) throws -> Int? {
        let folder = try TemporaryFolder("sqlite-mx")
        let scratch = try scratch(of: copy, includeShm: false, in: folder)
        guard let connection = try? Connection.open(path: scratch.db.path, mode: .readWrite) else { return nil }
        try connection.disableCheckpointOnClose()
        _ = try? connection.scalar("SELECT count(*) FROM sqlite_master")
        guard let row = try? connection.rows("PRAGMA wal_checkpoint(PASSIVE)").first else { return nil }
        return row[1].int
    }

    /// The copy with its WAL cut after frame `frames`: what SQLite shows at an earlier commit.
    static func truncated(_ copy: Copy, frames: Int, pageSize: Int, in folder: TemporaryFolder) throws -> Copy {
        let scratch = try scratch(of: copy, includeShm: false, in: folder)
        let data = try Data(contentsOf: scratch.wal)
        try data.prefix(WALHeader.length + frames * (WALFrame.headerLength + pageSize)).write(to: scratch.wal)
        return scratch
    }
}

/// Byte surgery on a copied WAL.
enum WALSurgery {
    static func offset(ofFrame frame: Int, pageSize: Int) -> Int {
        WALHeader.length + (frame - 1) * (WALFrame.headerLength + pageSize)
    }

    static func flip(_ data: inout Data, at offset: Int) {
        data[data.startIndex + offset] ^= 0xFF
    }

    static func writeBE(_ value: UInt32, into data: inout Data, at offset: Int) {
        for i in 0..<4 { data[data.startIndex + offset + i] = UInt8(truncatingIfNeeded: value >> (24 - 8 * UInt32(i))) }
    }

    static func readBE(_ data: Data, at offset: Int) -> UInt32 {
        (0..<4).reduce(UInt32(0)) { $0 << 8 | UInt32(data[data.startIndex + offset + $1]) }
    }

    /// Recomputes the header checksum (bytes 24..31) after the header was edited.
    static func fixHeaderChecksum(_ data: inout Data) {
        let bigEndian = readBE(data, at: 0) & 1 == 1
        var s0: UInt32 = 0, s1: UInt32 = 0
        for i in stride(from: 0, to: 24, by: 8) {
            let a = word(data, i, bigEndian), b = word(data, i + 4, bigEndian)
            s0 = s0 &+ a &+ s1
            s1 = s1 &+ b &+ s0
        }
        writeBE(s0, into: &data, at: 24)
        writeBE(s1, into: &data, at: 28)
    }

    /// Recomputes the header checksum and every frame's cumulative checksum, so edited frames
    /// are valid to SQLite too (what a hostile WAL would do).
    static func reseal(_ data: inout Data, pageSize: Int) {
        fixHeaderChecksum(&data)
        let bigEndian = readBE(data, at: 0) & 1 == 1
        var s0 = readBE(data, at: 24), s1 = readBE(data, at: 28)
        var offset = WALHeader.length
        while offset + WALFrame.headerLength + pageSize <= data.count {
            // The frame header's first 8 bytes, then the page.
            (s0, s1) = checksum(data, offset..<offset + 8, bigEndian, s0, s1)
            (s0, s1) = checksum(data, offset + WALFrame.headerLength..<offset + WALFrame.headerLength + pageSize, bigEndian, s0, s1)
            writeBE(s0, into: &data, at: offset + 16)
            writeBE(s1, into: &data, at: offset + 20)
            offset += WALFrame.headerLength + pageSize
        }
    }

    /// SQLite's running WAL checksum over `range` (a multiple of 8 bytes), from `s0`, `s1`. Read
    /// through the raw buffer in a plain loop: byte-wise `Data` access through generic sequences
    /// is slow in the debug build the tests run in, and this covers every page of a WAL.
    private static func checksum(_ data: Data, _ range: Range<Int>, _ bigEndian: Bool, _ s0: UInt32, _ s1: UInt32) -> (UInt32, UInt32) {
        data.withUnsafeBytes { raw in
            var s0 = s0, s1 = s1, i = range.lowerBound
            while i < range.upperBound {
                let a = raw.loadUnaligned(fromByteOffset: i, as: UInt32.self), b = raw.loadUnaligned(fromByteOffset: i + 4, as: UInt32.self)
                s0 = s0 &+ (bigEndian ? UInt32(bigEndian: a) : UInt32(littleEndian: a)) &+ s1
                s1 = s1 &+ (bigEndian ? UInt32(bigEndian: b) : UInt32(littleEndian: b)) &+ s0
                i += 8
            }
            return (s0, s1)
        }
    }

    private static func word(_ data: Data, _ offset: Int, _ bigEndian: Bool) -> UInt32 {
        let be = readBE(data, at: offset)
        return bigEndian ? be : be.byteSwapped
    }
}
