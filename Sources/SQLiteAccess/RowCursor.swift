import CSQLite
import Foundation

/// The current row of a statement being stepped, read column by column without building a
/// `Row`: for readers that turn millions of rows straight into output bytes (`rows --format
/// jsonl`), where an array of boxed values per row costs more than SQLite's own work.
///
/// Valid only inside the `Statement.forEachCursor` body that received it; the byte views it
/// hands out are valid until the next call on the same column or the next step.
public struct RowCursor {
    let handle: OpaquePointer

    /// SQLite's storage class of column `i` in this row.
    public enum StorageClass: Sendable {
        case null, integer, real, text, blob
    }

    public func storageClass(_ i: Int32) -> StorageClass {
        switch sqlite3_column_type(handle, i) {
        case SQLITE_INTEGER: return .integer
        case SQLITE_FLOAT: return .real
        case SQLITE_TEXT: return .text
        case SQLITE_BLOB: return .blob
        default: return .null
        }
    }

    public func int64(_ i: Int32) -> Int64 { sqlite3_column_int64(handle, i) }
    public func double(_ i: Int32) -> Double { sqlite3_column_double(handle, i) }

    /// A text column's UTF-8 bytes as stored (not validated), without a terminator.
    public func textBytes(_ i: Int32) -> UnsafeBufferPointer<UInt8> {
        guard let p = sqlite3_column_text(handle, i) else { return UnsafeBufferPointer(start: nil, count: 0) }
        return UnsafeBufferPointer(start: p, count: Int(sqlite3_column_bytes(handle, i)))
    }

    /// A blob column's bytes.
    public func blobBytes(_ i: Int32) -> UnsafeRawBufferPointer {
        let n = Int(sqlite3_column_bytes(handle, i))
        guard n > 0, let p = sqlite3_column_blob(handle, i) else { return UnsafeRawBufferPointer(start: nil, count: 0) }
        return UnsafeRawBufferPointer(start: p, count: n)
    }

    /// Column `i` as the value `Statement.step` would give (out-of-range columns are NULL, as `Row`'s subscript).
    public func value(_ i: Int) -> DatabaseValue {
        guard i >= 0, i < Int(sqlite3_column_count(handle)) else { return .null }
        return Statement.value(handle, at: Int32(i))
    }
}

extension Statement {
    /// Steps to the end, handing `body` a cursor on each row instead of a `Row`.
    public func forEachCursor(_ body: (RowCursor) throws -> Void) throws {
        let cursor = RowCursor(handle: handle)
        while true {
            let rc = sqlite3_step(handle)
            if rc == SQLITE_DONE { return }
            guard rc == SQLITE_ROW else { throw connection.error(code: rc, sql: sql) }
            try body(cursor)
        }
    }
}
