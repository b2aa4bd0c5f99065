import Foundation
import SQLiteAccess
import StoreBuilder
import StoreTestSupport
import Testing

/// `rows --format jsonl|array|csv|tsv`: flat records that the data tools load as one row per
/// record, with the values SQLite itself holds, decoded as the model says.
@Suite("rows: flat exports loaded by sqlite-utils")
struct FlatExportTests {
    /// A value as the model decodes it, from SQLite's reading of a copy.
    enum Expected: Equatable {
        case null, integer(Int64), double(Double), bool(Bool), text(String), date(Double)
    }

    /// The keys of a flat object, in order: the reserved two, then the document's `fields`
    /// (the model's property order) with a leading `_` doubled.
    static func keys(_ store: URL) throws -> [String] {
        let json = try CLI.run(["rows", store.path, "Entry", "--format", "json", "--limit", "0"])
        let document = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        let fields = try #require(document["fields"] as? [String])
        #expect(Set(fields) == ["id", "title", "count", "score", "done", "at", "notes", "_entity", "shelf"])
        return ["_entity", "_pk"] + fields.map { $0.hasPrefix("_") ? "_" + $0 : $0 }
    }

    /// Every Entry row keyed by `_pk`, decoded from SQLite on a copy of the store.
    static func truth(_ store: URL, in folder: TemporaryFolder) throws -> [Int64: [String: Expected]] {
        let copy = folder.path("truth-copy.sqlite")
        try FileManager.default.copyItem(at: store, to: copy)
        let db = try Connection.open(path: copy.path, mode: .readOnly)
        let rows = try db.rows("SELECT Z_PK, ZID, ZTITLE, ZCOUNT, ZSCORE, ZDONE, ZAT, ZNOTES, Z_ENTITY, ZSHELF FROM ZENTRY ORDER BY Z_PK")
        #expect(rows.count == 3)
        var out: [Int64: [String: Expected]] = [:]
        for row in rows {
            let pk = try #require(row["Z_PK"].int64)
            func text(_ v: DatabaseValue) -> Expected { v.string.map(Expected.text) ?? .null }
            let id = try #require(row["ZID"].data)
            #expect(id.count == 16)
            let uuid = UUID(uuid: id.withUnsafeBytes { $0.loadUnaligned(as: uuid_t.self) })
            out[pk] = [
                "_entity": .text("Entry"), "_pk": .integer(pk), "id": .text(uuid.uuidString), "title": text(row["ZTITLE"]),
                "count": row["ZCOUNT"].int64.map(Expected.integer) ?? .null, "score": row["ZSCORE"].double.map(Expected.double) ?? .null,
                "done": row["ZDONE"].int64.map { .bool($0 != 0) } ?? .null,
                // Core Data's dates: seconds since 2001-01-01 UTC.
                "at": row["ZAT"].double.map { .date($0 + 978_307_200) } ?? .null,
                "notes": text(row["ZNOTES"]), "__entity": text(row["Z_ENTITY"]),
                "shelf": row["ZSHELF"].int64.map { .text("Shelf#\($0)") } ?? .null,
            ]
        }
        return out
    }

    /// Whether a value sqlite-utils stored is the expected one. `typed`: loaded from JSON (numbers
    /// and Booleans keep their type); otherwise from CSV/TSV, where every cell is text.
    static func matches(_ loaded: DatabaseValue, _ expected: Expected, typed: Bool) -> Bool {
        if !typed, case .text(let cell) = loaded {
            switch expected {
            case .null: return cell.isEmpty
            case .integer(let i): return cell == String(i)
            case .double(let d): return Double(cell) == d
            case .bool(let b): return cell == (b ? "true" : "false")
            case .text(let s): return cell == s
            case .date(let s): return ISOTimestamps.seconds(cell).map { abs($0 - s) < 1e-6 } ?? false
            }
        }
        switch expected {
        case .null: return loaded == .null
        case .integer(let i): return loaded.int64 == i
        case .double(let d): return loaded.double == d
        case .bool(let b): return loaded.int64 == (b ? 1 : 0)
        case .text(let s): return loaded.string == s
        case .date(let s): return loaded.string.flatMap(ISOTimestamps.seconds).map { abs($0 - s) < 1e-6 } ?? false
        }
    }

