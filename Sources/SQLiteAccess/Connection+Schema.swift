/// Schema questions asked of `sqlite_master`, with names always bound or quoted.
extension Connection {
    /// One object in `sqlite_master`.
    public struct SchemaObject: Equatable, Sendable {
        public let type: String
        public let name: String
        public let tableName: String
        public let sql: String?
    }

    /// Every object in `sqlite_master`, in the order SQLite stores them (creation order).
    public func schemaObjects() throws(SQLiteError) -> [SchemaObject] {
        try rows("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY rowid").map {
            SchemaObject(type: $0[0].string ?? "", name: $0[1].string ?? "",
                         tableName: $0[2].string ?? "", sql: $0[3].string)
        }
    }

    /// The names of all tables (not views, not indexes).
    public func tableNames() throws(SQLiteError) -> [String] {
        try rows("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY rowid").compactMap { $0[0].string }
    }

    public func tableExists(_ name: String) throws(SQLiteError) -> Bool {
        try scalar("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?", [.text(name)]).int64 ?? 0 > 0
    }

    /// One column, as `PRAGMA table_info` reports it.
    public struct Column: Equatable, Sendable {
        public let name: String
        public let declaredType: String
        public let isPrimaryKey: Bool
    }

    /// The columns of `table`, through the table-valued `pragma_table_info` so the name is bound.
    public func columns(of table: String) throws(SQLiteError) -> [Column] {
        try rows("SELECT name, type, pk FROM pragma_table_info(?)", [.text(table)]).map {
            Column(name: $0[0].string ?? "", declaredType: $0[1].string ?? "", isPrimaryKey: ($0[2].int64 ?? 0) != 0)
        }
    }

    /// What identifies a row of `table`, for ordering and for picking rows out: `["rowid"]`, or for
    /// a `WITHOUT ROWID` table (which has no rowid; a hand-made store can have one) its primary key
    /// columns, in key order.
    public func rowKey(of table: String) throws(SQLiteError) -> [String] {
        let q = Identifier.quoted(table)
        if (try? prepare("SELECT rowid FROM \(q) LIMIT 0")) != nil { return ["rowid"] }
        let key = try rows("SELECT name FROM pragma_table_info(?) WHERE pk > 0 ORDER BY pk", [.text(table)]).compactMap { $0[0].string }
        return key.isEmpty ? ["rowid"] : key
    }

    /// `PRAGMA journal_mode` as SQLite reports it ("wal", "delete", "memory" …).
    public func journalMode() throws(SQLiteError) -> String {
        try scalar("PRAGMA journal_mode").string ?? "unknown"
    }

    public func pageSize() throws(SQLiteError) -> Int {
        try scalar("PRAGMA page_size").int ?? 0
    }

    /// `PRAGMA quick_check` (or `integrity_check` when `full`): the list of problems, or ["ok"].
    public func integrityCheck(full: Bool = false, maxErrors: Int = 100) throws(SQLiteError) -> [String] {
        let pragma = full ? "integrity_check" : "quick_check"
        return try rows("PRAGMA \(pragma)(\(max(1, maxErrors)))").compactMap { $0[0].string }
    }
}
