import Foundation

/// What a store file holds, told by its first bytes: a SQLite database, or one of Core Data's two
/// atomic store types, which keep the whole object graph in one file written at each save.
///
/// - XML (`NSXMLStoreType`, macOS only): `<?xml …?>`, then `<!DOCTYPE database SYSTEM
///   "file:///System/Library/DTDs/CoreData.dtd">` and a `<database>` element. Seen in real
///   `.storedata` files and in tests written against Apple's output in public repositories.
/// - Binary (`NSBinaryStoreType`): a 64-byte big-endian header starting with the ASCII `CoreData`
///   and format 1, followed by two keyed archives (the object map, then the metadata). The
///   layout is inferred from decompiled `NSBinaryObjectStoreFile` (no real binary store file was
///   found to compare with): see `BinaryStoreHeader`.
public enum StoreFileFormat: String, Sendable, Equatable, CaseIterable {
    case sqlite
    case coreDataXML = "coredata-xml"
    case coreDataBinary = "coredata-binary"

    /// The largest XML or binary store storelens reads (whole, into memory), in bytes:
    /// `STORELENS_MAX_ATOMIC_STORE_BYTES`, 256 MiB by default. Checked against the file's size
    /// before a byte of it is copied, hashed or parsed (a sparse file costs nothing to make).
    public static var atomicStoreByteLimit: Int {
        ProcessInfo.processInfo.environment["STORELENS_MAX_ATOMIC_STORE_BYTES"].flatMap(Int.init) ?? 256 << 20
    }

    /// How people name it: "Core Data XML store".
    public var title: String {
        switch self {
        case .sqlite: return "SQLite database"
        case .coreDataXML: return "Core Data XML store"
        case .coreDataBinary: return "Core Data binary store"
        }
    }

    /// `NSStoreType` as Core Data writes it into the metadata.
    public var storeType: String {
        switch self {
        case .sqlite: return "SQLite"
        case .coreDataXML: return "XML"
        case .coreDataBinary: return "Binary"
        }
    }

    /// The atomic format `head` (a file's first bytes, 262 suffice) starts, or nil for anything
    /// else (SQLite included: `DatabaseHeader.isSQLite` answers that).
    public static func atomic(head: Data) -> StoreFileFormat? {
        if BinaryStoreHeader.matches(head) { return .coreDataBinary }
        var bytes = head[...]
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes = bytes.dropFirst(3) }
        while let first = bytes.first, first == 0x20 || first == 0x0A || first == 0x0D || first == 0x09 { bytes = bytes.dropFirst() }
        guard bytes.starts(with: Array("<?xml".utf8)) || bytes.starts(with: Array("<!DOCTYPE database".utf8)) else { return nil }
        let text = String(decoding: bytes, as: UTF8.self)
        return text.contains("<!DOCTYPE database") || text.contains("<database>") ? .coreDataXML : nil
    }
}

/// The 64-byte header of a binary store, all fields big-endian. Inferred from the decompiled
/// writer (`-[NSBinaryObjectStoreFile _writeMetadataData:andMapDataData:toFile:error:]`):
/// `CoreData` (8 bytes), format 1 (UInt32), database version (UInt32, 134481920 for every store
/// written since Mac OS X 10.4), metadata offset and length (UInt64 each), map offset (64) and
/// length, the next primary key, 8 zero bytes. The map (`mapData`) and the metadata (`metadata`)
/// are each an `NSKeyedArchiver` archive.
public struct BinaryStoreHeader: Sendable, Equatable {
    public static let length = 64
    static let magic = Array("CoreData".utf8)

    public let format: UInt32
    public let databaseVersion: UInt32
    public let metadataRange: Range<Int>
    public let mapRange: Range<Int>
    public let nextPrimaryKey: UInt64

    public static func matches(_ head: Data) -> Bool {
        head.count >= 12 && Array(head.prefix(8)) == magic && ByteReader(head, length: 12)?.uint32BE(at: 8) == 1
    }

    /// Reads the header of a file of `fileSize` bytes; nil when it is not one or its ranges fall
    /// outside the file (each stored offset and length is checked before it is added).
    public init?(_ head: Data, fileSize: Int) {
        guard Self.matches(head), let reader = ByteReader(head, length: Self.length) else { return nil }
        func range(_ at: Int) -> Range<Int>? {
            let offset = reader.uint64BE(at: at), length = reader.uint64BE(at: at + 8)
            guard offset <= UInt64(fileSize), length <= UInt64(fileSize) - offset else { return nil }
            return Int(offset)..<Int(offset + length)
        }
        guard let metadata = range(16), let map = range(32) else { return nil }
        format = reader.uint32BE(at: 8)
        databaseVersion = reader.uint32BE(at: 12)
        metadataRange = metadata
        mapRange = map
        nextPrimaryKey = reader.uint64BE(at: 48)
    }
}
