import CoreDataStore
import Foundation
import SQLiteAccess
import StoreTestSupport
import Testing

/// `IndexAgreement` may only ever say "the indexes agree" where SQLite's own `integrity_check(T)`
/// says ok; these tests hold it to SQLite on sound tables, on tables whose indexes SQLite itself
/// was made to leave behind (the index hidden as a partial index `WHERE 0` while rows change, so
/// SQLite skips its entries), and on every table of Apple's real stores.
@Suite("index agreement against SQLite's integrity_check")
struct IndexAgreementTests {
    /// A table with the kinds of values an index compares: integers, integral and fractional
    /// REALs, text, blobs, NULLs, under a plain, a multi-column DESC and a unique index.
    static func sound(in folder: TemporaryFolder, rows: Int = 500) throws -> (Connection, String) {
        let path = folder.path("sound-\(UUID().uuidString).sqlite").path
        let db = try Connection.open(path: path, mode: .create)
        try db.execute("""
            CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, score REAL, data BLOB, tag TEXT);
            CREATE INDEX t_name ON t(name);
            CREATE INDEX t_score_data ON t(score DESC, data);
            CREATE UNIQUE INDEX t_tag ON t(tag);
            """)
        try db.execute("BEGIN")
        for i in 1...rows {
            let score: DatabaseValue = i % 7 == 0 ? .null : .real(i % 2 == 0 ? Double(i) : Double(i) + 0.25)
            let tag: DatabaseValue = i % 3 == 0 ? .null : .text("tag-\(i)")
            let data: DatabaseValue = i % 5 == 0 ? .null : .blob(Data((0..<(i % 40)).map { UInt8(($0 * i) & 0xff) }))
            try db.run("INSERT INTO t VALUES (?, ?, ?, ?, ?)", [.integer(Int64(i)), .text("name \(i % 50)"), score, data, tag])
        }
        try db.execute("COMMIT")
        return (db, path)
    }

    /// Runs `change` on the table while `index` is hidden from SQLite as a partial index that
    /// holds no row, so SQLite changes the table and leaves the index as it was.
    static func behindIndex(_ path: String, index: String, definition: String, _ change: String) throws {
        func setIndexSQL(_ sql: String) throws {
            let db = try Connection.open(path: path, mode: .readWrite)
            try db.set(.defensive, false)
            try db.execute("PRAGMA writable_schema = ON")
            try db.run("UPDATE sqlite_master SET sql = ? WHERE name = ?", [.text(sql), .text(index)])
            try db.execute("PRAGMA writable_schema = OFF")
        }
        try setIndexSQL(definition + " WHERE 0")
        try Connection.open(path: path, mode: .readWrite).execute(change)
        try setIndexSQL(definition)
    }

    static func sqliteCheck(_ path: String, table: String) throws -> [String] {
        WALAgreement.integrity(try Connection.open(path: path, mode: .readOnly), full: true, table: table)
    }

    @Test("on sound tables it agrees with SQLite and saves the seeks")
    func soundTables() throws {
        let folder = try TemporaryFolder("index-agreement")
        defer { withExtendedLifetime(folder) {} }
        let (db, path) = try Self.sound(in: folder)
        #expect(try Self.sqliteCheck(path, table: "t") == ["ok"])
        #expect(IndexAgreement.holds(db, table: "t"))
        #expect(WALAgreement.tableIntegrity(db, table: "t") == ["ok"])
        // An empty table and a table without indexes agree too.
        try db.execute("CREATE TABLE e(a); CREATE INDEX e_a ON e(a); CREATE TABLE plain(a, b)")
        #expect(IndexAgreement.holds(db, table: "e"))
        #expect(IndexAgreement.holds(db, table: "plain"))
    }

