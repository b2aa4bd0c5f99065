import Foundation
import SQLiteAccess
import StoreTestSupport
import Testing

@Suite("SQLite access layer")
struct ConnectionTests {
    @Test("identifiers from a device are quoted so they can only be names", arguments: [
        "ZITEM", #"Z"ITEM"#, "Z ITEM; DROP TABLE t; --", #""""#, "名前", String(repeating: "x", count: 10_000),
    ])
    func quoting(_ name: String) throws {
        let db = try Connection.open(path: ":memory:", mode: .create)
        try db.execute("CREATE TABLE t (x)")
        try db.execute("CREATE TABLE \(Identifier.quoted(name)) (\(Identifier.quoted(name)) INTEGER)")
        try db.run("INSERT INTO \(Identifier.quoted(name)) VALUES (?)", [.integer(7)])
        #expect(try db.scalar("SELECT \(Identifier.quoted(name)) FROM \(Identifier.quoted(name))").int == 7)
        #expect(try db.tableExists(name))
        #expect(try db.tableExists("t"), "nothing else was touched")
        #expect(try db.columns(of: name).map(\.name) == [name])
    }

    @Test("errors carry the code, message, SQL and file")
    func errorsCarryContext() throws {
        let db = try Connection.open(path: ":memory:", mode: .create)
        let error = try #require(throws: SQLiteError.self) { try db.execute("SELECT * FROM missing") }
        #expect(error.primaryCode == 1)
        #expect(error.message.contains("no such table"))
        #expect(error.sql == "SELECT * FROM missing")
        #expect(error.description.contains("(:memory:)"))
    }

    @Test("opening a file that is not a database fails with SQLITE_NOTADB, not a crash")
    func notADatabase() throws {
        let folder = try TemporaryFolder("notadb")
        let file = folder.path("x.db")
        try Data(repeating: 0x41, count: 8192).write(to: file)
        let db = try Connection.open(path: file.path, mode: .readOnly)
        let error = try #require(throws: SQLiteError.self) { try db.scalar("SELECT count(*) FROM sqlite_master") }
        #expect(error.isNotADatabase)
    }

    @Test("an in-memory image can be read without touching disk")
    func deserialize() throws {
        let folder = try TemporaryFolder("image")
        let file = folder.path("x.db")
        do {
            let db = try Connection.open(path: file.path, mode: .create)
            try db.execute("CREATE TABLE t (x); INSERT INTO t VALUES (1), (2), (3);")
        }
        let image = try Data(contentsOf: file)
        let db = try Connection.deserialize(image, name: "image of x.db")
        #expect(try db.scalar("SELECT sum(x) FROM t").int == 6)
        #expect(throws: SQLiteError.self) { try db.execute("INSERT INTO t VALUES (4)") }
    }

    @Test("values round-trip in all five storage classes")
    func values() throws {
        let db = try Connection.open(path: ":memory:", mode: .create)
        try db.execute("CREATE TABLE v (a, b, c, d, e)")
        let values: [DatabaseValue] = [.null, .integer(-42), .real(2.5), .text("héllo\u{0}x"), .blob(Data([0, 1, 2]))]
        try db.run("INSERT INTO v VALUES (?, ?, ?, ?, ?)", values)
        let row = try #require(try db.rows("SELECT * FROM v").first)
        #expect(row.values == values)
        try db.run("INSERT INTO v (e) VALUES (?)", [.blob(Data())])
        #expect(try db.scalar("SELECT typeof(e) FROM v WHERE a IS NULL AND b IS NULL").string == "blob")
    }
}
