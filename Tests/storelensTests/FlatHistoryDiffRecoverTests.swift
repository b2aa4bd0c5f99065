import Foundation
import SQLiteAccess
import StoreBuilder
import StoreTestSupport
import Testing

/// `history`, `wal --diff` and `recover` as flat records (jsonl and csv): loaded by sqlite-utils,
/// the loaded tables hold what each command's documented JSON document says, record for record.
@Suite("history, wal --diff, recover: flat exports loaded by sqlite-utils")
struct FlatHistoryDiffRecoverTests {
    static func run(_ arguments: [String]) throws -> String {
        let result = try CLI.run(arguments)
        #expect(result.status == 0, "\(arguments.joined(separator: " ")): \(result.stderr)")
        return result.stdout
    }

    /// Loads `text` with `sqlite-utils insert` (`--nl` or `--csv`) and returns the table's columns and rows.
    static func load(_ text: String, _ flag: String, name: String, in folder: TemporaryFolder) throws -> (columns: [String], rows: [Row]) {
        let tool = try #require(SQLiteUtils.executable)
        let file = folder.path("\(name).in")
        try Data(text.utf8).write(to: file)
        let db = folder.path("\(name).db")
        let insert = SQLiteUtils.run(tool, ["insert", db.path, "t", file.path, flag])
        #expect(insert.status == 0, "sqlite-utils insert \(flag): \(insert.stderr)")
        let connection = try Connection.open(path: db.path, mode: .readOnly)
        return (try connection.columns(of: "t").map(\.name), try connection.rows("SELECT * FROM t ORDER BY rowid"))
    }

    /// A JSON value as sqlite-utils stores it from JSON Lines, and as our csv writes it: text as
    /// it is, numbers as their digits, arrays and objects as JSON text (compared parsed).
    static func same(_ loaded: DatabaseValue, _ expected: Any?) -> Bool {
        switch expected {
        case nil, is NSNull: return loaded == .null || loaded.string == ""
        // sqlite-utils types csv cells that look like numbers (`1080` becomes 1080).
        case let s as String: return loaded.string == s || loaded.int64.map(String.init) == s
        case let n as NSNumber:
            if case .real(let d) = loaded { return abs(d - n.doubleValue) <= 1e-9 * max(1, abs(n.doubleValue)) }
            // A column of mixed types gets TEXT affinity: SQLite writes a real there with 15 digits.
            if case .text(let s) = loaded, let d = Double(s), s.contains(".") || s.contains("e") {
                return abs(d - n.doubleValue) <= 1e-9 * max(1, abs(n.doubleValue))
            }
            if let i = loaded.int64 { return NSNumber(value: i) == n }
            if let d = loaded.double { return d == n.doubleValue }
            if let s = loaded.string { return s == n.stringValue || Double(s) == n.doubleValue || (s == "true") == n.boolValue && (s == "true" || s == "false") }
            return false
        case let other?:
            guard let text = loaded.string, let parsed = try? JSONSerialization.jsonObject(with: Data(text.utf8)) else { return false }
            return JSONText.same(parsed, other)
        }
    }

