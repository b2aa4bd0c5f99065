import Foundation
import SQLiteAccess
import StoreBuilder
import StoreTestSupport
import Testing

/// One store an input cannot give (truncated) does not stop the others: they are read, the
/// refused one is named with its reason, and the exit code says an input was refused.
@Suite("a refused store does not stop the rest")
struct RefusedStoreTests {
    @Test("inspect and check on a folder with a good and a truncated store", arguments: ["inspect", "check"])
    func folderWithOneBadStore(_ command: String) throws {
        let folder = try TemporaryFolder("refused-\(command)")
        let good = try SampleStores.todo(in: folder.url, name: "good.sqlite")
        let bad = try SampleStores.todo(in: folder.url, rows: 400, name: "bad.sqlite")
        let data = try Data(contentsOf: bad)
        try data.prefix(data.count / 2).write(to: bad)
        let before = try FolderSnapshot(folder.url)
        let result = try CLI.run([command, folder.url.path, "--format", "json"])
        #expect(result.status == 2, "an input was refused: \(result.stderr)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        let stores = (json["stores"] as? [Any]) ?? []
        #expect(stores.count == 1, "the good store was still read")
        #expect("\(stores)".contains(good.lastPathComponent))
        let refused = (json["refused"] as? [[String: Any]]) ?? []
        #expect(refused.count == 1 && (refused.first?["reason"] as? String)?.contains("truncated") == true)
        #expect(result.stderr.contains("bad.sqlite") && result.stderr.contains("truncated"))
        #expect(try FolderSnapshot(folder.url) == before)
    }
}

@Suite("a table SQLite cannot read here")
struct UnreadableTableTests {
    /// A Core Data store whose entity table became an FTS5 table with a tokenizer only Apple registers.
    static func store(in folder: URL) throws -> URL {
        let url = try SampleStores.todo(in: folder, rows: 3, name: "Private.sqlite")
        let db = try Connection.open(path: url.path, mode: .readWrite)
        try db.execute("DROP TABLE ZTODOITEM")
        try db.execute("CREATE VIRTUAL TABLE ZTODOITEM USING fts5(Z_PK, Z_ENT, ZTITLE)")
        // Defensive mode off and the schema writable, on this test's own file only
        // (SQLITE_DBCONFIG_DEFENSIVE = 1010, SQLITE_DBCONFIG_WRITABLE_SCHEMA = 1011).
        try db.config(1010, 0)
        try db.config(1011, 1)
        try db.execute("UPDATE sqlite_master SET sql = replace(sql, 'ZTITLE)', 'ZTITLE, tokenize=''PSITokenizer'')') WHERE name = 'ZTODOITEM'")
        return url
    }

    @Test("inspect, schema and check name the table and why, count the rest, and exit 0 or 1", arguments: ["inspect", "schema", "check"])
    func privateTokenizer(_ command: String) throws {
        let folder = try TemporaryFolder("unreadable-\(command)")
        let url = try Self.store(in: folder.url)
        // SQLite itself cannot read the table here, and can read the others.
        let facts = try Connection.open(path: url.path, mode: .readOnly)
        #expect(throws: SQLiteError.self) { try facts.scalar("SELECT count(*) FROM ZTODOITEM") }
        let lists = try facts.scalar("SELECT count(*) FROM ZTODOLIST").int
        let result = try CLI.run([command, url.path, "--format", "json"])
        #expect([0, 1].contains(result.status), "\(result.stderr)")
        #expect(result.stdout.contains("ZTODOITEM") && result.stdout.contains("PSITokenizer"), "the table and the reason are named")
        if command == "inspect" {
            let json = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
            let entities = ((json["stores"] as? [[String: Any]])?.first?["entities"] as? [[String: Any]]) ?? []
            #expect(entities.first { $0["name"] as? String == "TodoList" }?["rows"] as? Int == lists, "the readable table is counted")
        }
    }
}
