import Foundation
import SQLiteAccess
import StoreBuilder
import StoreTestSupport
import Testing

/// `storelens recover` run as a user runs it: the deleted records SQLite shows on cut copies of the
/// genuine store are printed as deleted, with the commit that deleted them, in every format; hostile
/// values are sanitised; the evidence stays byte-identical.
@Suite("storelens recover")
struct RecoverCommandTests {
    @Test("the genuine store: deleted Items with their names and deleting commit in text, json, jsonl and csv", .enabled(if: ProjectPaths.hasRealFixtures, Comment(rawValue: ProjectPaths.realFixturesMissing)))
    func realStore() throws {
        let store = try #require(ProjectPaths.realFixtures()).appendingPathComponent("swiftdata-resources/default.store")
        let before = try FolderSnapshot(store.deletingLastPathComponent())
        let folder = try TemporaryFolder("recover-cli")
        let frames = try WALCuts.commitFrames(store)
        // The truth: "name @commit" for every Item a commit deleted, from SQLite on copies cut after each commit.
        var deleted: Set<String> = []
        var previous = try WALCuts.items(try WALCuts.sqlite(store, frames: 0, in: folder))
        for (index, frame) in frames.enumerated() {
            let now = try WALCuts.items(try WALCuts.sqlite(store, frames: frame, in: folder))
            for (pk, name) in previous where now[pk] == nil { deleted.insert("\(name) @\(index + 1)") }
            previous = now
        }
        #expect(!deleted.isEmpty)

        var outputs: [String: String] = [:]
        for format in ["text", "json", "jsonl", "csv"] {
            let result = try CLI.run(["recover", store.path, "--format", format])
            #expect(result.status == 0, "stderr: \(result.stderr)")
            outputs[format] = result.stdout
        }
        let report = try CommandJSON.object(try #require(outputs["json"]))
        let versions = try #require((report["stores"] as? [[String: Any]])?.first?["versions"] as? [[String: Any]])
        func deletedItems(_ objects: [[String: Any]]) -> Set<String> {
            Set(objects.filter { $0["entity"] as? String == "Item" && $0["state"] as? String == "deleted" }.compactMap { v in
                guard let name = (v["values"] as? [String: Any])?["name"] as? String,
                      let commit = (v["endedBy"] as? [String: Any])?["commit"] as? Int else { return nil }
                return "\(name) @\(commit)"
            })
        }
        #expect(deletedItems(versions) == deleted)
        let lines = try #require(outputs["jsonl"]).split(separator: "\n").map { try CommandJSON.object($0) }
        #expect(lines.count == versions.count)
        // JSON Lines: flat, provenance as _… members (the ending as _ended_by and _end_commit), values by property.
        func flatDeleted(_ objects: [[String: Any]]) -> Set<String> {
            Set(objects.filter { $0["_entity"] as? String == "Item" && $0["_state"] as? String == "deleted" && $0["_ended_by"] as? String == "deleted" }
                .compactMap { v in
                    guard let name = v["name"] as? String, let commit = v["_end_commit"] as? Int else { return nil }
                    return "\(name) @\(commit)"
                })
        }
        #expect(flatDeleted(lines) == deleted)
        // CSV: one line per property; the name line carries the deleting commit.
        let csv = try #require(outputs["csv"]).components(separatedBy: "\r\n")
        #expect(csv.first == "path,entity,table,pk,state,confidence,firstCommit,lastCommit,sources,endedBy,endCommit,transactions,finds,uncertainColumns,property,value")
        var fromCSV: Set<String> = []
        for line in csv.dropFirst() where line.contains(",Item,ZITEM,") && line.contains(",deleted,whole,") {
            let cells = line.components(separatedBy: ",")
            if cells.count == 16, cells[14] == "name" { fromCSV.insert("\(cells[15]) @\(cells[10])") }
        }
        #expect(fromCSV == deleted)
        let text = try #require(outputs["text"])
        for entry in deleted {
            let name = entry.components(separatedBy: " @")[0], commit = entry.components(separatedBy: " @")[1]
            #expect(text.components(separatedBy: "\n").contains {
                $0.hasPrefix("  deleted    Item#") && $0.contains("deleted by commit \(commit) ") && $0.contains("name \"\(name)\"")
            }, "\(entry)")
        }
        // Filters: only deleted Items.
        let filtered = try CLI.run(["recover", store.path, "--entity", "Item", "--state", "deleted", "--format", "jsonl"])
        #expect(filtered.status == 0)
        let filteredLines = try filtered.stdout.split(separator: "\n").map { try CommandJSON.object($0) }
        // Besides the deletes the commits show, the deletes only history names (no values kept).
        let onlyHistory = filteredLines.filter { $0["_confidence"] as? String == "tombstone" }
        #expect(flatDeleted(filteredLines) == deleted && filteredLines.count == deleted.count + onlyHistory.count)
        #expect(onlyHistory.allSatisfy { $0["name"] == nil && ($0["_transactions"] as? [Any])?.isEmpty == false })

