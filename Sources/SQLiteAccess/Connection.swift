import CEvidenceVFS
import CSQLite
import Foundation

/// A connection to one SQLite database: a file, or an image held in memory.
///
/// Connections are used from one thread at a time; they are deliberately not `Sendable`.
public final class Connection {
    let handle: OpaquePointer
    /// The file this connection reads, or a description of an in-memory image. Used in errors.
    public let path: String
    /// The SQL functions defined on this connection (`defineAggregate`), each once.
    var definedFunctions: Set<String> = []

    /// How to open a file.
    public enum Mode: Sendable {
        /// `SQLITE_OPEN_READONLY`. Note: on a WAL database in a writable folder SQLite still
        /// creates or rewrites `-shm`; use it only on copies.
        case readOnly
        /// `SQLITE_OPEN_READWRITE`: needed to roll back a hot journal, and for writing copies.
        case readWrite
        /// `SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE`: for the store builder and repairs.
        case create

        var flags: Int32 {
            switch self {
            case .readOnly: return SQLITE_OPEN_READONLY
            case .readWrite: return SQLITE_OPEN_READWRITE
            case .create: return SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE
            }
        }
    }

    private init(handle: OpaquePointer, path: String) {
        self.handle = handle
        self.path = path
    }

    /// Opens the file at `path`. Closing happens on deinit.
    public static func open(path: String, mode: Mode) throws(SQLiteError) -> Connection {
        try open(path: path, mode: mode, label: nil)
    }

    /// Opens the file at `path`, as above.
    ///
    /// - Parameter label: how errors name the database, when not by `path`: a working copy is
    ///   named by the original it was copied from, never by its scratch path (gone by the time
    ///   the user reads the message).
    public static func open(path: String, mode: Mode, label: String?) throws(SQLiteError) -> Connection {
        // URIs on, so that any connection can attach evidence through the read-only VFS
        // (`attachEvidence` names it in a `file:` URI; without them that URI would be a file name).
        try open(filename: plainPath(path), flags: mode.flags | SQLITE_OPEN_URI, label: label ?? path)
    }

    /// `path` as SQLite must read it with URIs on: a relative path that begins with `file:` is
    /// written `./file:…`, so it stays a path.
    static func plainPath(_ path: String) -> String {
        path.hasPrefix("file:") ? "./" + path : path
    }

    /// Which view of a store family the evidence VFS shows.
    public enum EvidenceView: Sendable {
        /// The main file with its `-wal` applied, as the app saw it.
        case walApplied
        /// The main file alone: the `-wal` is never opened.
        case mainFileOnly

        /// The VFS that shows this view (registered by `CEvidenceVFS`).
        var vfsName: String { self == .walApplied ? "storelens-evidence" : "storelens-evidence-nowal" }
    }

    /// Opens the store at `path` where it lies, through storelens' read-only VFS (`CEvidenceVFS`):
    /// the main file and `-wal` are opened `O_RDONLY`, the wal-index lives in this process's
    /// memory (the `-shm` is never opened or created), locks never touch the files, and any write,
    /// truncate, sync or delete SQLite asks for is refused (`evidenceWritesRefused`). Nothing
    /// SQLite does through this connection can change the evidence.
    public static func openEvidence(path: String, view: EvidenceView, label: String?) throws(SQLiteError) -> Connection {
        let registered = storelens_evidence_vfs_register()
        guard registered == SQLITE_OK else {
            throw SQLiteError(extendedCode: registered, message: "storelens' read-only VFS could not be registered", path: label ?? path)
        }
        // URIs on, so that this connection can attach more evidence through the VFS (`attachEvidence`).
        return try open(filename: plainPath(path), flags: SQLITE_OPEN_READONLY | SQLITE_OPEN_NOFOLLOW | SQLITE_OPEN_URI, label: label ?? path,
                        vfs: view.vfsName)
    }

    /// Writes SQLite asked of the evidence VFS and was refused, since the process started.
    public static var evidenceWritesRefused: Int64 { Int64(storelens_evidence_vfs_refused()) }

    /// Files the evidence VFS opened since the process started.
    public static var evidenceFilesOpened: Int64 { Int64(storelens_evidence_vfs_opened()) }