    @Test("history: jsonl and csv, one record per change with its transaction's columns, load to the rows of history --format json",
          .enabled(if: SQLiteUtils.available, Comment(rawValue: SQLiteUtils.unavailable)))
    func history() throws {
        let folder = try TemporaryFolder("flat-history")
        let store = try ShelfStores.withHistoryInWAL(in: folder)
        let before = try FolderSnapshot(folder.url)
        let document = try #require(try JSONSerialization.jsonObject(with: Data(try Self.run(["history", store.path, "--format", "json"]).utf8)) as? [String: Any])
        let transactions = try #require(document["transactions"] as? [[String: Any]])
        // The expected flat records, from the JSON document alone.
        var expected: [[String: Any?]] = []
        for t in transactions {
            let lead: [String: Any?] = ["path": store.path, "transaction": t["id"], "timestamp": t["timestamp"], "author": t["author"], "bundleID": t["bundleID"],
                                        "processName": t["processName"], "contextName": t["contextName"]]
            let changes = t["changes"] as? [[String: Any]] ?? []
            if changes.isEmpty { expected.append(lead) }
            for c in changes {
                expected.append(lead.merging(["change": c["type"], "entity": c["entity"], "pk": c["pk"], "updatedProperties": c["updatedProperties"],
                                              "columns": c["columns"], "columnsNote": c["columnsNote"], "tombstone": c["tombstoneValues"]]) { $1 })
            }
        }
        #expect(expected.count >= 6, "inserts, updates and a delete")
        #expect(expected.contains { ($0["updatedProperties"] as? [String])?.contains("title") == true }, "an update names its properties")
        let columns = ["path", "transaction", "timestamp", "author", "bundleID", "processName", "contextName",
                       "change", "entity", "pk", "updatedProperties", "columns", "columnsNote", "tombstone"]
        for (format, flag) in [("jsonl", "--nl"), ("csv", "--csv")] {
            let loaded = try Self.load(try Self.run(["history", store.path, "--format", format]), flag, name: "history-\(format)", in: folder)
            #expect(loaded.columns == columns, "\(format): the documented columns, in order")
            #expect(loaded.rows.count == expected.count, "\(format): one row per change")
            for (row, want) in zip(loaded.rows, expected) {
                for column in columns {
                    #expect(Self.same(row[column], want[column] ?? nil), "\(format) \(column): loaded \(row[column]), history --format json says \(String(describing: want[column] ?? nil))")
                }
            }
        }
        #expect(try FolderSnapshot(folder.url).entries.filter { before.entries[$0.key] != nil } == before.entries, "the store stays byte-identical")
    }

    @Test("wal --diff --each: jsonl and csv load to the same table, one row per changed property, the values of --format json's records",
          .enabled(if: SQLiteUtils.available, Comment(rawValue: SQLiteUtils.unavailable)))
    func walDiff() throws {
        let folder = try TemporaryFolder("flat-diff")
        let store = try ShelfStores.withHistoryInWAL(in: folder)
        let document = try #require(try JSONSerialization.jsonObject(with: Data(try Self.run(["wal", store.path, "--diff", "--each", "--format", "json"]).utf8)) as? [String: Any])
        let commits = try #require((document["stores"] as? [[String: Any]])?.first?["commits"] as? [[String: Any]])
        #expect(commits.count >= 2)
        var expected: [[String: Any?]] = []
        for commit in commits {
            for group in commit["changes"] as? [[String: Any]] ?? [] {
                for r in group["records"] as? [[String: Any]] ?? [] {
                    let change = r["change"] as? String
                    let lead: [String: Any?] = ["path": store.path, "from": commit["from"], "commit": commit["to"], "commitFrame": commit["commitFrame"],
                                                "entity": group["entity"], "table": group["table"], "pk": r["pk"], "change": change]
                    var cells: [(String, Any?, Any?)] = []
                    if change == "updated" {
                        for (name, pair) in r["changes"] as? [String: [String: Any]] ?? [:] {
                            let entry: (String, Any?, Any?) = (name, pair["old"], pair["new"])
                            cells.append(entry)
                        }
                    } else {
                        for (name, value) in r["values"] as? [String: Any] ?? [:] {
                            let entry: (String, Any?, Any?) = change == "inserted" ? (name, nil, value) : (name, value, nil)
                            cells.append(entry)
                        }
                    }
                    if cells.isEmpty { cells = [("", nil, nil)] }
                    for (name, old, new) in cells { expected.append(lead.merging(["property": name.isEmpty ? nil : name, "old": old, "new": new]) { $1 }) }
                }
            }
        }
        #expect(expected.contains { $0["change"] as? String == "deleted" && $0["property"] as? String == "title" && $0["old"] as? String == "=1+1" })
        #expect(expected.contains { $0["change"] as? String == "updated" && $0["property"] as? String == "title" && $0["new"] as? String == "renamed" })
        func key(_ r: [String: Any?]) -> String {
            ["commit", "table", "pk", "change", "property"].map { "\(($0 == "pk" ? (r[$0] ?? nil).map { "\($0)" } : (r[$0] ?? nil) as? String ?? ((r[$0] ?? nil).map { "\($0)" })) ?? "")" }.joined(separator: "|")
        }
        let columns = RecordDiffColumns.jsonl
        for (format, flag, extra) in [("jsonl", "--nl", [String]()), ("csv", "--csv", [])] {
            let loaded = try Self.load(try Self.run(["wal", store.path, "--diff", "--each", "--format", format] + extra), flag, name: "diff-\(format)", in: folder)
            #expect(loaded.columns == (format == "csv" ? Array(columns.dropLast()) : columns), "\(format): the documented columns")
            #expect(loaded.rows.count == expected.count, "\(format): one row per changed property")
            var byKey: [String: [String: Any?]] = [:]
            for e in expected { byKey[key(e)] = e }
            // Tables matched on another key than Z_PK (Z_PRIMARYKEY) carry it as text: counted, not matched here.
            let keyed = Set(expected.filter { ($0["pk"] ?? nil) == nil }.compactMap { ($0["table"] ?? nil) as? String })
            for row in loaded.rows where !keyed.contains(row["table"].string ?? "") {
                let found: [String: Any?] = Dictionary(uniqueKeysWithValues: ["commit", "table", "pk", "change", "property"].map { c in
                    (c, row[c].int64.map { "\($0)" } ?? row[c].string.flatMap { $0.isEmpty ? nil : $0 } as Any?)
                })
                let want = try #require(byKey[key(found)], "\(format): a row the JSON document does not have: \(found)")
                // Values of model entities are compared (other tables' blobs are summaries in csv).
                let columns = (want["entity"] ?? nil) == nil ? ["path", "from", "commitFrame", "entity"] : ["path", "from", "commitFrame", "entity", "old", "new"]
                for column in columns {
                    // csv cells: a formula gets its leading ' (as rows does), the JSON keeps the bytes.
                    var value = want[column] ?? nil
                    if format == "csv", let s = value as? String, s.hasPrefix("=") { value = "'" + s }
                    // csv cells of bytes are their summary (`<2 bytes 1080>`), as rows' csv has them.
                    if format == "csv", value is [String: Any] { continue }
                    #expect(Self.same(row[column], value), "\(format) \(key(found)) \(column): loaded \(row[column]), --format json says \(String(describing: value))")
                }
            }
        }
    }