    /// Each change leaves `t_name` (or `t_tag`) disagreeing with the table in one way; SQLite says
    /// so, and so must the agreement, after which `tableIntegrity` returns SQLite's own words.
    @Test("an index SQLite left behind is found, and SQLite's words are returned",
          arguments: [
              ("t_name", "CREATE INDEX t_name ON t(name)", "DELETE FROM t WHERE id = 17"),                       // extra entry
              ("t_name", "CREATE INDEX t_name ON t(name)", "INSERT INTO t(id, name) VALUES (9001, 'late')"),      // missing entry
              ("t_name", "CREATE INDEX t_name ON t(name)", "UPDATE t SET name = 'renamed' WHERE id = 40"),       // stale value
              // One missing and one extra: the counts still match (SQLite: "row … missing from index").
              ("t_name", "CREATE INDEX t_name ON t(name)", "DELETE FROM t WHERE id = 18; INSERT INTO t(id, name) VALUES (9002, 'name 18')"),
              ("t_tag", "CREATE UNIQUE INDEX t_tag ON t(tag)", "UPDATE t SET tag = 'tag-2' WHERE id = 4"),
          ])
    func leftBehind(index: String, definition: String, change: String) throws {
        let folder = try TemporaryFolder("index-agreement")
        defer { withExtendedLifetime(folder) {} }
        let (_, path) = try Self.sound(in: folder)
        try Self.behindIndex(path, index: index, definition: definition, change)
        let sqlite = try Self.sqliteCheck(path, table: "t")
        #expect(sqlite != ["ok"], "the oracle: SQLite sees the damage")
        let db = try Connection.open(path: path, mode: .readOnly)
        #expect(!IndexAgreement.holds(db, table: "t"))
        #expect(WALAgreement.tableIntegrity(db, table: "t") == sqlite)
    }

    /// The side `check`'s row screen reads in a scan of its own (conditions counted beside, a
    /// lookup joined): the answer is the one `holds` reaches alone, and SQLite's.
    static func sideFromAnotherScan(_ db: Connection, table: String) throws -> IndexAgreement.TableSide? {
        guard var side = try IndexAgreement.TableSide(db, table: table) else { return nil }
        let q = Identifier.quoted(table)
        let sql = "SELECT count(*) FILTER (WHERE s.rowid % 2 = 0), \(side.aggregates(alias: "s").joined(separator: ", ")) FROM \(q) AS s NOT INDEXED LEFT JOIN \(q) AS o ON o.rowid = s.rowid"
        #expect(try IndexAgreement.TableSide.scansTable(db, sql, alias: "s"))
        let row = try #require(try db.rows(sql).first)
        let taken = side.take(row.values.dropFirst())
        #expect(taken)
        return side
    }

    @Test("a side read by another scan gives the answer holds gives alone, on sound and damaged tables",
          arguments: [nil, "DELETE FROM t WHERE id = 17", "UPDATE t SET name = 'renamed' WHERE id = 40"])
    func sideFromAnotherScan(change: String?) throws {
        let folder = try TemporaryFolder("index-agreement")
        defer { withExtendedLifetime(folder) {} }
        let (_, path) = try Self.sound(in: folder)
        if let change { try Self.behindIndex(path, index: "t_name", definition: "CREATE INDEX t_name ON t(name)", change) }
        let db = try Connection.open(path: path, mode: .readOnly)
        let side = try #require(try Self.sideFromAnotherScan(db, table: "t"))
        let sound = try Self.sqliteCheck(path, table: "t") == ["ok"]
        #expect(sound == (change == nil), "the oracle")
        #expect(IndexAgreement.holds(db, table: "t", read: side) == sound)
        #expect(IndexAgreement.holds(db, table: "t") == sound)
        // A side read from another table is never taken for this one's.
        try Connection.open(path: path, mode: .readWrite).execute("CREATE TABLE u(id INTEGER PRIMARY KEY, name TEXT); CREATE INDEX u_name ON u(name)")
        let other = try #require(try Self.sideFromAnotherScan(try Connection.open(path: path, mode: .readOnly), table: "u"))
        #expect(!IndexAgreement.holds(db, table: "t", read: other))
    }

