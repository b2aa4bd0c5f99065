import CoreDataStore
import Foundation
import SQLiteAccess
import StoreFormats
import StoreTestSupport
import Testing

/// The quick check `inspect` and `wal` run on the tables a `-wal` changed: it may say "agrees" only
/// where SQLite's own `integrity_check(T)` says ok, and must not say it where SQLite finds the
/// indexes behind the table on the `-wal`'s pages. The damage is made by SQLite itself: the index
/// is hidden as a partial index `WHERE 0` while rows change, so SQLite leaves its entries alone.
@Suite("the -wal's pages against SQLite's integrity_check")
struct WALPageAgreementTests {
    /// A rowid table with three indexes, checkpointed into the main file, then `changes` written
    /// into a `-wal` that is kept (no checkpoint on close). Returns the main file's path; the
    /// first connection stays open until then, so the -wal is never checkpointed.
    static func store(in folder: TemporaryFolder, changes: [String]) throws -> String {
        let path = folder.path("wal-\(UUID().uuidString).sqlite").path
        let db = try Connection.open(path: path, mode: .create)
        try db.set(.noCheckpointOnClose, true)
        try db.set(.defensive, false)
        try db.execute("PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0")
        try db.execute("""
            CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, score REAL, owner INTEGER);
            CREATE INDEX t_name ON t(name);
            CREATE INDEX t_owner_score ON t(owner, score);
            CREATE UNIQUE INDEX t_unique ON t(owner, name);
            CREATE TABLE other(id INTEGER PRIMARY KEY, note TEXT);
            CREATE INDEX other_note ON other(note);
            """)
        try db.execute("BEGIN")
        for i in 1...3000 {
            try db.run("INSERT INTO t VALUES (?, ?, ?, ?)", [.integer(Int64(i)), .text("name \(i) " + String(repeating: "x", count: i % 60)),
                                                             i % 4 == 0 ? .null : .real(Double(i % 100)), .integer(Int64(i % 37))])
            if i % 3 == 0 { try db.run("INSERT INTO other VALUES (?, ?)", [.integer(Int64(i)), .text("note \(i)")]) }
        }
        try db.execute("COMMIT")
        try db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        // Each change on a connection of its own: one opened after a schema edit reads the edited
        // schema (a connection keeps the schema it read first).
        for change in changes {
            let writer = try Connection.open(path: path, mode: .readWrite)
            try writer.set(.noCheckpointOnClose, true)
            try writer.set(.defensive, false)
            try writer.execute(change)
        }
        return path
    }

    /// `change` run with `index` hidden, as separate transactions in the -wal.
    static func hidden(_ index: String, _ definition: String, _ change: String) -> [String] {
        ["PRAGMA writable_schema = ON; UPDATE sqlite_master SET sql = '\(definition) WHERE 0' WHERE name = '\(index)'; PRAGMA writable_schema = OFF",
         change,
         "PRAGMA writable_schema = ON; UPDATE sqlite_master SET sql = '\(definition)' WHERE name = '\(index)'; PRAGMA writable_schema = OFF"]
    }

    static let sound = [
        "INSERT INTO t SELECT id + 10000, name || ' new', score, owner FROM t WHERE id % 7 = 0",
        "UPDATE t SET name = name || ' renamed', score = score + 0.5 WHERE id % 11 = 0",
        "DELETE FROM t WHERE id % 13 = 0",
        "INSERT INTO other VALUES (100000, 'late')",
    ]

    static func verdicts(_ path: String, tables: [String]) throws -> (Connection, [String: WALPageAgreement.Verdict]) {
        // A fresh connection, as inspect opens one: the schema as the -wal's last commit has it.
        let db = try Connection.open(path: path, mode: .readOnly)
        let header = try DatabaseHeader(data: Data(contentsOf: URL(fileURLWithPath: path)))
        let walData = try Data(contentsOf: URL(fileURLWithPath: path + "-wal"))
        let pages = WALPageAgreement.Pages(wal: WAL(data: walData), data: walData, header: header, file: path + "-wal")
        return (db, WALPageAgreement.verdicts(db, pages: pages, tables: tables))
    }

    @Test("sound changes in the -wal agree, as SQLite says")
    func soundWAL() throws {
        let folder = try TemporaryFolder("wal-page-agreement")
        defer { withExtendedLifetime(folder) {} }
        let path = try Self.store(in: folder, changes: Self.sound)
        let (db, verdicts) = try Self.verdicts(path, tables: ["t", "other"])
        #expect(WALAgreement.integrity(db, full: true, table: "t") == ["ok"])
        #expect(WALAgreement.integrity(db, full: true, table: "other") == ["ok"])
        #expect(verdicts == ["t": .agrees, "other": .agrees])
    }

