import CSQLite
import Foundation

extension Connection {
    /// Attaches a database image held in memory as schema `schema`, read-only
    /// (`ATTACH ':memory:'` then `sqlite3_deserialize` into it), so two
    /// images can be compared with one SQL statement.
    ///
    /// Like `deserialize`, the image must be in rollback mode (header bytes 18/19 = 1).
    public func attachImage(_ image: Data, as schema: String) throws(SQLiteError) {
        try execute("ATTACH DATABASE ':memory:' AS \(Identifier.quoted(schema))")
        let size = image.count
        guard let buffer = sqlite3_malloc64(sqlite3_uint64(max(size, 1))) else {
            throw SQLiteError(extendedCode: SQLITE_NOMEM, message: "out of memory for a \(size)-byte image", path: path)
        }
        image.withUnsafeBytes { raw in
            if let base = raw.baseAddress { buffer.copyMemory(from: base, byteCount: size) }
        }
        let flags = UInt32(SQLITE_DESERIALIZE_FREEONCLOSE) | UInt32(SQLITE_DESERIALIZE_READONLY)
        // > SQLITE_DESERIALIZE_FREEONCLOSE: SQLite takes ownership of the buffer, even on failure.
        let rc = sqlite3_deserialize(handle, schema, buffer.assumingMemoryBound(to: UInt8.self),
                                     sqlite3_int64(size), sqlite3_int64(size), flags)
        guard rc == SQLITE_OK else { throw error(code: rc, sql: nil) }
    }

    /// Attaches the store family at `path` as schema `schema` through the read-only evidence VFS
    /// (named in a `file:` URI, which every connection reads: `Connection.open` and `openEvidence`
    /// turn URIs on), so the attached family is read where it lies and nothing can be written to
    /// it, its `-shm` included.
    public func attachEvidence(_ path: String, view: EvidenceView, as schema: String) throws(SQLiteError) {
        let uri = "file:" + URIPath.escaped(path) + "?mode=ro&vfs=" + view.vfsName
        try run("ATTACH DATABASE ? AS \(Identifier.quoted(schema))", [.text(uri)])
    }

    /// Attaches the database file at `path` as schema `schema`. It opens with this connection's
    /// flags, so a read-only connection attaches it read-only.
    public func attachFile(_ path: String, as schema: String) throws(SQLiteError) {
        try run("ATTACH DATABASE ? AS \(Identifier.quoted(schema))", [.text(Connection.plainPath(path))])
    }

    /// Attaches storelens' own copy at `path` as schema `schema` with `immutable=1`: the main file
    /// alone, no `-wal` beside it read (`openImmutable`'s view, attached).
    public func attachImmutable(_ path: String, as schema: String) throws(SQLiteError) {
        try run("ATTACH DATABASE ? AS \(Identifier.quoted(schema))", [.text("file:" + URIPath.escaped(path) + "?immutable=1")])
    }
}
