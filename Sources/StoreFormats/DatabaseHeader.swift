import Foundation

/// The 100-byte header at the start of a SQLite main database file.
///
/// Read before handing a file to SQLite: it tells whether the file is a
/// database at all, whether it expects a WAL (bytes 18/19 == 2), and which
/// page size a `-wal` next to it must use. All integers are big-endian.
///
/// Related SQLite documentation: <https://www.sqlite.org/fileformat2.html#the_database_header>
public struct DatabaseHeader: Sendable, Equatable {
    /// The header's length in bytes.
    public static let length = 100

    /// The 16 bytes every SQLite 3 database starts with: `"SQLite format 3\0"`.
    public static let magic: [UInt8] = Array("SQLite format 3".utf8) + [0]

    /// Page size in bytes (the stored value 1 means 65536).
    public let pageSize: Int
    /// File format write version (byte 18): 1 = rollback journal, 2 = WAL.
    public let writeVersion: UInt8
    /// File format read version (byte 19): 1 = rollback journal, 2 = WAL.
    public let readVersion: UInt8
    /// Bytes reserved at the end of each page (byte 20), e.g. for encryption extensions.
    public let reservedBytesPerPage: UInt8
    /// Incremented by each committed change in rollback mode (offset 24).
    public let fileChangeCounter: UInt32
    /// The in-header database size in pages (offset 28). SQLite trusts it
    /// only when `fileChangeCounter == versionValidFor`.
    public let pageCount: UInt32
    /// Page number of the first freelist trunk page, 0 if none (offset 32).
    public let firstFreelistTrunk: UInt32
    /// Total number of freelist pages (offset 36).
    public let freelistPageCount: UInt32
    /// Incremented whenever the schema changes (offset 40).
    public let schemaCookie: UInt32
    /// Schema format number, 1...4 (offset 44).
    public let schemaFormat: UInt32
    /// Largest root b-tree page in (incremental) auto-vacuum mode, otherwise 0 (offset 52).
    public let largestRootPage: UInt32
    /// Text encoding (offset 56): 1 = UTF-8, 2 = UTF-16le, 3 = UTF-16be.
    public let textEncoding: UInt32
    /// `PRAGMA user_version` (offset 60).
    public let userVersion: UInt32
    /// Raw incremental-vacuum flag (offset 64); non-zero means incremental vacuum.
    public let incrementalVacuumFlag: UInt32
    /// `PRAGMA application_id` (offset 68).
    public let applicationID: UInt32
    /// The `fileChangeCounter` value for which `pageCount` is valid (offset 92).
    public let versionValidFor: UInt32
    /// `SQLITE_VERSION_NUMBER` of the library that last wrote the file (offset 96).
    public let sqliteVersionNumber: UInt32

    /// Whether SQLite will look for a `-wal` file: both version bytes are 2.
    public var isWALMode: Bool { writeVersion == 2 && readVersion == 2 }

    /// Whether the file is in auto-vacuum (full or incremental) mode.
    public var autoVacuum: Bool { largestRootPage != 0 }

    /// Whether the file is in incremental auto-vacuum mode (Core Data's default).
    public var incrementalVacuum: Bool { incrementalVacuumFlag != 0 }

    /// Whether SQLite would trust `pageCount` rather than the file's length.
    public var pageCountIsValid: Bool { fileChangeCounter == versionValidFor && pageCount != 0 }

    /// A readable name for `textEncoding`, or nil for a value SQLite does not define.
    public var textEncodingName: String? {
        switch textEncoding {
        case 1: "UTF-8"
        case 2: "UTF-16le"
        case 3: "UTF-16be"
        default: nil
        }
    }

    /// Parses the first 100 bytes of `data` (longer input, such as a whole file, is fine).
    ///
    /// - Throws: `DatabaseHeaderError` when the input is too short, lacks the
    ///   SQLite magic or names an impossible page size.
    public init(data: Data) throws(DatabaseHeaderError) {
        guard let reader = ByteReader(data, length: Self.length) else {
            throw .tooShort(length: data.count)
        }
        guard reader.slice(0..<16).elementsEqual(Self.magic) else { throw .notSQLite }

        let rawPageSize = reader.uint16BE(at: 16)
        guard let pageSize = Self.pageSize(fromRaw: rawPageSize) else {
            throw .invalidPageSize(raw: rawPageSize)
        }
        self.pageSize = pageSize
        writeVersion = reader.uint8(at: 18)
        readVersion = reader.uint8(at: 19)
        reservedBytesPerPage = reader.uint8(at: 20)
        fileChangeCounter = reader.uint32BE(at: 24)
        pageCount = reader.uint32BE(at: 28)
        firstFreelistTrunk = reader.uint32BE(at: 32)
        freelistPageCount = reader.uint32BE(at: 36)
        schemaCookie = reader.uint32BE(at: 40)
        schemaFormat = reader.uint32BE(at: 44)
        largestRootPage = reader.uint32BE(at: 52)
        textEncoding = reader.uint32BE(at: 56)
        userVersion = reader.uint32BE(at: 60)
        incrementalVacuumFlag = reader.uint32BE(at: 64)
        applicationID = reader.uint32BE(at: 68)
        versionValidFor = reader.uint32BE(at: 92)
        sqliteVersionNumber = reader.uint32BE(at: 96)
    }

    /// Whether `prefix` starts with the SQLite magic string; a cheap sniff
    /// for deciding which files in an archive are databases.
    public static func isSQLite(_ prefix: Data) -> Bool {
        prefix.count >= magic.count && prefix.prefix(magic.count).elementsEqual(magic)
    }

    /// The page size a raw header value stands for, or nil when SQLite would reject it.
    static func pageSize(fromRaw raw: UInt16) -> Int? {
        if raw == 1 { return 65536 }
        let size = Int(raw)
        guard size >= 512, size <= 32768, size & (size - 1) == 0 else { return nil }
        return size
    }
}

/// Why bytes could not be read as a SQLite database header.
public enum DatabaseHeaderError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Fewer than 100 bytes were available.
    case tooShort(length: Int)
    /// The bytes do not start with `"SQLite format 3\0"`.
    case notSQLite
    /// The page size field (offset 16) is not 1 or a power of two in 512...32768.
    case invalidPageSize(raw: UInt16)

    public var description: String {
        switch self {
        case .tooShort(let length):
            "The file is \(length) bytes long, shorter than the 100-byte SQLite header."
        case .notSQLite:
            "The file does not start with the SQLite magic string \"SQLite format 3\", so it is not a SQLite database."
        case .invalidPageSize(let raw):
            "The SQLite header gives page size \(raw), which is not a power of two between 512 and 65536."
        }
    }
}
