import CSQLite

/// An error reported by SQLite, with the evidence needed to act on it: the extended result
/// code, SQLite's message, the statement that failed and the file it ran against.
///
/// Bound values are never part of the description: they come from a user's device.
public struct SQLiteError: Error, Equatable, CustomStringConvertible, Sendable {
    /// The extended result code (for example 11 SQLITE_CORRUPT, 26 SQLITE_NOTADB).
    public let extendedCode: Int32
    /// SQLite's own message (`sqlite3_errmsg`).
    public let message: String
    /// The SQL being prepared or stepped, if any.
    public let sql: String?
    /// The database file, or a description such as "in-memory image of X".
    public let path: String?

    public init(extendedCode: Int32, message: String, sql: String? = nil, path: String? = nil) {
        self.extendedCode = extendedCode
        self.message = message
        self.sql = sql
        self.path = path
    }

    /// The primary result code: the low byte of the extended code.
    public var primaryCode: Int32 { extendedCode & 0xFF }

    public var isCorrupt: Bool { primaryCode == SQLITE_CORRUPT }
    public var isNotADatabase: Bool { primaryCode == SQLITE_NOTADB }
    /// A failure of the storage under a file storelens writes (full, I/O, permission, memory, a
    /// size SQLite cannot take), as opposed to a statement SQLite refused.
    public var isStorageFailure: Bool {
        [SQLITE_FULL, SQLITE_IOERR, SQLITE_CANTOPEN, SQLITE_READONLY, SQLITE_PERM, SQLITE_NOMEM, SQLITE_TOOBIG, SQLITE_NOLFS].contains(primaryCode)
    }
    /// The file's header names a schema format or text encoding SQLite does not know: a fact
    /// about the input, like corruption (SQLite reports it as a plain SQLITE_ERROR).
    public var isUnsupportedFileFormat: Bool { primaryCode == SQLITE_ERROR && message.hasPrefix("unsupported file format") }

    public var description: String {
        var text = "SQLite error \(extendedCode): \(message)"
        if let sql { text += " - while executing `\(sql)`" }
        if let path { text += " (\(path))" }
        return text
    }

    /// The same error, attributed to `path` (for example the original of a working copy).
    public func with(path: String?) -> SQLiteError {
        SQLiteError(extendedCode: extendedCode, message: message, sql: sql, path: path)
    }
}