    @Test("duplicate keys in a unique index are found")
    func duplicates() throws {
        let folder = try TemporaryFolder("index-agreement")
        defer { withExtendedLifetime(folder) {} }
        let path = folder.path("dup.sqlite").path
        let db = try Connection.open(path: path, mode: .create)
        // Built non-unique with duplicates (and NULLs, which a unique index may repeat), then declared unique.
        try db.execute("CREATE TABLE t(a INTEGER PRIMARY KEY, b); CREATE INDEX u ON t(b); INSERT INTO t VALUES (1, 'x'), (2, NULL), (3, NULL), (4, 'y'), (5, 'x')")
        try db.set(.defensive, false)
        try db.execute("PRAGMA writable_schema = ON; UPDATE sqlite_master SET sql = 'CREATE UNIQUE INDEX u ON t(b)' WHERE name = 'u'; PRAGMA writable_schema = OFF")
        let fresh = try Connection.open(path: path, mode: .readOnly)
        #expect(try Self.sqliteCheck(path, table: "t") != ["ok"])
        #expect(!IndexAgreement.holds(fresh, table: "t"))
        // The same rows without the duplicate pass, NULLs repeated included.
        let clean = try Connection.open(path: path, mode: .readWrite)
        try clean.execute("DELETE FROM t WHERE a = 5")
        #expect(try Self.sqliteCheck(path, table: "t") == ["ok"])
        #expect(IndexAgreement.holds(try Connection.open(path: path, mode: .readOnly), table: "t"))
    }

    /// What is not read here is left to SQLite: the answer is then still SQLite's.
    @Test("kinds it does not read are left to SQLite",
          arguments: [
              "CREATE TABLE k(a INTEGER PRIMARY KEY, b); CREATE INDEX k_b ON k(b) WHERE b > 2",
              "CREATE TABLE k(a INTEGER PRIMARY KEY, b); CREATE INDEX k_b ON k(b + 1)",
              "CREATE TABLE k(a INTEGER PRIMARY KEY, b TEXT); CREATE INDEX k_b ON k(b COLLATE NOCASE)",
              "CREATE TABLE k(a INTEGER PRIMARY KEY, b) WITHOUT ROWID; CREATE INDEX k_b ON k(b)",
              // A column name that writes plan words of its own: the plan cannot be trusted.
              "CREATE TABLE k(a INTEGER PRIMARY KEY, \"b USING COVERING INDEX k_b\"); CREATE INDEX k_b ON k(\"b USING COVERING INDEX k_b\")",
          ])
    func leftToSQLite(schema: String) throws {
        let folder = try TemporaryFolder("index-agreement")
        defer { withExtendedLifetime(folder) {} }
        let path = folder.path("k.sqlite").path
        let db = try Connection.open(path: path, mode: .create)
        try db.execute(schema)
        try db.execute("INSERT INTO k VALUES (1, 'a'), (2, 'B'), (3, 'c'), (4, 4)")
        #expect(!IndexAgreement.holds(db, table: "k"))
        #expect(WALAgreement.tableIntegrity(db, table: "k") == ["ok"])
    }

    /// Every table of Apple's stores: where the agreement holds, SQLite's check must say ok.
    @Test("on Apple's real stores it never says ok where SQLite does not",
          .enabled(if: ProjectPaths.hasRealFixtures, Comment(rawValue: ProjectPaths.realFixturesMissing)),
          arguments: ProjectPaths.realFixtureFolders())
    func realStores(folder name: String) throws {
        guard let real = ProjectPaths.realFixtures(), let store = try ProjectPaths.realStoreFile(in: real.appendingPathComponent(name)) else { return }
        let scratch = try TemporaryFolder("index-agreement-real")
        defer { withExtendedLifetime(scratch) {} }
        // A private copy of the family: SQLite writes a -shm even on a read-only open.
        let copy = scratch.path("store.sqlite")
        try FileManager.default.copyItem(at: store, to: copy)
        if FileManager.default.fileExists(atPath: store.path + "-wal") {
            try FileManager.default.copyItem(atPath: store.path + "-wal", toPath: copy.path + "-wal")
        }
        guard let db = try? Connection.open(path: copy.path, mode: .readOnly), let tables = try? db.tableNames() else { return }
        var fast = 0
        for table in tables where !table.hasPrefix("sqlite_") {
            if IndexAgreement.holds(db, table: table) {
                fast += 1
                #expect(WALAgreement.integrity(db, full: true, table: table) == ["ok"], "\(name): \(table)")
            }
        }
        #expect(fast > 0 || tables.isEmpty, "\(name): the agreement read no table at all")
    }
}