    @Test("an index SQLite left behind in the -wal is not called agreeing",
          arguments: [
              Self.hidden("t_name", "CREATE INDEX t_name ON t(name)", "INSERT INTO t VALUES (20001, 'hidden', 1.0, 3)"),
              Self.hidden("t_name", "CREATE INDEX t_name ON t(name)", "DELETE FROM t WHERE id = 1500"),
              Self.hidden("t_name", "CREATE INDEX t_name ON t(name)", "UPDATE t SET name = 'changed' WHERE id = 2200"),
              Self.hidden("t_owner_score", "CREATE INDEX t_owner_score ON t(owner, score)", "DELETE FROM t WHERE id = 700; INSERT INTO t VALUES (20002, 'x', 2.5, 4)"),
          ])
    func leftBehind(changes: [String]) throws {
        let folder = try TemporaryFolder("wal-page-agreement")
        defer { withExtendedLifetime(folder) {} }
        let path = try Self.store(in: folder, changes: Self.sound + changes)
        let (db, verdicts) = try Self.verdicts(path, tables: ["t", "other"])
        #expect(WALAgreement.integrity(db, full: true, table: "t") != ["ok"], "the oracle: SQLite sees the damage")
        #expect(verdicts["t"] == .unsure)
        #expect(verdicts["other"] == .agrees)
    }

    /// A column added after the rows were written (a lightweight migration does this): the old
    /// records hold fewer values than the table has columns, and a leaf whose first record is one
    /// of them is still the table's. The hidden change keeps the counts equal (one row deleted,
    /// one inserted), so only the leaf the insert wrote can show it.
    @Test("a leaf whose records predate an added column is still checked")
    func addedColumn() throws {
        let folder = try TemporaryFolder("wal-page-agreement")
        defer { withExtendedLifetime(folder) {} }
        let changes = ["ALTER TABLE t ADD COLUMN added TEXT"]
            + Self.hidden("t_name", "CREATE INDEX t_name ON t(name)", "DELETE FROM t WHERE id = 10; INSERT INTO t(id, name, score, owner) VALUES (2990, 'hidden', 1.0, 3)")
        let path = try Self.store(in: folder, changes: ["DELETE FROM t WHERE id BETWEEN 2985 AND 2995"] + changes)
        let (db, verdicts) = try Self.verdicts(path, tables: ["t"])
        #expect(WALAgreement.integrity(db, full: true, table: "t") != ["ok"], "the oracle: SQLite sees the damage")
        #expect(try db.scalar("SELECT count(*) FROM t NOT INDEXED").int == db.scalar("SELECT count(*) FROM t INDEXED BY t_name").int,
                "the counts agree: only the leaf can tell")
        #expect(verdicts["t"] == .unsure)
    }

    /// Apple's stores with a -wal: every table the quick check calls agreeing, SQLite passes.
    @Test("on Apple's real stores it never says agrees where SQLite does not",
          .enabled(if: ProjectPaths.hasRealFixtures, Comment(rawValue: ProjectPaths.realFixturesMissing)),
          arguments: ProjectPaths.realFixtureFolders())
    func realStores(folder name: String) throws {
        guard let real = ProjectPaths.realFixtures(), let store = try ProjectPaths.realStoreFile(in: real.appendingPathComponent(name)),
              FileManager.default.fileExists(atPath: store.path + "-wal") else { return }
        let scratch = try TemporaryFolder("wal-page-agreement-real")
        defer { withExtendedLifetime(scratch) {} }
        let copy = scratch.path("store.sqlite")
        try FileManager.default.copyItem(at: store, to: copy)
        try FileManager.default.copyItem(atPath: store.path + "-wal", toPath: copy.path + "-wal")
        guard let walData = try? Data(contentsOf: URL(fileURLWithPath: copy.path + "-wal")), WAL(data: walData).lastCommitFrame > 0,
              let header = try? DatabaseHeader(data: Data(contentsOf: copy)),
              let db = try? Connection.open(path: copy.path, mode: .readOnly), let tables = try? db.tableNames() else { return }
        let pages = WALPageAgreement.Pages(wal: WAL(data: walData), data: walData, header: header, file: copy.path + "-wal")
        let verdicts = WALPageAgreement.verdicts(db, pages: pages, tables: tables.filter { !$0.hasPrefix("sqlite_") })
        for (table, verdict) in verdicts where verdict == .agrees {
            #expect(WALAgreement.integrity(db, full: true, table: table) == ["ok"], "\(name): \(table)")
        }
        #expect(verdicts.values.contains(.agrees), "\(name): the quick check agreed on no table")
    }
}