        // --out: the same versions as a SQLite file, one table per entity, read back by SQLite.
        let out = folder.path("recovered.sqlite").path
        let written = try CLI.run(["recover", store.path, "--out", out, "--format", "json"])
        #expect(written.status == 0, "stderr: \(written.stderr)")
        #expect(try CommandJSON.object(written.stdout)["versions"] as? Int == versions.count)
        let db = try Connection.open(path: out, mode: .readOnly)
        let tables = Set(try db.rows("SELECT name FROM sqlite_master WHERE type = 'table'").compactMap { $0[0].string })
        #expect(tables == Set(versions.compactMap { $0["entity"] as? String }))
        var rows = 0
        for table in tables { rows += try db.scalar("SELECT count(*) FROM \(Identifier.quoted(table))").int ?? 0 }
        #expect(rows == versions.count)
        let fromFile = Set(try db.rows("SELECT name, _end_commit FROM Item WHERE _state = 'deleted' AND _confidence != 'tombstone'").map { "\($0[0].string ?? "") @\($0[1].int ?? -1)" })
        #expect(fromFile == deleted)
        // Never overwritten; never inside the evidence.
        let again = try CLI.run(["recover", store.path, "--out", out])
        #expect(again.status != 0 && again.stderr.contains(out))
        let family = try CLI.run(["recover", store.path, "--out", store.path + "-journal"])
        #expect(family.status != 0 && family.stderr.contains("--out"), "\(family.stderr)")
        #expect(try FolderSnapshot(store.deletingLastPathComponent()) == before, "the evidence must stay byte-identical")
    }

    @Test("hostile values are sanitised in text and neutralised in csv; bad options are refused with a reason")
    func hostileValues() throws {
        let folder = try TemporaryFolder("recover-hostile")
        let url = folder.path("default.store")
        let writer = try StoreWriter(url: url, model: SampleModels.todo)
        try writer.transaction { w in
            _ = try w.insert("TodoList", ["name": .string("Home")])
            try w.insert("TodoItem", ["id": .uuid(UUID()), "title": .string("=1+2 \u{1B}[31mred"), "createdAt": .date(Date(timeIntervalSince1970: 0)),
                                      "list": .object(entity: "TodoList", pk: 1)])
        }
        try writer.checkpoint()
        try writer.transaction { w in try w.update("TodoItem", pk: 1, ["title": .string("=cmd|' /C calc'!A0 \u{7}")]) }
        try writer.transaction { w in try w.delete("TodoItem", pk: 1) }
        try writer.close(leavingWAL: true)
        let before = try FolderSnapshot(folder.url)
        for format in ["text", "json", "jsonl", "csv"] {
            let result = try CLI.run(["recover", url.path, "--format", format])
            #expect(result.status == 0, "stderr: \(result.stderr)")
            // CSV keeps cells as stored, as `rows` and `wal --diff` do; the other formats carry no control bytes.
            if format != "csv" {
                #expect(!result.stdout.contains("\u{1B}") && !result.stdout.contains("\u{7}"), "\(format) carries no control bytes")
            } else {
                #expect(result.stdout.contains(",title,'=1+2") && result.stdout.contains(",title,'=cmd"))
                #expect(result.stdout.contains(",superseded,") && result.stdout.contains(",deleted,"))
            }
        }
        for bad in [["--state", "gone"], ["--pk", "0"], ["--pk", "x"], ["--entity", ""]] {
            let result = try CLI.run(["recover", url.path] + bad)
            #expect(result.status == 2 && result.stderr.contains("Error:"), "\(bad): \(result.stderr)")
        }
        #expect(try FolderSnapshot(folder.url) == before)
    }

    @Test("a -journal kept by journal_mode=PERSIST: the rows a transaction deleted are carved from it through the ordinary input path")
    func persistedJournal() throws {
        let folder = try TemporaryFolder("recover-journal")
        let path = folder.path("notes.sqlite").path
        var deleted: Set<String> = []
        do {
            let c = try Connection.open(path: path, mode: .create)
            try c.execute("PRAGMA journal_mode = PERSIST; PRAGMA secure_delete = OFF")
            try c.execute("""
                CREATE TABLE Z_PRIMARYKEY (Z_ENT INTEGER PRIMARY KEY, Z_NAME VARCHAR, Z_SUPER INTEGER, Z_MAX INTEGER);
                INSERT INTO Z_PRIMARYKEY VALUES (1, 'Note', 0, 0);
                CREATE TABLE ZNOTE (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZTITLE VARCHAR);
                WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 60)
                    INSERT INTO ZNOTE SELECT i, 1, 1, 'note number ' || i FROM n;
                """)
            // The truth: the titles SQLite holds for the rows about to be deleted.
            deleted = Set(try c.rows("SELECT ZTITLE FROM ZNOTE WHERE Z_PK % 2 = 0").compactMap { $0[0].string })
            try c.execute("BEGIN; DELETE FROM ZNOTE WHERE Z_PK % 2 = 0; COMMIT")
        }
        #expect(FileManager.default.fileExists(atPath: path + "-journal"))
        let before = try FolderSnapshot(folder.url)
        let result = try CLI.run(["recover", path, "--state", "carved", "--format", "jsonl"])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let lines = try result.stdout.split(separator: "\n").map { try CommandJSON.object($0) }
        let fromJournal = Set(lines.filter { line in
            (line["_finds"] as? [[String: Any]])?.contains { $0["origin"] as? String == "journal" } == true
        }.compactMap { $0["ZTITLE"] as? String })
        #expect(!deleted.isEmpty && fromJournal == deleted, "missing: \(deleted.subtracting(fromJournal)), extra: \(fromJournal.subtracting(deleted))")
        #expect(lines.allSatisfy { $0["_state"] as? String == "carved" })
        #expect(try FolderSnapshot(folder.url) == before, "the store and its -journal stay byte-identical")
    }
}

