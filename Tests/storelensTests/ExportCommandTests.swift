import Foundation
import SQLiteAccess
import StoreBuilder
import StoreFormats
import StoreTestSupport
import Testing

/// `storelens export`: the decoded SQLite file holds, table by table, what `rows` prints and what
/// SQLite itself counts in the store.
@Suite("export")
struct ExportCommandTests {
    /// Whether an exported value is what `rows --format jsonl` shows for it.
    static func same(_ exported: DatabaseValue, _ shown: Any?) -> Bool {
        switch shown {
        case nil, is NSNull: return exported == .null
        case let s as String:
            // A to-one relationship: the target's Z_PK (its entity in the `_entity` column).
            if let hash = s.lastIndex(of: "#"), let pk = Int64(s[s.index(after: hash)...]), exported.int64 == pk { return true }
            return exported.string == s
        case let n as NSNumber:
            switch exported {
            case .integer(let i): return NSNumber(value: i) == n
            // Foundation on Linux may read a long decimal into NSDecimalNumber: its double can differ in the last bit.
            case .real(let d): return d == n.doubleValue || abs(d - n.doubleValue) <= 1e-12 * max(1, abs(d))
            default: return false
            }
        case let other?:
            // Bytes, composites, transformable trees: the JSON rows writes, as text.
            guard let text = exported.string, let parsed = try? JSONSerialization.jsonObject(with: Data(text.utf8)) else { return false }
            return JSONText.same(parsed, other)
        }
    }

    /// Every exported entity table against `rows ENTITY --format jsonl` (its rows of that entity only):
    /// the same keys, and value for value.
    static func compareWithRows(_ store: URL, _ export: Connection, entities: [String], file: String = #filePath) throws -> Int {
        var compared = 0
        for entity in entities {
            let rows = try CLI.run(["rows", store.path, entity, "--format", "jsonl"])
            #expect(rows.status == 0, "\(entity): \(rows.stderr)")
            let lines = try rows.stdout.split(separator: "\n").map { try CommandJSON.object($0) }.filter { $0["_entity"] as? String == entity }
            let table = try export.rows("SELECT * FROM \(Identifier.quoted(entity)) ORDER BY _pk")
            #expect(table.count == lines.count, "\(entity): \(table.count) exported, rows shows \(lines.count)")
            for (row, line) in zip(table, lines) {
                #expect(row["_pk"].int64 == (line["_pk"] as? NSNumber)?.int64Value, "\(entity): the same rows in the same order")
                for name in row.columnNames where name != "_pk" && !name.hasSuffix("_entity") {
                    // rows' key for the property: a leading `_` doubled. A name a sibling entity shares is
                    // labelled `Entity.name` there and not compared here.
                    let key = name.hasPrefix("_") ? "_" + name : name
                    guard line.keys.contains(key) else { continue }
                    #expect(same(row[name], line[key] ?? nil), "\(entity)#\(row["_pk"]) \(name): exported \(row[name]), rows shows \(String(describing: line[key]))")
                    compared += 1
                }
            }
        }
        return compared
    }

    @Test("a table per concrete entity with decoded values as rows shows them, link tables as SQLite holds them, provenance with hashes")
    func builderStore() throws {
        let folder = try TemporaryFolder("export")
        let store = try PetsStore.make(in: folder)
        let before = try FolderSnapshot(folder.url)
        let out = folder.path("out/decoded.sqlite")
        try FileManager.default.createDirectory(at: out.deletingLastPathComponent(), withIntermediateDirectories: true)
        let result = try CLI.run(["export", store.path, "--out", out.path, "--format", "json"])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(try FolderSnapshot(folder.url).entries.filter { before.entries[$0.key] != nil } == before.entries, "the store stays byte-identical")
        let export = try Connection.open(path: out.path, mode: .readOnly)
        #expect(try export.integrityCheck() == ["ok"])
        let tables = Set(try export.rows("SELECT name FROM sqlite_schema WHERE type = 'table'").compactMap { $0[0].string })
        #expect(tables == ["Owner", "Animal", "Dog", "Cat", "Tag", "Animal_tags", "_storelens", "_storelens_columns"], "\(tables)")
        #expect(try Self.compareWithRows(store, export, entities: ["Owner", "Animal", "Dog", "Cat", "Tag"]) > 20)
        // Inherited columns in the subentity's table; the target's entity beside a key into a hierarchy.
        let dogFields = try #require(try CommandJSON.object(try CLI.run(["rows", store.path, "Dog", "--format", "json", "--limit", "0"]).stdout)["fields"] as? [String])
        #expect(try export.columns(of: "Dog").map(\.name) == ["_pk"] + dogFields, "the columns rows lists for Dog, inherited ones first")
        #expect(dogFields.contains("born") && dogFields.contains("breed"))
        #expect(try export.scalar("SELECT mascot_entity FROM Tag WHERE label = 'good'").string == "Cat")
        let born = try export.scalar("SELECT born FROM Dog WHERE name = 'Rex'").string
        #expect(born.flatMap(ISOTimestamps.seconds) == 700_000_000.25 + 978_307_200 && born?.hasSuffix(".25Z") == true, "ISO 8601 UTC: \(String(describing: born))")

        // Link table: the pairs SQLite holds in the join table, read from a copy.
        let oracle = try SQLiteOracle(copying: store, wal: .none)
        let join = try #require(try oracle.rows("SELECT name FROM sqlite_schema WHERE type = 'table' AND name LIKE 'Z\\_%TAGS' ESCAPE '\\'").first?[0].string)
        let columns = try oracle.connection.columns(of: join).map(\.name)
        let truth = try oracle.rows("SELECT \(columns.map(Identifier.quoted).prefix(2).joined(separator: ", ")) FROM \(Identifier.quoted(join)) ORDER BY 1, 2")
            .map { "\($0[0].int64 ?? -1)-\($0[1].int64 ?? -1)" }
        let linked = try export.rows("SELECT Animal_pk, Tag_pk FROM Animal_tags ORDER BY 1, 2").map { "\($0[0].int64 ?? -1)-\($0[1].int64 ?? -1)" }
        #expect(linked == truth && linked.count == 3, "links \(linked), SQLite \(truth)")

        // _storelens: the input, its hash (as sha256sum would compute it), one line per table.
        let facts = Dictionary(try export.rows("SELECT key, value FROM _storelens").map { ($0[0].string ?? "", $0[1].string ?? "") }) { a, _ in a }
        #expect(facts["sha256 " + store.path] == (try SHA256.hexOfFile(at: store)))
        #expect(facts["input"] == store.path && facts["storelensVersion"] != nil && facts["modelSource"] == "cache")
        #expect(facts["table Dog"] == "entity Dog, 2 rows")

        // sqlite3 itself opens it, when installed.
        if FileManager.default.isExecutableFile(atPath: "/usr/bin/sqlite3") {
            let sqlite3 = try CLI.bounded(["-readonly", out.path, "SELECT count(*) FROM Dog; SELECT name FROM Cat;"], executable: URL(fileURLWithPath: "/usr/bin/sqlite3"))
            #expect(sqlite3.status == 0 && sqlite3.stdout == "2\nTom\n", "\(sqlite3.stdout) \(sqlite3.stderr)")
        }

        // Never over a file without --force; --force replaces it whole; never over an input.
        let again = try CLI.run(["export", store.path, "--out", out.path])
        #expect(again.status == 2 && again.stderr.contains("already exists") && again.stderr.contains("--force"), "\(again.stderr)")
        let forced = try CLI.run(["export", store.path, "--out", out.path, "--force"])
        #expect(forced.status == 0, "\(forced.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: out.deletingLastPathComponent().path) == ["decoded.sqlite"], "no temporary file left")
        let onInput = try CLI.run(["export", store.path, "--out", store.path, "--force"])
        #expect(onInput.status == 2, "\(onInput.stderr)")
        let noOut = try CLI.run(["export", store.path])
        #expect(noOut.status == 2 && noOut.stderr.contains("--out"))
        #expect(try FolderSnapshot(folder.url).entries.filter { before.entries[$0.key] != nil } == before.entries, "the store stays byte-identical")
    }

