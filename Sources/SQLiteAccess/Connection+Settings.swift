import CSQLite

/// The `sqlite3_db_config` settings storelens relies on, read back from SQLite itself: what a
/// connection actually runs with, not what the code meant to set (docs/safety.md, step 4).
public enum ConnectionSetting: Sendable, CaseIterable, CustomStringConvertible {
    /// SQLITE_DBCONFIG_DEFENSIVE: no writes to the schema, shadow tables or `sqlite_dbpage`.
    case defensive
    /// SQLITE_DBCONFIG_TRUSTED_SCHEMA: views and triggers may call functions with side effects.
    case trustedSchema
    /// SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE: closing the last connection leaves the WAL as it is.
    case noCheckpointOnClose
    /// SQLITE_DBCONFIG_ENABLE_TRIGGER: triggers fire on this connection's writes.
    case triggers

    var code: Int32 {
        switch self {
        case .defensive: return SQLITE_DBCONFIG_DEFENSIVE
        case .trustedSchema: return SQLITE_DBCONFIG_TRUSTED_SCHEMA
        case .noCheckpointOnClose: return SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE
        case .triggers: return SQLITE_DBCONFIG_ENABLE_TRIGGER
        }
    }

    public var description: String {
        switch self {
        case .defensive: return "SQLITE_DBCONFIG_DEFENSIVE"
        case .trustedSchema: return "SQLITE_DBCONFIG_TRUSTED_SCHEMA"
        case .noCheckpointOnClose: return "SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE"
        case .triggers: return "SQLITE_DBCONFIG_ENABLE_TRIGGER"
        }
    }
}

extension Connection {
    /// Whether `setting` is on for this connection, as SQLite reports it.
    public func isOn(_ setting: ConnectionSetting) throws(SQLiteError) -> Bool {
        let value = storelens_sqlite3_db_config_get(handle, setting.code)
        guard value >= 0 else { throw error(code: SQLITE_ERROR, sql: nil) }
        return value != 0
    }

    /// Turns `setting` on or off (the tests' controls: a connection without the hardening, to show
    /// what each setting prevents).
    public func set(_ setting: ConnectionSetting, _ on: Bool) throws(SQLiteError) {
        try config(setting.code, on ? 1 : 0)
    }

    /// Registers `name()` (no arguments, returns 1) as an ordinary application function, not
    /// marked innocuous: what `trusted_schema=OFF` must keep a store's views and triggers from
    /// calling. For the tests that prove the setting works (package access: not part of the
    /// library's public API).
    package func registerProbeFunction(named name: String) throws(SQLiteError) {
        let rc = storelens_sqlite3_register_probe(handle, name)
        guard rc == SQLITE_OK else { throw error(code: rc, sql: nil) }
    }
}
