import Foundation
import SQLiteAccess
import StoreFormats

/// A stored text or blob longer than `LongValue.window`, left in the store: its length and where
/// it is, so a writer can read it in pieces and memory stays bound by the output, not by one
/// value (a 500 MB string in one row once cost `rows` 5.9 GB).
public struct LongValue: @unchecked Sendable {
    /// Values up to this many bytes are read whole, as SQLite gives them; longer ones are read
    /// through `sqlite3_blob_open` in pieces of this size.
    public static let window = 1 << 20
    /// How much of a long text is read for a one-line rendering (a table cell, an inline value).
    public static let prefixLength = 64 << 10

    public let isText: Bool
    /// The stored length in bytes.
    public let byteCount: Int
    let table: String
    let column: String
    let rowid: Int64
    // Connections are used from one thread at a time; a long value is read on the thread that
    // read its row, while that connection is still open (the writers stream it right away).
    let connection: Connection

    init(isText: Bool, byteCount: Int, table: String, column: String, rowid: Int64, connection: Connection) {
        self.isText = isText
        self.byteCount = byteCount
        self.table = table
        self.column = column
        self.rowid = rowid
        self.connection = connection
    }

    /// The first `count` stored bytes.
    public func head(_ count: Int) throws -> [UInt8] {
        try connection.storedValue(table: table, column: column, rowid: rowid).bytes(0 ..< min(count, byteCount))
    }

    /// The stored bytes in pieces of at most `window` bytes, in order.
    public func forEachPiece(_ body: ([UInt8]) throws -> Void) throws {
        let reader = try connection.storedValue(table: table, column: column, rowid: rowid)
        var offset = 0
        while offset < reader.count {
            let end = min(reader.count, offset + Self.window)
            try body(try reader.bytes(offset ..< end))
            offset = end
        }
    }
}

/// A text value longer than `LongValue.window`, as `FieldValue.longText` carries it: read from
/// the store in pieces while its source is there; a version `recover` kept aside holds only its
/// summary (length, SHA-256, first characters).
public final class LongText: @unchecked Sendable {
    /// Where the text is; nil for a summary kept aside.
    public let stored: LongValue?
    /// The stored length in bytes.
    public let byteCount: Int
    /// The first `LongValue.prefixLength` bytes (cut before an unfinished character), decoded.
    public let prefix: String
    private let lock = NSLock()
    private var cachedFingerprint: (count: Int, sha256: String)?

    init(_ stored: LongValue) throws {
        self.stored = stored
        byteCount = stored.byteCount
        var head = try stored.head(LongValue.prefixLength)
        head.removeLast(UTF8Pieces.unfinished(head))
        prefix = String(decoding: head, as: UTF8.self)
    }

    /// A summary of a long text, without its source.
    public init(byteCount: Int, prefix: String, fingerprint: (count: Int, sha256: String)) {
        stored = nil
        self.byteCount = byteCount
        self.prefix = prefix
        cachedFingerprint = fingerprint
    }

    /// The text in pieces of at most about `LongValue.window` bytes, each decoded as the whole
    /// would be (`String(decoding:as:)`: U+FFFD for each invalid sequence): a character split
    /// between two pieces is held back and decoded with the next.
    public func forEachPiece(_ body: (String) throws -> Void) throws {
        guard let stored else { throw LongTextUnavailable(byteCount: byteCount) }
        var carry: [UInt8] = []
        try stored.forEachPiece { piece in
            var bytes = carry + piece
            let held = UTF8Pieces.unfinished(bytes)
            carry = Array(bytes.suffix(held))
            bytes.removeLast(held)
            try body(String(decoding: bytes, as: UTF8.self))
        }
        if !carry.isEmpty { try body(String(decoding: carry, as: UTF8.self)) }
    }

    /// The byte length and SHA-256 (hex) of the decoded text's UTF-8: what tells two long texts
    /// apart without holding either (read once, then kept). Nil when the store cannot be read.
    public var fingerprint: (count: Int, sha256: String)? {
        lock.lock()
        defer { lock.unlock() }
        if let cachedFingerprint { return cachedFingerprint }
        var hash = SHA256()
        var count = 0
        do {
            try forEachPiece { piece in
                count += piece.utf8.count
                hash.update(Array(piece.utf8))
            }
        } catch { return nil }
        cachedFingerprint = (count, ValueDecoder.hex(hash.finalize()))
        return cachedFingerprint
    }
}

/// A long text's summary was asked for its whole text: a caller's mistake, said plainly.
public struct LongTextUnavailable: Error, CustomStringConvertible {
    public let byteCount: Int
    public init(byteCount: Int) { self.byteCount = byteCount }
    public var description: String {
        "a text of \(byteCount) bytes was kept as its summary only and cannot be written whole; read it with `rows` or `export`."
    }
}

enum UTF8Pieces {
    /// How many bytes at the end of `bytes` may start a character the next bytes finish: from the
    /// last lead byte among the final three, when its sequence is not complete. Cutting there
    /// decodes both sides exactly as the whole decodes (an invalid sequence never spans a lead byte).
    static func unfinished(_ bytes: [UInt8]) -> Int {
        guard !bytes.isEmpty else { return 0 }
        for back in 1 ... min(3, bytes.count) {
            let b = bytes[bytes.count - back]
            if b < 0x80 { return 0 }
            if b >= 0xC0 {
                let length = b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : 2
                return length > back ? back : 0
            }
        }
        return 0
    }
}

extension ValueDecoder {
    /// What `decode(_:as:)` gives for a value left in the store because it is long: a text is
    /// `.longText` whatever the attribute (every type's decoding of such a text is that text, or a
    /// decimal printed the same); bytes are summarised from their head and length, as
    /// `decodeBytes` summarises them, and a transformable up to the archive reader's limit is
    /// read whole and decoded as before.
    func decodeLong(_ stored: LongValue, as attribute: ModelAttribute) throws -> FieldValue {
        if stored.isText { return .longText(try LongText(stored)) }
        let bytesType = [.binary, .transformable, .objectID].contains(attribute.type) || attribute.isTransformable
        guard bytesType else {
            let head = try stored.head(BinaryValue.prefixLength)
            return .binary(BinaryValue(size: stored.byteCount, prefixHex: Self.hex(head), storage: .plain))
        }
        if attribute.isTransformable && stored.byteCount <= Self.archiveLimit + 1 {
            return decodeBytes(Data(try stored.head(stored.byteCount)), attribute: attribute)
        }
        let head = Data(try stored.head(129))
        if attribute.allowsExternalBinaryDataStorage, let marker = head.first {
            if marker == 0x01 {
                return .binary(BinaryValue(size: stored.byteCount - 1, prefixHex: Self.hex(head.dropFirst().prefix(BinaryValue.prefixLength)),
                                           storage: .inline))
            } else if marker == 0x02, stored.byteCount <= Self.referenceLimit, let file = external(head.dropFirst()) {
                return .binary(BinaryValue(size: file.size, prefixHex: "", storage: .external(file)))
            }
        }
        return .binary(BinaryValue(size: stored.byteCount, prefixHex: Self.hex(head.prefix(BinaryValue.prefixLength)), storage: .plain))
    }
}