    @Test("jsonl, array, csv and tsv load with sqlite-utils into the values SQLite holds, decoded by the model",
          .enabled(if: SQLiteUtils.available, Comment(rawValue: SQLiteUtils.unavailable)))
    func loadedBySQLiteUtils() throws {
        let tool = try #require(SQLiteUtils.executable)
        let folder = try TemporaryFolder("flat-export")
        let store = try ShelfStores.flat(in: folder)
        let before = try FolderSnapshot(folder.url)
        let truth = try Self.truth(store, in: folder)
        let keys = try Self.keys(store)
        let evidence = try FolderSnapshot(folder.url).entries.filter { before.entries[$0.key] != nil }
        // csv and tsv name the reserved columns `entity` and `pk`, as csv always has.
        let csvNames = ["_entity": "entity", "_pk": "pk", "__entity": "_entity"]
        for (format, flag, extra, typed) in [("jsonl", "--nl", [String](), true), ("array", nil, [], true),
                                             ("csv", "--csv", ["--raw-csv"], false), ("tsv", "--tsv", ["--raw-csv"], false)] {
            let result = try CLI.run(["rows", store.path, "Entry", "--format", format] + extra)
            #expect(result.status == 0, "\(format): \(result.stderr)")
            let file = folder.path("rows.\(format)")
            try Data(result.stdout.utf8).write(to: file)
            let db = folder.path("\(format).db")
            let insert = SQLiteUtils.run(tool, ["insert", db.path, "rows", file.path] + (flag.map { [$0] } ?? []))
            #expect(insert.status == 0, "sqlite-utils insert (\(format)): \(insert.stderr)")
            let loaded = try Connection.open(path: db.path, mode: .readOnly)
            let columns = try loaded.columns(of: "rows").map(\.name)
            let names = keys.map { typed ? $0 : (csvNames[$0] ?? $0) }
            #expect(columns == names, "\(format): one column per key, in order")
            let pkColumn = typed ? "_pk" : "pk"
            let rows = try loaded.rows("SELECT * FROM rows ORDER BY CAST(\(Identifier.quoted(pkColumn)) AS INTEGER)")
            #expect(rows.count == truth.count, "\(format): one table row per store row")
            for row in rows {
                let pk = try #require(row[pkColumn].int64 ?? row[pkColumn].string.flatMap { Int64($0) }, "\(format): pk")
                let expected = try #require(truth[pk], "\(format): no row \(pk) in the store")
                for (key, name) in zip(keys, names) {
                    let value = try #require(expected[key])
                    #expect(Self.matches(row[name], value, typed: typed), "\(format) row \(pk) \(key): loaded \(row[name]), SQLite says \(value)")
                }
            }
        }
        // Without --raw-csv, tsv protects formula cells and escapes controls exactly as csv does.
        let safe = try CLI.run(["rows", store.path, "Entry", "--format", "tsv"])
        let file = folder.path("safe.tsv")
        try Data(safe.stdout.utf8).write(to: file)
        let insert = SQLiteUtils.run(tool, ["insert", folder.path("safe.db").path, "rows", file.path, "--tsv"])
        #expect(insert.status == 0, "\(insert.stderr)")
        let titles = try Connection.open(path: folder.path("safe.db").path, mode: .readOnly)
            .rows("SELECT title FROM rows ORDER BY CAST(pk AS INTEGER)").compactMap { $0[0].string }
        #expect(titles.count == 3 && titles.first?.hasPrefix("'") == true && titles.dropFirst() == ["-12.5", "plain"], "a formula gets a leading ', a plain number does not")
        #expect(titles.first.map { OutputEscaping.unescape(String($0.dropFirst())) } == ShelfStores.hostileTitle, "its tab and line break escaped: \(titles)")
        #expect(try FolderSnapshot(folder.url).entries.filter { evidence[$0.key] != nil } == evidence, "the store stays byte-identical")
    }