    /// Both counts for the calling thread alone: SQLite calls the VFS on the thread that runs the
    /// statement, so a test reads its own connections' counts while other tests run beside it.
    public static var evidenceWritesRefusedOnThisThread: Int64 { Int64(storelens_evidence_vfs_refused_on_this_thread()) }
    public static var evidenceFilesOpenedOnThisThread: Int64 { Int64(storelens_evidence_vfs_opened_on_this_thread()) }

    /// `sqlite3_open_v2` of `filename` (a path or a `file:` URI) with `flags`, hardened.
    private static func open(filename: String, flags: Int32, label: String, vfs: String? = nil) throws(SQLiteError) -> Connection {
        var db: OpaquePointer?
        let rc = sqlite3_open_v2(filename, &db, flags | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE, vfs)
        guard rc == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(rc))
            // > Whether or not an error occurs when it is opened, resources associated with the
            // > database connection handle should be released by passing it to sqlite3_close().
            if let db { sqlite3_close_v2(db) }
            throw SQLiteError(extendedCode: rc, message: message, path: label)
        }
        let connection = Connection(handle: db, path: label)
        try connection.hardenAgainstHostileSchema()
        if Self.slowStatements != nil { connection.reportSlowStatements() }
        return connection
    }

    /// Where every statement that runs 10 ms or more is told, with its time (`sql-seconds=…
    /// sql="…"`), so `make bench` and a profile show which query a command waits for, not only
    /// SQLite's functions. Set once by whoever runs storelens before any connection opens (the
    /// command, when `STORELENS_TIMINGS` asks); nil tells nothing.
    nonisolated(unsafe) public static var slowStatements: (@Sendable (String) -> Void)?

    private func reportSlowStatements() {
        sqlite3_trace_v2(handle, UInt32(SQLITE_TRACE_PROFILE), { _, _, statement, nanoseconds in
            guard let statement, let nanoseconds else { return 0 }
            let ns = nanoseconds.load(as: Int64.self)
            guard ns >= 10_000_000 else { return 0 }
            let sql = sqlite3_sql(OpaquePointer(statement)).map { String(cString: $0) } ?? "?"
            Connection.slowStatements?("sql-seconds=\(Double(ns) / 1e9) sql=\"\(sql.prefix(200).replacingOccurrences(of: "\n", with: " "))\"")
            return 0
        }, nil)
    }

    /// Opens the file at `path` read-only with `immutable=1`: SQLite reads the main file alone,
    /// as a file nothing can change, and never looks at a `-wal`, `-shm` or `-journal` beside it
    /// (none is read, created or rolled back). Only for storelens's own copies: on evidence it
    /// would silently hide the WAL. It is the main-file-only view of a working copy without a
    /// second copy of the file (the "checkpointed view" of the field's two-view diff).
    public static func openImmutable(path: String, label: String?) throws(SQLiteError) -> Connection {
        try open(filename: "file:" + URIPath.escaped(path) + "?immutable=1", flags: SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, label: label ?? path)
    }

    /// Opens a database image held in memory (`sqlite3_deserialize`). Nothing on disk is involved,
    /// which is how the main-file-only and point-in-time views are read.
    ///
    /// The image must be in rollback mode (header bytes 18/19 = 1): memdb has no WAL.
    public static func deserialize(_ image: Data, name: String, readOnly: Bool = true) throws(SQLiteError) -> Connection {
        var db: OpaquePointer?
        let rc = sqlite3_open_v2(":memory:", &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE, nil)
        guard rc == SQLITE_OK, let db else {
            if let db { sqlite3_close_v2(db) }
            throw SQLiteError(extendedCode: rc, message: "cannot open an in-memory database", path: name)
        }
        let connection = Connection(handle: db, path: name)
        let size = image.count
        guard let buffer = sqlite3_malloc64(sqlite3_uint64(max(size, 1))) else {
            throw SQLiteError(extendedCode: SQLITE_NOMEM, message: "out of memory for a \(size)-byte image", path: name)
        }
        image.withUnsafeBytes { raw in
            if let base = raw.baseAddress { buffer.copyMemory(from: base, byteCount: size) }
        }
        var flags = UInt32(SQLITE_DESERIALIZE_FREEONCLOSE)
        flags |= readOnly ? UInt32(SQLITE_DESERIALIZE_READONLY) : UInt32(SQLITE_DESERIALIZE_RESIZEABLE)
        // > SQLITE_DESERIALIZE_FREEONCLOSE: SQLite takes ownership of the buffer, even on failure.
        let drc = sqlite3_deserialize(db, "main", buffer.assumingMemoryBound(to: UInt8.self),
                                      sqlite3_int64(size), sqlite3_int64(size), flags)
        guard drc == SQLITE_OK else { throw connection.error(code: drc, sql: nil) }
        try connection.hardenAgainstHostileSchema()
        return connection
    }

    deinit {
        sqlite3_close_v2(handle)
    }

    // MARK: - Configuration

    /// Views and triggers in a pulled store are untrusted code: defensive mode blocks writes to
    /// the schema and shadow tables, and `trusted_schema=OFF` stops schema objects from calling
    /// functions with side effects.
    private func hardenAgainstHostileSchema() throws(SQLiteError) {
        try config(SQLITE_DBCONFIG_DEFENSIVE, 1)
        try config(SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0)
    }

    /// Calls `sqlite3_db_config(op, value)` through the shim (the C function is variadic).
    public func config(_ op: Int32, _ value: Int32) throws(SQLiteError) {
        let rc = storelens_sqlite3_db_config_int(handle, op, value)
        guard rc == SQLITE_OK else { throw error(code: rc, sql: nil) }
    }

    /// Keeps the WAL of a working copy on close: without this, closing the last connection
    /// checkpoints the WAL into the main file and deletes it (`query_only` does not prevent it).
    public func disableCheckpointOnClose() throws(SQLiteError) {
        try config(SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1)
    }

    /// Stops triggers from firing on this connection's writes. Triggers in a pulled store are code
    /// from the device: a repair must change exactly the rows its plan names, nothing a trigger adds.
    public func disableTriggers() throws(SQLiteError) {
        try config(SQLITE_DBCONFIG_ENABLE_TRIGGER, 0)
    }

    /// Refuses any write from this connection's own SQL.
    public func makeQueryOnly() throws(SQLiteError) {
        try execute("PRAGMA query_only = 1")
    }

    // MARK: - Running SQL

    public func prepare(_ sql: String) throws(SQLiteError) -> Statement {
        try Statement(connection: self, sql: sql)
    }

    /// Runs one or more statements that return no rows.
    public func execute(_ sql: String) throws(SQLiteError) {
        var errmsg: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(handle, sql, nil, nil, &errmsg)
        if let errmsg { sqlite3_free(errmsg) }
        guard rc == SQLITE_OK else { throw error(code: rc, sql: sql) }
    }

    /// Runs one statement with bound arguments, returning every row.
    public func rows(_ sql: String, _ arguments: [DatabaseValue] = []) throws(SQLiteError) -> [Row] {
        let statement = try prepare(sql)
        try statement.bind(arguments)
        var result: [Row] = []
        while let row = try statement.step() { result.append(row) }
        return result
    }

    /// Runs one statement and returns the first column of the first row, or `.null`.
    public func scalar(_ sql: String, _ arguments: [DatabaseValue] = []) throws(SQLiteError) -> DatabaseValue {
        let statement = try prepare(sql)
        try statement.bind(arguments)
        return try statement.step()?[0] ?? .null
    }

    /// Runs a statement that writes, with bound arguments.
    public func run(_ sql: String, _ arguments: [DatabaseValue] = []) throws(SQLiteError) {
        let statement = try prepare(sql)
        try statement.bind(arguments)
        while try statement.step() != nil {}
    }

    public var lastInsertedRowID: Int64 { sqlite3_last_insert_rowid(handle) }

    /// Rows changed by the most recent INSERT, UPDATE or DELETE.
    public var changes: Int64 { sqlite3_changes64(handle) }

    /// Runs `body` inside a transaction, committing on success and rolling back on error.
    public func inTransaction<T>(_ body: () throws -> T) throws -> T {
        try execute("BEGIN IMMEDIATE")
        do {
            let value = try body()
            try execute("COMMIT")
            return value
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    // MARK: - Errors

    func error(code: Int32, sql: String?) -> SQLiteError {
        let extended = sqlite3_extended_errcode(handle)
        let message = String(cString: sqlite3_errmsg(handle))
        return SQLiteError(extendedCode: extended != 0 ? extended : code, message: message, sql: sql, path: path)
    }

    /// The SQLite library version, e.g. "3.40.1".
    public static var libraryVersion: String { String(cString: sqlite3_libversion()) }
}