    @Test("recover --format jsonl: one flat object per version that loads into the columns and values recover --out writes",
          .enabled(if: SQLiteUtils.available, Comment(rawValue: SQLiteUtils.unavailable)))
    func recover() throws {
        let folder = try TemporaryFolder("flat-recover")
        let store = try ShelfStores.withHistoryInWAL(in: folder)
        let loaded = try Self.load(try Self.run(["recover", store.path, "--entity", "Entry", "--format", "jsonl"]), "--nl", name: "recover", in: folder)
        let out = folder.path("recovered.sqlite")
        _ = try Self.run(["recover", store.path, "--entity", "Entry", "--out", out.path])
        let written = try Connection.open(path: out.path, mode: .readOnly)
        let table = try written.rows("SELECT * FROM \"Entry\" ORDER BY _pk, _first_commit")
        let sorted = loaded.rows.sorted { ($0["_pk"].int64 ?? 0, $0["_first_commit"].int64 ?? 0) < ($1["_pk"].int64 ?? 0, $1["_first_commit"].int64 ?? 0) }
        #expect(table.count == sorted.count && sorted.count >= 4, "every version: \(sorted.count) loaded, \(table.count) in --out")
        #expect(Set(sorted.map { $0["_state"].string ?? "" }) == ["live", "superseded", "deleted"])
        // The property `_entity` is `__entity` in jsonl (its `_entity` is the entity), `_entity` in --out.
        let shared = try written.columns(of: "Entry").map(\.name).filter { !["_store", "_transactions", "_sources"].contains($0) }
        let key = { (column: String) in column == "_entity" ? "__entity" : column }
        #expect(Set(shared.map(key)).isSubset(of: Set(loaded.columns)), "the --out columns are jsonl keys: \(shared) vs \(loaded.columns)")
        #expect(sorted.allSatisfy { $0["_entity"].string == "Entry" })
        for (line, row) in zip(sorted, table) {
            for column in shared {
                #expect(line[key(column)] == row[column], "\(column): jsonl \(line[key(column)]), --out \(row[column])")
            }
        }
    }
}