/// One rule for every command that takes an entity name: a name the store does not have is exit 2
/// with the nearest one, never an empty answer ("no record versions" reads as "nothing was deleted").
@Suite("an entity name the store does not have")
struct UnknownEntityTests {
    @Test("recover --entity (every format, --out too), history --entity and rows refuse a misspelt entity with 'did you mean'")
    func misspelt() throws {
        let folder = try TemporaryFolder("unknown-entity")
        let store = try SampleStores.demo(in: folder)
        let out = folder.path("recovered.sqlite")
        for arguments in [["recover", store.path, "--entity", "TodoItme"], ["recover", store.path, "--entity", "TodoItme", "--format", "json"],
                          ["recover", store.path, "--entity", "TodoItme", "--out", out.path],
                          ["history", store.path, "--entity", "TodoItme"], ["rows", store.path, "TodoItme"]] {
            let r = try CLI.run(arguments)
            #expect(r.status == 2, "\(arguments.joined(separator: " ")): exit \(r.status)")
            #expect(r.stderr.contains("did you mean 'TodoItem'"), "\(arguments.joined(separator: " ")): \(r.stderr)")
            #expect(r.stdout.isEmpty, "nothing on stdout: \(r.stdout.prefix(200))")
        }
        #expect(!FileManager.default.fileExists(atPath: out.path), "no --out file for a refused run")
        let known = try CLI.run(["recover", store.path, "--entity", "todoitem", "--format", "json"])
        #expect(known.status == 0, "any case of a known name: \(known.stderr)")
    }
}
