import CSQLite
import Foundation

extension SQLiteError {
    /// SQLITE_TOOBIG: a value longer than the connection's length limit was met.
    public var isTooBig: Bool { primaryCode == SQLITE_TOOBIG }
}

extension Connection {
    /// Runs `body` with SQLite's length limit (`SQLITE_LIMIT_LENGTH`) at `bytes`, then puts the
    /// old limit back. A statement stepping onto a longer value then fails with SQLITE_TOOBIG
    /// before SQLite reads the value into memory, instead of holding all of it.
    public func withLengthLimit<T>(_ bytes: Int, _ body: () throws -> T) rethrows -> T {
        let old = sqlite3_limit(handle, SQLITE_LIMIT_LENGTH, Int32(clamping: bytes))
        defer { sqlite3_limit(handle, SQLITE_LIMIT_LENGTH, old) }
        return try body()
    }

    /// Opens one stored text or blob value (table, column, rowid) for reading in pieces
    /// (`sqlite3_blob_open`, read-only): its length is known without reading it.
    /// - Parameter writable: open it for `StoredValueReader.write` (the value's length stays).
    /// - Parameter schema: the attached database holding the table.
    public func storedValue(table: String, column: String, rowid: Int64, writable: Bool = false,
                            schema: String = "main") throws(SQLiteError) -> StoredValueReader {
        var blob: OpaquePointer?
        let rc = sqlite3_blob_open(handle, schema, table, column, rowid, writable ? 1 : 0, &blob)
        guard rc == SQLITE_OK, let blob else {
            let error = self.error(code: rc, sql: nil)
            if let blob { sqlite3_blob_close(blob) }
            throw error
        }
        return StoredValueReader(blob: blob, connection: self)
    }
}

/// One stored value read in pieces, never whole: the handle `sqlite3_blob_open` gives.
public final class StoredValueReader {
    let blob: OpaquePointer
    let connection: Connection
    /// The value's length in bytes.
    public let count: Int

    init(blob: OpaquePointer, connection: Connection) {
        self.blob = blob
        self.connection = connection
        count = Int(sqlite3_blob_bytes(blob))
    }

    deinit { sqlite3_blob_close(blob) }

    /// Reads `buffer.count` bytes from `offset` into `buffer` (the caller keeps within `count`).
    public func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int) throws(SQLiteError) {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return }
        let rc = sqlite3_blob_read(blob, base, Int32(clamping: buffer.count), Int32(clamping: offset))
        guard rc == SQLITE_OK else { throw connection.error(code: rc, sql: nil) }
    }

    /// Overwrites bytes from `offset` with `bytes` (opened `writable`, within `count`).
    public func write(_ bytes: [UInt8], at offset: Int) throws(SQLiteError) {
        guard !bytes.isEmpty else { return }
        let rc = bytes.withUnsafeBytes { sqlite3_blob_write(blob, $0.baseAddress, Int32(clamping: $0.count), Int32(clamping: offset)) }
        guard rc == SQLITE_OK else { throw connection.error(code: rc, sql: nil) }
    }

    /// Reads bytes `range` into a new array.
    public func bytes(_ range: Range<Int>) throws(SQLiteError) -> [UInt8] {
        let range = range.clamped(to: 0 ..< count)
        var out = [UInt8](repeating: 0, count: range.count)
        var failure: SQLiteError?
        out.withUnsafeMutableBytes { buffer in
            do throws(SQLiteError) { try read(into: buffer, at: range.lowerBound) } catch { failure = error }
        }
        if let failure { throw failure }
        return out
    }
}
