import Foundation

/// The header of a `-shm` (wal-index) file: what the last SQLite
/// connection believed about the WAL when the file was copied.
///
/// The `-shm` is transient and SQLite rebuilds it from the WAL whenever it
/// looks stale, so treat it as a hint: comparing it with the WAL (`agrees(with:)`)
/// tells whether the copy was taken while a writer was still active, or
/// whether frames arrived after the index was last updated.
///
/// The header is in the writer's native byte order, which is little-endian
/// on every Apple device and on x86-64; this parser assumes little-endian.
///
/// Related SQLite documentation: <https://www.sqlite.org/walformat.html#the_wal_index_file_format>
public struct SharedMemoryIndex: Sendable, Equatable {
    /// Bytes of header this parser needs: two 48-byte copies plus the 40-byte checkpoint info.
    public static let headerLength = 136

    /// The most bytes a `-shm` can hold for a WAL of `walFrames` frames: 32 KiB blocks, the first
    /// indexing 4062 frames (its header takes the room of 34), each further one 4096
    /// (walformat.html §2.2). A larger `-shm` (a sparse 1 GiB file from a hostile image) holds
    /// nothing more, so nothing more is read.
    public static func byteLimit(walFrames: Int) -> Int {
        let firstBlockFrames = 4062, blockFrames = 4096, blockBytes = 32768
        let frames = max(0, walFrames)
        guard frames > firstBlockFrames else { return blockBytes }
        let more = (frames - firstBlockFrames - 1) / blockFrames + 1
        // A WAL's frame count is bounded by its size; this cannot overflow for any real file.
        return blockBytes * (1 + min(more, Int.max / blockBytes - 1))
    }

    /// wal-index format version (offset 0), 3007000.
    public let iVersion: UInt32
    /// Transaction counter (offset 8), bumped on each write transaction.
    public let iChange: UInt32
    /// Whether the header was initialised (offset 12).
    public let isInit: Bool
    /// Whether the WAL uses big-endian checksum words (offset 13).
    public let bigEndianChecksum: Bool
    /// Page size as stored (u16 at offset 14; 1 means 65536).
    public let rawPageSize: UInt16
    /// The last committed frame the index knows of (offset 16).
    public let mxFrame: UInt32
    /// Database size in pages at `mxFrame` (offset 20).
    public let nPage: UInt32
    /// Cumulative checksum of frame `mxFrame` (offset 24).
    public let frameChecksum: WALChecksum
    /// The WAL header's salt-1, read big-endian from offset 32.
    ///
    /// SQLite copies the salts byte for byte from the WAL header, so they
    /// are read in the WAL's (big-endian) order: the value then compares
    /// directly with `WAL.salt1`.
    public let salt1: UInt32
    /// The WAL header's salt-2, read big-endian from offset 36 (see `salt1`).
    public let salt2: UInt32
    /// The stored header checksum (offset 40).
    public let headerChecksum: WALChecksum
    /// Whether `headerChecksum` matches bytes 0..39 (native word order).
    public let headerChecksumValid: Bool
    /// Whether the two header copies (bytes 0..47 and 48..95) are identical;
    /// a mismatch means a write was torn.
    public let copiesMatch: Bool
    /// Frames already copied into the main database (offset 96, not the 128
    /// that walformat.html's prose says).
    public let nBackfill: UInt32
    /// The five read marks (offsets 100..119); 0xFFFFFFFF means unused.
    public let readMarks: [UInt32]
    /// Frames a checkpoint has attempted to backfill (offset 128).
    public let nBackfillAttempted: UInt32

    /// Page size in bytes, or nil when the stored value is not a possible page size.
    public var pageSize: Int? {
        if rawPageSize == 1 { return 65536 }
        let size = Int(rawPageSize)
        guard size >= 512, size <= 32768, size & (size - 1) == 0 else { return nil }
        return size
    }

    /// Whether the header is internally consistent: both copies match and the checksum holds.
    public var isIntact: Bool { headerChecksumValid && copiesMatch }

    /// Parses the first 136 bytes of a `-shm` file (longer input is fine).
    ///
    /// - Throws: `SharedMemoryIndexError.tooShort` when fewer bytes are present.
    public init(data: Data) throws(SharedMemoryIndexError) {
        guard let reader = ByteReader(data, length: Self.headerLength) else {
            throw .tooShort(length: data.count)
        }
        iVersion = reader.uint32LE(at: 0)
        iChange = reader.uint32LE(at: 8)
        isInit = reader.uint8(at: 12) != 0
        bigEndianChecksum = reader.uint8(at: 13) != 0
        rawPageSize = reader.uint16LE(at: 14)
        mxFrame = reader.uint32LE(at: 16)
        nPage = reader.uint32LE(at: 20)
        frameChecksum = WALChecksum(first: reader.uint32LE(at: 24), second: reader.uint32LE(at: 28))
        salt1 = reader.uint32BE(at: 32)
        salt2 = reader.uint32BE(at: 36)
        headerChecksum = WALChecksum(first: reader.uint32LE(at: 40), second: reader.uint32LE(at: 44))
        let computed = WALChecksum.fold(reader.bytes, range: 0..<40, bigEndianWords: false)
        headerChecksumValid = computed == headerChecksum
        copiesMatch = reader.slice(0..<48).elementsEqual(reader.slice(48..<96))
        nBackfill = reader.uint32LE(at: 96)
        readMarks = (0..<5).map { reader.uint32LE(at: 100 + 4 * $0) }
        nBackfillAttempted = reader.uint32LE(at: 128)
    }

    /// Whether this index describes the same WAL state as `wal`: its
    /// `mxFrame` equals the WAL's last valid commit frame and its salts equal
    /// the WAL header's.
    ///
    /// Equal salts mean the index was written for this WAL generation; an
    /// equal `mxFrame` means no commit was added (or lost) since. It does
    /// not look at `isIntact`; a torn or unchecksummed index can still agree.
    /// A WAL whose header is unusable never agrees.
    public func agrees(with wal: WAL) -> Bool {
        guard wal.isUsable, let walSalt1 = wal.salt1, let walSalt2 = wal.salt2 else { return false }
        return Int(mxFrame) == wal.lastCommitFrame && salt1 == walSalt1 && salt2 == walSalt2
    }
}

/// Why bytes could not be read as a `-shm` wal-index header.
public enum SharedMemoryIndexError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Fewer than 136 bytes were available.
    case tooShort(length: Int)

    public var description: String {
        switch self {
        case .tooShort(let length):
            "The shared-memory file is \(length) bytes long, shorter than the 136-byte wal-index header."
        }
    }
}
