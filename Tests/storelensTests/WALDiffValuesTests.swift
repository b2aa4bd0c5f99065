import Foundation
import SQLiteAccess
import StoreBuilder
import StoreTestSupport
import Testing

/// `wal --diff` with values and `--diff --each`, run as a user runs them, in every format: the
/// records printed are the rows SQLite itself shows on copies of the store cut after each commit,
/// printed bytes are sanitised, and the evidence stays byte-identical.
@Suite("wal --diff with values")
struct WALDiffValuesTests {
    @Test("the genuine store: deleted items with their names in text, json, jsonl and csv, as SQLite shows them before the WAL", .enabled(if: ProjectPaths.hasRealFixtures, Comment(rawValue: ProjectPaths.realFixturesMissing)))
    func wholeWAL() throws {
        let store = try #require(ProjectPaths.realFixtures()).appendingPathComponent("swiftdata-resources/default.store")
        let before = try FolderSnapshot(store.deletingLastPathComponent())
        let folder = try TemporaryFolder("diff-values")
        let frames = try WALCuts.commitFrames(store)
        let main = try WALCuts.items(try WALCuts.sqlite(store, frames: 0, in: folder))
        let last = try WALCuts.items(try WALCuts.sqlite(store, frames: try #require(frames.last), in: folder))
        let deleted = main.filter { last[$0.key] == nil }
        let inserted = last.filter { main[$0.key] == nil }
        #expect(!deleted.isEmpty && !inserted.isEmpty)

        var outputs: [String: String] = [:]
        for format in ["text", "json", "jsonl", "csv"] {
            let result = try CLI.run(["wal", store.path, "--diff", "--format", format])
            #expect(result.status == 0, "stderr: \(result.stderr)")
            outputs[format] = result.stdout
        }
        // JSON: the layout `--diff` always had, each group with its records.
        let report = try CommandJSON.object(try #require(outputs["json"]))
        let stores = try #require(report["stores"] as? [[String: Any]])
        let changes = try #require(stores.first?["changes"] as? [[String: Any]])
        let item = try #require(changes.first { $0["entity"] as? String == "Item" })
        let records = try #require(item["records"] as? [[String: Any]])
        func names(_ kind: String) -> [Int64: String] {
            var out: [Int64: String] = [:]
            for r in records where r["change"] as? String == kind {
                if let pk = r["pk"] as? Int, let name = (r["values"] as? [String: Any])?["name"] as? String { out[Int64(pk)] = name }
            }
            return out
        }
        #expect(names("deleted") == deleted)
        #expect(names("inserted") == inserted)
        #expect((item["deleted"] as? [Int])?.map(Int64.init).sorted() == deleted.keys.sorted())
        #expect((stores.first?["transactions"] as? [[String: Any]])?.isEmpty == false)

        // JSON Lines: one flat object per changed property (the csv's columns), the same records.
        let lines = try #require(outputs["jsonl"]).split(separator: "\n").map { try CommandJSON.object($0) }
        let allRecords = changes.flatMap { ($0["records"] as? [[String: Any]]) ?? [] }
        #expect(lines.count == allRecords.reduce(0) { total, r in
            total + max(1, ((r["values"] ?? r["changes"]) as? [String: Any])?.count ?? 0)
        })
        let keys = RecordDiffColumns.jsonl
        #expect(lines.allSatisfy { Set($0.keys) == Set(keys) }, "every line has the same keys")
        var fromLines: [Int64: String] = [:]
        for line in lines where line["entity"] as? String == "Item" && line["change"] as? String == "deleted" && line["property"] as? String == "name" {
            #expect(line["commit"] as? Int == frames.count && line["from"] as? Int == 0)
            #expect(line["new"] is NSNull, "a deleted record has no new value")
            if let pk = line["pk"] as? Int, let name = line["old"] as? String { fromLines[Int64(pk)] = name }
        }
        #expect(fromLines == deleted)

        // CSV: one line per property, the last value in `old`.
        let csv = try #require(outputs["csv"]).components(separatedBy: "\r\n")
        #expect(csv.first == "path,from,commit,commitFrame,entity,table,pk,change,property,old,new")
        var fromCSV: [Int64: String] = [:]
        for line in csv.dropFirst() where line.contains(",Item,ZITEM,") && line.contains(",deleted,name,") {
            let cells = line.components(separatedBy: ",")
            if cells.count >= 11, let pk = Int64(cells[6]) { fromCSV[pk] = cells[9] }
        }
        #expect(fromCSV == deleted)

        // Text: the summary it always printed, then one line per record.
        let text = try #require(outputs["text"])
        #expect(text.contains("Item (ZITEM)\n    \(inserted.count) inserted, 0 updated, \(deleted.count) deleted"))
        for (pk, name) in deleted { #expect(text.contains("- Item#\(pk)  name \"\(name)\""), "Item#\(pk) \(name)") }
        #expect(try FolderSnapshot(store.deletingLastPathComponent()) == before, "the evidence must stay byte-identical")
    }

    @Test("--each on the genuine store: every commit against SQLite's view at that commit, with its history transactions", .enabled(if: ProjectPaths.hasRealFixtures, Comment(rawValue: ProjectPaths.realFixturesMissing)))
    func eachCommit() throws {
        let store = try #require(ProjectPaths.realFixtures()).appendingPathComponent("swiftdata-resources/default.store")
        let before = try FolderSnapshot(store.deletingLastPathComponent())
        let folder = try TemporaryFolder("diff-each")
        let frames = try WALCuts.commitFrames(store)
        let json = try CLI.run(["wal", store.path, "--diff", "--each", "--format", "json"])
        let jsonl = try CLI.run(["wal", store.path, "--diff", "--each", "--format", "jsonl"])
        let text = try CLI.run(["wal", store.path, "--diff", "--each"])
        let csv = try CLI.run(["wal", store.path, "--diff", "--each", "--format", "csv"])
        for result in [json, jsonl, text, csv] { #expect(result.status == 0, "stderr: \(result.stderr)") }
        let report = try CommandJSON.object(json.stdout)
        let commits = try #require((report["stores"] as? [[String: Any]])?.first?["commits"] as? [[String: Any]])
        #expect(commits.map { $0["commit"] as? Int } == Array(1...frames.count))
        #expect(commits.map { $0["commitFrame"] as? Int } == frames)
        let lines = jsonl.stdout.split(separator: "\n").map { line -> [String: Any]? in
            do { return try CommandJSON.object(line) } catch { Issue.record("\(error)"); return nil }
        }

        var previous = try WALCuts.sqlite(store, frames: 0, in: folder)
        var previousItems = try WALCuts.items(previous)
        var previousTransactions = Set(try previous.rows("SELECT Z_PK FROM ATRANSACTION").compactMap { $0[0].int64 })
        for (index, frame) in frames.enumerated() {
            let commit = index + 1
            let now = try WALCuts.sqlite(store, frames: frame, in: folder)
            let items = try WALCuts.items(now)
            let entry = commits[index]
            let changes = entry["changes"] as? [[String: Any]] ?? []
            let records = changes.first { $0["entity"] as? String == "Item" }?["records"] as? [[String: Any]] ?? []
            func names(_ kind: String) -> [Int64: String] {
                var out: [Int64: String] = [:]
                for r in records where r["change"] as? String == kind {
                    if let pk = r["pk"] as? Int, let name = (r["values"] as? [String: Any])?["name"] as? String { out[Int64(pk)] = name }
                }
                return out
            }
            #expect(names("deleted") == previousItems.filter { items[$0.key] == nil }, "commit \(commit)")
            #expect(names("inserted") == items.filter { previousItems[$0.key] == nil }, "commit \(commit)")
            // Renamed items: old → new, as SQLite shows them on either side.
            var renamed: [Int64: [String]] = [:]
            for r in records where r["change"] as? String == "updated" {
                if let pk = r["pk"] as? Int, let name = (r["changes"] as? [String: Any])?["name"] as? [String: Any],
                   let old = name["old"] as? String, let new = name["new"] as? String { renamed[Int64(pk)] = [old, new] }
            }
            let expectedRenames = Dictionary(uniqueKeysWithValues: items.compactMap { pk, name -> (Int64, [String])? in
                guard let was = previousItems[pk], was != name else { return nil }
                return (pk, [was, name])
            })
            #expect(renamed == expectedRenames, "commit \(commit) renames")
            // The transactions this commit wrote: the ATRANSACTION rows it inserted, with their bundle id.
            let transactions = Set(try now.rows("SELECT Z_PK FROM ATRANSACTION").compactMap { $0[0].int64 })
            let listed = entry["transactions"] as? [[String: Any]] ?? []
            #expect(Set(listed.compactMap { ($0["id"] as? Int).map(Int64.init) }) == transactions.subtracting(previousTransactions), "commit \(commit) transactions")
            for t in listed {
                let id = Int64(t["id"] as? Int ?? -1)
                let bundle = try now.scalar("""
                    SELECT COALESCE(s.ZNAME, t.ZBUNDLEID) FROM ATRANSACTION t LEFT JOIN ATRANSACTIONSTRING s ON s.Z_PK = t.ZBUNDLEIDTS WHERE t.Z_PK = ?
                    """, [.integer(id)]).string
                #expect(t["bundleID"] as? String == bundle, "commit \(commit) transaction \(id)")
            }
            // JSON Lines carry the same Item records, each with its commit: one line per changed property.
            let itemLines = lines.compactMap { $0 }.filter { $0["commit"] as? Int == commit && $0["entity"] as? String == "Item" }
            #expect(itemLines.count == records.reduce(0) { $0 + max(1, (($1["values"] ?? $1["changes"]) as? [String: Any])?.count ?? 0) }, "commit \(commit) jsonl")
            #expect(Set(itemLines.compactMap { line in (line["pk"] as? Int).map { "\($0) \(line["change"] as? String ?? "")" } })
                    == Set(records.compactMap { r in (r["pk"] as? Int).map { "\($0) \(r["change"] as? String ?? "")" } }), "commit \(commit) jsonl records")
            if !records.isEmpty { #expect(text.stdout.contains("\n  commit \(commit) ("), "commit \(commit) text") }
            previous = now
            previousItems = items
            previousTransactions = transactions
        }
        #expect(csv.stdout.hasPrefix("path,from,commit,commitFrame,entity,table,pk,change,property,old,new\r\n"))
        #expect(try FolderSnapshot(store.deletingLastPathComponent()) == before, "the evidence must stay byte-identical")
    }

    @Test("--each on the genuine store: every inserted and deleted record's values are what rows --as-of prints for that row", .enabled(if: ProjectPaths.hasRealFixtures, Comment(rawValue: ProjectPaths.realFixturesMissing)))
    func valuesAsRowsShowsThem() throws {
        let store = try #require(ProjectPaths.realFixtures()).appendingPathComponent("swiftdata-resources/default.store")
        let each = try CLI.run(["wal", store.path, "--diff", "--each", "--format", "jsonl"])
        #expect(each.status == 0, "stderr: \(each.stderr)")
        var rowsByState: [String: [Int: NSDictionary]] = [:]
        func rows(_ entity: String, asOf commit: Int) throws -> [Int: NSDictionary] {
            let key = "\(entity)@\(commit)"
            if let cached = rowsByState[key] { return cached }
            let result = try CLI.run(["rows", store.path, entity, "--as-of", String(commit), "--format", "json"])
            #expect(result.status == 0, "stderr: \(result.stderr)")
            var out: [Int: NSDictionary] = [:]
            for row in try CommandJSON.object(result.stdout)["rows"] as? [[String: Any]] ?? [] {
                if let pk = row["pk"] as? Int, let values = row["values"] as? NSDictionary { out[pk] = values }
            }
            rowsByState[key] = out
            return out
        }
        // One line per property: a record's values are its lines' `new` (inserted) or `old` (deleted).
        struct Record: Hashable { let commit: Int; let entity: String; let change: String; let pk: Int }
        var records: [Record: [String: Any]] = [:]
        var order: [Record] = []
        for line in each.stdout.split(separator: "\n") {
            let flat = try CommandJSON.object(String(line))
            guard let entity = flat["entity"] as? String, ["Item", "Component", "CraftingRecipe"].contains(entity),
                  let change = flat["change"] as? String, change != "updated",
                  let commit = flat["commit"] as? Int, let pk = flat["pk"] as? Int, let property = flat["property"] as? String else { continue }
            let key = Record(commit: commit, entity: entity, change: change, pk: pk)
            if records[key] == nil { order.append(key) }
            records[key, default: [:]][property] = change == "deleted" ? flat["old"] : flat["new"]
        }
        var compared = 0
        for key in order {
            let state = try rows(key.entity, asOf: key.change == "deleted" ? key.commit - 1 : key.commit)
            #expect(NSDictionary(dictionary: records[key] ?? [:]) == state[key.pk], "commit \(key.commit) \(key.change) \(key.entity)#\(key.pk)")
            compared += 1
        }
        #expect(compared > 0)
    }

    @Test("hostile values: terminal controls never reach the text, formula cells are neutralised in CSV, JSON keeps the bytes")
    func hostileValues() throws {
        let folder = try TemporaryFolder("diff-hostile")
        let url = folder.path("default.store")
        let writer = try StoreWriter(url: url, model: SampleModels.todo)
        try writer.transaction { w in _ = try w.insert("TodoList", ["name": .string("Home")]) }
        try writer.checkpoint()
        let title = "=HYPERLINK(\"http://x\")\u{1B}[2J\u{202E}"
        try writer.transaction { w in
            try w.insert("TodoItem", ["id": .uuid(UUID()), "title": .string(title), "createdAt": .date(Date(timeIntervalSince1970: 0)),
                                      "list": .object(entity: "TodoList", pk: 1)])
        }
        // Copy while the writer holds the store open, as a device copy is made.
        let evidence = folder.path("evidence")
        try FileManager.default.createDirectory(at: evidence, withIntermediateDirectories: true)
        for suffix in ["", "-wal"] { try FileManager.default.copyItem(atPath: url.path + suffix, toPath: evidence.path + "/default.store" + suffix) }
        try writer.close(leavingWAL: true)
        let input = evidence.appendingPathComponent("default.store")
        let snapshot = try FolderSnapshot(evidence)
        let stored = try Connection.open(path: url.path, mode: .readOnly).scalar("SELECT ZTITLE FROM ZTODOITEM").string

        for arguments in [["--diff"], ["--diff", "--each"]] {
            let text = try CLI.run(["wal", input.path] + arguments)
            #expect(text.status == 0, "stderr: \(text.stderr)")
            #expect(!text.stdout.unicodeScalars.contains { $0 == "\u{1B}" || $0 == "\u{202E}" })
            #expect(text.stdout.contains("+ TodoItem#1  "))
            let csv = try CLI.run(["wal", input.path, "--format", "csv"] + arguments)
            #expect(csv.stdout.contains(",inserted,title,,\"'=HYPERLINK(\"\"http://x\"\")"))
            let jsonl = try CLI.run(["wal", input.path, "--format", "jsonl"] + arguments)
            let line = try #require(jsonl.stdout.split(separator: "\n").map { try CommandJSON.object($0) }
                .first { $0["table"] as? String == "ZTODOITEM" && $0["property"] as? String == "title" })
            #expect(line["new"] as? String == stored)
            #expect(stored == title)
        }
        #expect(try FolderSnapshot(evidence) == snapshot, "the evidence must stay byte-identical")
    }

    @Test("usage: --each needs --diff and takes no --from/--to; jsonl and csv are for --diff")
    func usage() throws {
        for arguments in [["--each"], ["--diff", "--each", "--from", "1"], ["--diff", "--each", "--to", "2"], ["--format", "jsonl"], ["--format", "csv"],
                          ["--as-of", "1", "--out", "/tmp/never-written.sqlite", "--format", "csv"]] {
            let result = try CLI.run(["wal", "/nonexistent/default.store"] + arguments)
            #expect(result.status == 2, "\(arguments)")
            #expect(!result.stderr.isEmpty)
        }
    }
}

