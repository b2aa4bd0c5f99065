import Foundation
import SQLiteAccess
import StoreTestSupport
import Testing

/// The oracle the repair tests hold the output against must itself see every kind of difference.
@Suite("StoreDiff, the repair tests' oracle")
struct StoreDiffTests {
    static func make(_ url: URL, _ statements: [String], walOnly: [String] = []) throws {
        let db = try Connection.open(path: url.path, mode: .create)
        try db.execute("PRAGMA journal_mode = wal")
        for s in statements { try db.execute(s) }
        guard !walOnly.isEmpty else { return }
        try db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        try db.disableCheckpointOnClose()
        for s in walOnly { try db.execute(s) }
    }

    static let schema = [
        "CREATE TABLE t (Z_PK INTEGER PRIMARY KEY, a, b)",
        "CREATE TABLE j (x INTEGER, y INTEGER, PRIMARY KEY (x, y))",
        "CREATE TABLE w (k TEXT PRIMARY KEY, v) WITHOUT ROWID",
        "CREATE TABLE r (v)",
        "INSERT INTO t VALUES (1, 'one', 1), (2, 'two', 2), (3, 'three', NULL)",
        "INSERT INTO j VALUES (1, 2), (3, 4)",
        "INSERT INTO w VALUES ('k1', 1), ('k2', 2)",
        "INSERT INTO r VALUES ('x'), ('y')",
    ]

    @Test("identical stores: no difference; values, storage classes, rows by key, schema and -wal-only commits all count")
    func everyKind() throws {
        let folder = try TemporaryFolder("store-diff-test")
        let a = folder.path("a.db"), b = folder.path("b.db"), c = folder.path("c.db")
        try Self.make(a, Self.schema)
        try Self.make(b, Self.schema)
        let same = try StoreDiff(before: a, after: b)
        #expect(same.changes.isEmpty && same.schemaChanges.isEmpty)

        try Self.make(c, Self.schema, walOnly: [
            "UPDATE t SET b = 1.0 WHERE Z_PK = 1",       // same number, another storage class
            "UPDATE t SET b = 3 WHERE Z_PK = 3",         // NULL to a value
            "DELETE FROM t WHERE Z_PK = 2",
            "DELETE FROM j WHERE x = 3",
            "INSERT INTO j VALUES (5, 6)",
            "UPDATE w SET v = 'two' WHERE k = 'k2'",
            "DELETE FROM r WHERE v = 'y'",
            "CREATE INDEX t_a ON t (a)",
        ])
        #expect(FileManager.default.fileExists(atPath: c.path + "-wal"), "the changes live only in the -wal")
        let inputs = try FolderSnapshot(folder.url)
        let diff = try StoreDiff(before: a, after: c)
        #expect(diff.changes == [
            .changed("t", "1", "b", to: .real(1)), .changed("t", "3", "b", to: .integer(3)), .deleted("t", "2"),
            .deleted("j", "3,4"), .inserted("j", "5,6"), .changed("w", "'k2'", "v", to: .text("two")), .deleted("r", "2"),
        ], "\(diff.listed)")
        #expect(diff.schemaChanges.count == 1 && diff.schemaChanges[0].contains("t_a"), "\(diff.schemaChanges)")
        #expect(try FolderSnapshot(folder.url) == inputs, "the diff reads copies: the inputs and their -wal are left as they were")
    }
}