    @Test("jsonl: every line is a flat object with every key; values are what --format json writes; array is the same objects")
    func flatLines() throws {
        let folder = try TemporaryFolder("flat-lines")
        let store = try ShelfStores.flat(in: folder)
        let jsonl = try CLI.run(["rows", store.path, "Entry", "--format", "jsonl"])
        let array = try CLI.run(["rows", store.path, "Entry", "--format", "array"])
        let json = try CLI.run(["rows", store.path, "Entry", "--format", "json"])
        for r in [jsonl, array, json] { #expect(r.status == 0, "\(r.stderr)") }
        let keys = try Self.keys(store)
        let lines = try jsonl.stdout.split(separator: "\n").map { try CommandJSON.object($0) }
        let document = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        let rows = try #require(document["rows"] as? [[String: Any]])
        #expect(document["schemaVersion"] as? Int == 1, "the json document keeps its shape and version")
        #expect(lines.count == rows.count && lines.count == 3)
        for (line, row) in zip(lines, rows) {
            #expect(line.keys.sorted() == keys.sorted(), "every key, none nested under values: \(line.keys)")
            #expect(line.values.allSatisfy { !($0 is [String: Any]) && !($0 is [Any]) }, "flat: no nested objects here")
            #expect(line["_entity"] as? String == row["entity"] as? String)
            #expect(line["_pk"] as? Int == row["pk"] as? Int)
            let values = try #require(row["values"] as? [String: Any])
            for (name, value) in values {
                let key = name.hasPrefix("_") ? "_" + name : name
                #expect((line[key] as? NSObject) == (value as? NSObject), "\(key): jsonl \(line[key] ?? "absent"), json \(value)")
            }
        }
        // Keys keep the documented order: the reserved ones, then the fields.
        let firstLine = try #require(jsonl.stdout.split(separator: "\n").first)
        let positions = keys.map { firstLine.range(of: "\"\($0)\":")?.lowerBound }
        #expect(positions.allSatisfy { $0 != nil } && positions.compactMap { $0 } == positions.compactMap { $0 }.sorted())
        // array: one JSON document holding exactly the jsonl objects.
        let items = try #require(try JSONSerialization.jsonObject(with: Data(array.stdout.utf8)) as? [[String: Any]])
        #expect(items.map { $0 as NSDictionary } == lines.map { $0 as NSDictionary })
        // No rows: still one valid document, and no jsonl lines.
        let none = try CLI.run(["rows", store.path, "Entry", "--format", "array", "--limit", "0"])
        #expect(none.status == 0 && none.stdout == "[]\n", "\(none.stdout.debugDescription)")
        let noLines = try CLI.run(["rows", store.path, "Entry", "--format", "jsonl", "--limit", "0"])
        #expect(noLines.status == 0 && noLines.stdout.isEmpty)
    }

    @Test("tsv: tabs and newlines inside a value never split a field or a record; --raw-csv works for tsv and nowhere but csv/tsv")
    func tsvQuoting() throws {
        let folder = try TemporaryFolder("flat-tsv")
        let store = try ShelfStores.flat(in: folder)
        let raw = try CLI.run(["rows", store.path, "Entry", "--format", "tsv", "--raw-csv"])
        #expect(raw.status == 0, "\(raw.stderr)")
        let header = try #require(raw.stdout.split(separator: "\n").first)
        let keys = try Self.keys(store)
        let csvNames = ["_entity": "entity", "_pk": "pk", "__entity": "_entity"]
        #expect(header.split(separator: "\t", omittingEmptySubsequences: false).map(String.init) == keys.map { csvNames[$0] ?? $0 })
        let quoted = "\"" + ShelfStores.hostileTitle.replacingOccurrences(of: "\"", with: "\"\"") + "\""
        #expect(raw.stdout.contains("\t" + quoted + "\t"), "the value is one quoted field with its quotes doubled")
        // Records: the header and three rows; only the quoted value holds a newline.
        #expect(raw.stdout.replacingOccurrences(of: quoted, with: "Q").split(separator: "\n").count == 4)
        let misuse = try CLI.run(["rows", store.path, "Entry", "--format", "jsonl", "--raw-csv"])
        #expect(misuse.status == 2 && misuse.stderr.contains("--raw-csv is for --format csv or tsv"), "\(misuse.stderr)")
    }

    @Test("a hierarchy: Book, Audiobook and Film rows of Media have the same keys, a sibling's property is null, and load as one table",
          .enabled(if: SQLiteUtils.available, Comment(rawValue: SQLiteUtils.unavailable)))
    func subentitiesShareColumns() throws {
        let tool = try #require(SQLiteUtils.executable)
        let folder = try TemporaryFolder("flat-hierarchy")
        let url = folder.path("Library.sqlite")
        try LibraryStore.write(url)
        let json = try CLI.run(["rows", url.path, "Media", "--format", "json"])
        let jsonl = try CLI.run(["rows", url.path, "Media", "--format", "jsonl"])
        #expect(json.status == 0 && jsonl.status == 0, "\(json.stderr) \(jsonl.stderr)")
        let document = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        let fields = try #require(document["fields"] as? [String])
        let rows = try #require(document["rows"] as? [[String: Any]])
        let lines = try jsonl.stdout.split(separator: "\n").map { try CommandJSON.object($0) }
        #expect(Set(lines.compactMap { $0["_entity"] as? String }) == ["Book", "Audiobook", "Film"])
        #expect(lines.count == rows.count)
        for (line, row) in zip(lines, rows) {
            #expect(line.keys.sorted() == (["_entity", "_pk"] + fields).sorted(), "every line has every field")
            // A sibling's label is `Entity.name` (Film.summary beside Book's summary); json keys by name.
            let values = try #require(row["values"] as? [String: Any])
            let entity = try #require(row["entity"] as? String)
            var named: [String: NSObject] = [:]
            for field in fields {
                let parts = field.split(separator: ".", maxSplits: 1).map(String.init)
                // An owner column (`Shelf.items`) is keyed by its label in json too.
                let name = values[field] != nil || parts.count < 2 ? field : parts[1]
                let value = try #require(line[field] as? NSObject)
                if name != field && parts[0] != entity || values[name] == nil {
                    #expect(value is NSNull, "\(entity) has no \(field): null in the flat line")
                } else {
                    named[name] = value
                }
            }
            #expect(named as NSDictionary == values as NSDictionary, "\(entity): the flat line holds the json values")
        }
        let file = folder.path("media.jsonl")
        try Data(jsonl.stdout.utf8).write(to: file)
        let db = folder.path("media.db")
        let insert = SQLiteUtils.run(tool, ["insert", db.path, "media", file.path, "--nl"])
        #expect(insert.status == 0, "\(insert.stderr)")
        let loaded = try Connection.open(path: db.path, mode: .readOnly)
        #expect(try loaded.columns(of: "media").map(\.name) == ["_entity", "_pk"] + fields)
        #expect(try loaded.rows("SELECT _entity FROM media ORDER BY _pk").compactMap { $0[0].string } == rows.compactMap { $0["entity"] as? String })
    }
}
