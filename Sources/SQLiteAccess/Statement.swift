import CSQLite
import Foundation

/// A prepared statement. It owns its `sqlite3_stmt` and finalizes it on deinit.
public final class Statement {
    let handle: OpaquePointer
    public let sql: String
    unowned let connection: Connection

    init(connection: Connection, sql: String) throws(SQLiteError) {
        var stmt: OpaquePointer?
        let rc = sqlite3_prepare_v2(connection.handle, sql, -1, &stmt, nil)
        guard rc == SQLITE_OK, let stmt else {
            if let stmt { sqlite3_finalize(stmt) }
            throw connection.error(code: rc, sql: sql)
        }
        self.handle = stmt
        self.sql = sql
        self.connection = connection
    }

    deinit { sqlite3_finalize(handle) }

    /// Binds values to `?` parameters, in order.
    public func bind(_ values: [DatabaseValue]) throws(SQLiteError) {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
        for (offset, value) in values.enumerated() {
            let index = Int32(offset + 1)
            let rc: Int32
            switch value {
            case .null: rc = sqlite3_bind_null(handle, index)
            case .integer(let v): rc = sqlite3_bind_int64(handle, index, v)
            case .real(let d): rc = sqlite3_bind_double(handle, index, d)
            case .text(let s):
                // Explicit byte length: text from a device may contain NUL characters.
                let bytes = Array(s.utf8)
                rc = bytes.withUnsafeBufferPointer { buffer in
                    buffer.baseAddress.map { base in
                        base.withMemoryRebound(to: CChar.self, capacity: bytes.count) {
                            sqlite3_bind_text64(handle, index, $0, sqlite3_uint64(bytes.count), storelens_sqlite3_transient(), UInt8(SQLITE_UTF8))
                        }
                    } ?? sqlite3_bind_text(handle, index, "", 0, storelens_sqlite3_transient())
                }
            case .blob(let d):
                rc = d.withUnsafeBytes { raw in
                    // A zero-length blob needs a non-null pointer to bind as a blob, not NULL.
                    sqlite3_bind_blob64(handle, index, raw.baseAddress ?? UnsafeRawPointer(bitPattern: 1),
                                        sqlite3_uint64(d.count), storelens_sqlite3_transient())
                }
            }
            guard rc == SQLITE_OK else { throw connection.error(code: rc, sql: sql) }
        }
    }

    public var columnNames: [String] {
        (0..<sqlite3_column_count(handle)).map { String(cString: sqlite3_column_name(handle, $0)) }
    }

    /// Steps once. Returns the row, or nil when the statement is done.
    public func step() throws(SQLiteError) -> Row? {
        let rc = sqlite3_step(handle)
        switch rc {
        case SQLITE_ROW:
            let count = sqlite3_column_count(handle)
            var values: [DatabaseValue] = []
            values.reserveCapacity(Int(count))
            for i in 0..<count { values.append(value(at: i)) }
            return Row(columnNames: columnNames, values: values)
        case SQLITE_DONE:
            return nil
        default:
            throw connection.error(code: rc, sql: sql)
        }
    }

    /// Steps to the end, calling `body` for each row without collecting them.
    public func forEach(_ body: (Row) throws -> Void) throws {
        let names = columnNames
        while true {
            let rc = sqlite3_step(handle)
            if rc == SQLITE_DONE { return }
            guard rc == SQLITE_ROW else { throw connection.error(code: rc, sql: sql) }
            let count = sqlite3_column_count(handle)
            var values: [DatabaseValue] = []
            values.reserveCapacity(Int(count))
            for i in 0..<count { values.append(value(at: i)) }
            try body(Row(columnNames: names, values: values))
        }
    }

    func value(at i: Int32) -> DatabaseValue { Self.value(handle, at: i) }

    static func value(_ handle: OpaquePointer, at i: Int32) -> DatabaseValue {
        switch sqlite3_column_type(handle, i) {
        case SQLITE_INTEGER: return .integer(sqlite3_column_int64(handle, i))
        case SQLITE_FLOAT: return .real(sqlite3_column_double(handle, i))
        case SQLITE_TEXT:
            guard let p = sqlite3_column_text(handle, i) else { return .text("") }
            let n = Int(sqlite3_column_bytes(handle, i))
            let bytes = UnsafeBufferPointer(start: p, count: n)
            // Text from a device may not be valid UTF-8; decode with replacement rather than fail.
            return .text(String(decoding: bytes, as: UTF8.self))
        case SQLITE_BLOB:
            let n = Int(sqlite3_column_bytes(handle, i))
            guard n > 0, let p = sqlite3_column_blob(handle, i) else { return .blob(Data()) }
            return .blob(Data(bytes: p, count: n))
        default: return .null
        }
    }
}
