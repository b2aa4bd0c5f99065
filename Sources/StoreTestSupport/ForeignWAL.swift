import Foundation
import SQLiteAccess
import StoreBuilder

/// `-wal` files that do not belong to the stores the tests put them beside, each written by
/// SQLite or the store builder itself and copied out while its writer still holds it.
public enum ForeignWAL {
    /// A plain SQLite database's `-wal` (one table `t` of 300 rows, 4096-byte pages, never
    /// checkpointed), copied to `to`.
    public static func plainDatabase(copiedTo to: URL, in folder: URL) throws {
        let plain = folder.appendingPathComponent("plain-\(UUID().uuidString).db")
        let p = try Connection.open(path: plain.path, mode: .create)
        try p.execute("PRAGMA page_size = 4096")
        _ = try p.scalar("PRAGMA journal_mode = wal")
        try p.execute("PRAGMA wal_autocheckpoint = 0")
        try p.execute("CREATE TABLE t(a, b)")
        try p.execute("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 300) INSERT INTO t SELECT i, printf('%.100c', 'x') FROM n")
        try FileManager.default.copyItem(at: URL(fileURLWithPath: plain.path + "-wal"), to: to)
    }

    /// Another to-do store's `-wal` (its own UUID, made in WAL mode and never checkpointed, so its
    /// `-wal` rewrites page 1 and `Z_METADATA`), copied to `to`.
    public static func otherStore(copiedTo to: URL, in folder: URL) throws {
        let other = folder.appendingPathComponent("other-\(UUID().uuidString).store")
        let writer = try StoreWriter(url: other, model: SampleModels.todo, options: .init(journalMode: .wal))
        try writer.transaction { w in _ = try w.insert("TodoList", ["name": .string("Elsewhere")]) }
        try writer.close(leavingWAL: true)
        try FileManager.default.copyItem(at: URL(fileURLWithPath: other.path + "-wal"), to: to)
    }
}