    @Test("real stores (copies): every entity table has the rows SQLite counts for that Z_ENT, and the values rows shows",
          .enabled(if: ProjectPaths.hasRealFixtures, Comment(rawValue: ProjectPaths.realFixturesMissing)),
          arguments: ProjectPaths.realFixtureFolders())
    func realStore(_ name: String) throws {
        let real = try #require(ProjectPaths.realFixtures()).appendingPathComponent(name)
        let folder = try TemporaryFolder("export-real")
        let copy = folder.path(name)
        try FileManager.default.copyItem(at: real, to: copy)
        guard let store = try ProjectPaths.realStoreFile(in: copy) else { return }
        let before = try FolderSnapshot(copy)
        let out = folder.path("decoded.sqlite")
        let result = try CLI.run(["export", store.path, "--out", out.path, "--format", "json"])
        try #require(try FolderSnapshot(copy) == before, "the copy of the evidence stays byte-identical")
        if result.status == 2 {
            // Not Core Data (plain SQLite, a backup's Manifest.db): refused in one sentence, nothing written.
            #expect(result.stderr.hasPrefix("Error: ") && !FileManager.default.fileExists(atPath: out.path), "\(result.stderr)")
            return
        }
        #expect(result.status == 0, "\(name): \(result.stderr)")
        let summary = try CommandJSON.object(result.stdout)
        let tables = try #require(summary["tables"] as? [[String: Any]])
        let export = try Connection.open(path: out.path, mode: .readOnly)
        let oracle = try SQLiteOracle(copying: store)
        let numbers = Dictionary(try oracle.primaryKeys().map { ($0.name, $0.ent) }) { a, _ in a }
        var withRows: [String] = []
        for table in tables {
            guard let entity = table["entity"] as? String, let tableName = table["name"] as? String, let ent = numbers[entity] else { continue }
            let exported = try export.scalar("SELECT count(*) FROM \(Identifier.quoted(tableName))").int ?? -1
            let root = try #require(try export.rows("SELECT value FROM _storelens WHERE key = ?", [.text("table " + tableName)]).first)
            #expect(root[0].string?.hasPrefix("entity \(entity), ") == true)
            // The entity's own rows: its table is its root's, found by SQLite's schema on the copy.
            let sqlTables = try oracle.rows("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'").compactMap { $0[0].string }
            var counted: Int?
            for t in sqlTables where t != "Z_PRIMARYKEY" {
                guard try oracle.connection.columns(of: t).contains(where: { $0.name == "Z_ENT" }) else { continue }
                let n = try oracle.scalar("SELECT count(*) FROM \(Identifier.quoted(t)) WHERE Z_ENT = ?", [.integer(Int64(ent))]).int ?? 0
                if n > 0 { counted = (counted ?? 0) + n }
            }
            #expect(exported == (counted ?? 0), "\(name) \(entity): \(exported) exported, SQLite counts \(counted ?? 0) rows of Z_ENT \(ent)")
            if exported > 0, tableName == entity { withRows.append(entity) }
        }
        // Values for a few entities (each rows run reads the whole store again).
        _ = try Self.compareWithRows(store, export, entities: Array(withRows.prefix(3)))
    }
}

