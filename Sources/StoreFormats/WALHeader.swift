import Foundation

/// The 32-byte header at the start of a `-wal` file, decoded as stored.
///
/// Fields are decoded even when SQLite would reject the header, because an
/// inspector wants to show what is there; `WAL.headerProblem` says whether
/// SQLite would actually use the file. All fields are big-endian u32.
///
/// Related SQLite documentation: <https://www.sqlite.org/fileformat2.html#walformat>
public struct WALHeader: Sendable, Equatable {
    /// The header's length in bytes; frame 1 starts right after it.
    public static let length = 32
    /// Magic meaning "checksum words are little-endian".
    public static let littleEndianMagic: UInt32 = 0x377f_0682
    /// Magic meaning "checksum words are big-endian".
    public static let bigEndianMagic: UInt32 = 0x377f_0683
    /// The only format version SQLite accepts.
    public static let supportedFormatVersion: UInt32 = 3_007_000

    /// Magic number (offset 0); its low bit selects the checksum word order.
    public let magic: UInt32
    /// File format version (offset 4), 3007000 for every SQLite since 3.7.0.
    public let formatVersion: UInt32
    /// Page size as stored (offset 8); see `pageSize` for the checked value.
    public let rawPageSize: UInt32
    /// Checkpoint sequence number (offset 12).
    public let checkpointSequence: UInt32
    /// Salt-1 (offset 16): random at creation, +1 on every WAL reset.
    public let salt1: UInt32
    /// Salt-2 (offset 20): a new random value on every WAL reset.
    public let salt2: UInt32
    /// Checksum over header bytes 0..23 (offsets 24 and 28).
    public let checksum: WALChecksum

    /// Whether checksum words are read big-endian (magic 0x377f0683).
    public var bigEndianChecksums: Bool { magic & 1 == 1 }

    /// Whether the magic is one of the two SQLite WAL magics.
    public var hasValidMagic: Bool { magic & 0xFFFF_FFFE == Self.littleEndianMagic }

    /// The page size when it is a power of two in 512...65536, otherwise nil
    /// (SQLite then ignores the whole WAL).
    public var pageSize: Int? {
        let size = Int(rawPageSize)
        guard size >= 512, size <= 65536, size & (size - 1) == 0 else { return nil }
        return size
    }

    /// Decodes the first 32 bytes; nil when fewer are present.
    init?(_ data: Data) {
        guard let reader = ByteReader(data, length: Self.length) else { return nil }
        magic = reader.uint32BE(at: 0)
        formatVersion = reader.uint32BE(at: 4)
        rawPageSize = reader.uint32BE(at: 8)
        checkpointSequence = reader.uint32BE(at: 12)
        salt1 = reader.uint32BE(at: 16)
        salt2 = reader.uint32BE(at: 20)
        checksum = WALChecksum(first: reader.uint32BE(at: 24), second: reader.uint32BE(at: 28))
        computedChecksum = WALChecksum.fold(
            reader.bytes, range: 0..<24, bigEndianWords: magic & 1 == 1)
    }

    /// The checksum of bytes 0..23 as recomputed from the file.
    let computedChecksum: WALChecksum

    /// The first reason SQLite would not use this header, checked in the
    /// order of SQLite's `walIndexRecover`, or nil when it is usable.
    var problem: WALHeaderProblem? {
        guard hasValidMagic else { return .badMagic(magic) }
        guard pageSize != nil else { return .invalidPageSize(rawPageSize) }
        guard computedChecksum == checksum else {
            return .checksumMismatch(stored: checksum, computed: computedChecksum)
        }
        guard formatVersion == Self.supportedFormatVersion else {
            return .unsupportedVersion(formatVersion)
        }
        return nil
    }
}

/// Why SQLite would not use a WAL file's header.
///
/// For every case except `unsupportedVersion`, SQLite silently ignores the
/// whole WAL and reads the main file alone; for `unsupportedVersion` it
/// refuses to open the database (`SQLITE_CANTOPEN`).
public enum WALHeaderProblem: Error, Equatable, Sendable, CustomStringConvertible {
    /// Fewer than 32 bytes (an empty WAL counts as "no WAL").
    case tooShort(length: Int)
    /// The magic is neither 0x377f0682 nor 0x377f0683.
    case badMagic(UInt32)
    /// The page size is not a power of two in 512...65536.
    case invalidPageSize(UInt32)
    /// The stored header checksum does not match bytes 0..23.
    case checksumMismatch(stored: WALChecksum, computed: WALChecksum)
    /// The format version is not 3007000.
    case unsupportedVersion(UInt32)

    /// Whether SQLite would open the database and just not use the WAL
    /// (true), rather than refuse to open it (false).
    public var sqliteIgnoresWAL: Bool {
        if case .unsupportedVersion = self { return false }
        return true
    }

    public var description: String {
        switch self {
        case .tooShort(let length):
            "The WAL is \(length) bytes long, shorter than its 32-byte header, so SQLite ignores it."
        case .badMagic(let magic):
            "The WAL header's magic number 0x\(String(magic, radix: 16)) is not a SQLite WAL magic, so SQLite ignores the WAL."
        case .invalidPageSize(let size):
            "The WAL header gives page size \(size), which is not a power of two between 512 and 65536, so SQLite ignores the WAL."
        case .checksumMismatch(let stored, let computed):
            "The WAL header's checksum (\(stored)) does not match its contents (\(computed)), so SQLite ignores the WAL."
        case .unsupportedVersion(let version):
            "The WAL header gives format version \(version) instead of 3007000, so SQLite refuses to open the database."
        }
    }
}
