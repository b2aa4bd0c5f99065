import Foundation
import SQLiteAccess
import StoreBuilder
import StoreFormats
import StoreTestSupport
import Testing

/// One very long value in one row: `rows` (every format) and `export` write it whole and exactly,
/// and their peak memory stays well under the value's size (a value is read in pieces of 1 MiB;
/// the old code held several copies of it: 1.2 GB for a 100 MB text in a table of 7 rows).
@Suite("memory is bound by the output, not by one long value", .serialized)
struct LongValueMemoryTests {
    /// The long text's parts: multi-byte characters that 1 MiB pieces split, quotes, commas and
    /// line breaks CSV must quote, and one invalid UTF-8 byte (printed as U+FFFD, as before).
    static let unit = "€😀é\"x,\n"
    static let repeats = 11_000_000  // 13 bytes each: a text of about 143 MB
    static let peakLimitKiB = 100 * 1024

    /// The demo container with the long text in `TodoItem` 2's notes, checkpointed into the
    /// store; and the text as SQLite gives it (decoded as storelens decodes stored text).
    static func makeStore(_ folder: TemporaryFolder) throws -> (store: String, text: String) {
        try DemoContainer.write(into: folder.url)
        let store = folder.url.appendingPathComponent("Library/Application Support/default.store").path
        let connection = try Connection.open(path: store, mode: .readWrite)
        try connection.run("UPDATE ZTODOITEM SET ZNOTES = 'Notes start ' || replace(printf('%.*c', ?, 'a'), 'a', ?) || CAST(x'ff' AS TEXT) || 'end' WHERE Z_PK = 2",
                           [.integer(Int64(repeats)), .text(unit)])
        try connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        let text = try #require(try connection.scalar("SELECT ZNOTES FROM ZTODOITEM WHERE Z_PK = 2").string)
        let bytes = try connection.scalar("SELECT length(CAST(ZNOTES AS BLOB)) FROM ZTODOITEM WHERE Z_PK = 2").int ?? 0
        #expect(bytes > 100_000_000, "the value is long: \(bytes) bytes")
        return (store, text)
    }

    /// Runs storelens with stdout into `output`; its peak resident memory in KiB (GNU time's
    /// `%M`), or nil where there is no GNU time to measure it with.
    static func run(_ arguments: [String], output: URL) throws -> (outcome: CLI.Outcome, peakKiB: Int?) {
        let measure = FileManager.default.isExecutableFile(atPath: "/usr/bin/time") && isLinux
        let peakFile = output.appendingPathExtension("peak")
        let script = measure ? "out=$1; peak=$2; shift 2; exec /usr/bin/time -f %M -o \"$peak\" \"$@\" > \"$out\""
                             : "out=$1; shift 2; exec \"$@\" > \"$out\""
        let outcome = try CLI.bounded(["-c", script, "sh", output.path, peakFile.path, ProjectPaths.executable().path] + arguments,
                                      timeout: 600, executable: URL(fileURLWithPath: "/bin/sh"))
        guard measure else { return (outcome, nil) }
        let text = (try? String(contentsOf: peakFile, encoding: .utf8)) ?? ""
        return (outcome, text.split(separator: "\n").last.flatMap { Int($0.trimmingCharacters(in: .whitespaces)) })
    }

    static var isLinux: Bool {
        #if os(Linux)
        return true
        #else
        return false
        #endif
    }

    static func expectBounded(_ peak: Int?, _ what: String) {
        guard let peak else {
            print("\(what): peak memory not measured (no GNU time on this system)")
            return
        }
        #expect(peak < peakLimitKiB, "\(what): peak \(peak) KiB, the bound is \(peakLimitKiB) KiB")
    }

    /// Reads row 2's notes with SQLite (invalid UTF-8 as U+FFFD, as storelens shows it) and checks
    /// that the jsonl line and the json document's row hold exactly that text, and the csv cell
    /// that text with its control characters escaped, as a short cell's are.
    static let outputOracle = #"""
    import csv, json, sqlite3, sys
    store, jsonl, document, table = sys.argv[1:5]
    connection = sqlite3.connect("file:" + store + "?mode=ro", uri=True)
    connection.text_factory = lambda raw: raw.decode("utf-8", "replace")
    text = connection.execute("SELECT ZNOTES FROM ZTODOITEM WHERE Z_PK = 2").fetchone()[0]
    problems = []
    if len(text.encode()) < 100_000_000: problems.append("the text is short: %d bytes" % len(text.encode()))
    with open(jsonl, encoding="utf-8") as f: lines = [json.loads(line) for line in f]
    if len(lines) != 7: problems.append("jsonl: %d lines, not 7" % len(lines))
    if [line.get("notes") for line in lines if line.get("_pk") == 2] != [text]: problems.append("jsonl: row 2's notes are not SQLite's text")
    with open(document, encoding="utf-8") as f: rows = json.load(f)["rows"]
    if [row["values"].get("notes") for row in rows if row.get("pk") == 2] != [text]: problems.append("json: row 2's notes are not SQLite's text")
    csv.field_size_limit(sys.maxsize)
    with open(table, encoding="utf-8", newline="") as f: records = list(csv.reader(f))
    header = records[0]
    cells = [record[header.index("notes")] for record in records[1:] if record[header.index("pk")] == "2"]
    # A CSV cell's control characters are escaped (docs/rows.md): here only its line breaks are
    # (the oracle says so if the text holds any other), and each backslash is doubled.
    others = [c for c in set(text) if c != "\n" and (ord(c) < 0x20 or 0x7f <= ord(c) <= 0x9f or ord(c) in (0x61c, 0x2028, 0x2029)
                                                    or 0x200e <= ord(c) <= 0x200f or 0x202a <= ord(c) <= 0x202e or 0x2066 <= ord(c) <= 0x2069)]
    if others: problems.append("the oracle does not escape %r" % others)
    if cells != [text.replace("\\", "\\\\").replace("\n", "\\u000a")]: problems.append("csv: row 2's notes cell is not SQLite's text, escaped")
    print("\n".join(problems) if problems else "ok")
    """#

    @Test("rows --format jsonl, json, csv and table: the long text exactly (or its first characters in a table), in under 100 MB")
    func rowsFormats() throws {
        let folder = try TemporaryFolder("long-value-rows")
        let (store, text) = try Self.makeStore(folder)

        let jsonl = folder.path("rows.jsonl")
        let (ranL, peakL) = try Self.run(["rows", store, "TodoItem", "--format", "jsonl"], output: jsonl)
        #expect(ranL.status == 0, "\(ranL.stderr)")
        Self.expectBounded(peakL, "rows --format jsonl")

        let json = folder.path("rows.json")
        let (ranJ, peakJ) = try Self.run(["rows", store, "TodoItem", "--format", "json"], output: json)
        #expect(ranJ.status == 0, "\(ranJ.stderr)")
        Self.expectBounded(peakJ, "rows --format json")

        let csv = folder.path("rows.csv")
        let (ranC, peakC) = try Self.run(["rows", store, "TodoItem", "--format", "csv"], output: csv)
        #expect(ranC.status == 0, "\(ranC.stderr)")
        Self.expectBounded(peakC, "rows --format csv")

        // Python's json and csv readers, against SQLite's own text: independent of our decoding, and
        // a second or two where the same parsing in a debug build of the tests took half a minute.
        let oracle = try CLI.bounded(["python3", "-c", Self.outputOracle, store, jsonl.path, json.path, csv.path],
                                     timeout: 600, executable: URL(fileURLWithPath: "/usr/bin/env"))
        #expect(oracle.status == 0 && oracle.stdout == "ok\n", "\(oracle.stdout)\(oracle.stderr)")

        let table = folder.path("rows.txt")
        let (ranT, peakT) = try Self.run(["rows", store, "TodoItem"], output: table)
        #expect(ranT.status == 0, "\(ranT.stderr)")
        Self.expectBounded(peakT, "rows (table)")
        let shown = String(decoding: try Data(contentsOf: table), as: UTF8.self)
        // A cell is cut at 60 characters; the value's line breaks show as U+FFFD.
        let expected = String(text.unicodeScalars.prefix(200).map { Character($0.value < 0x20 ? "\u{FFFD}" : $0) }).prefix(59) + "…"
        #expect(shown.contains(String(expected)), "\(shown.prefix(2000))")
        #expect(shown.utf8.count < 10_000)
    }

    @Test("export: the long text in _storelens_long_text, byte for byte SQLite's, in under 100 MB")
    func export() throws {
        let folder = try TemporaryFolder("long-value-export")
        let (store, text) = try Self.makeStore(folder)
        let out = folder.path("export.sqlite")
        let (ran, peak) = try Self.run(["export", store, "--out", out.path], output: folder.path("export.txt"))
        #expect(ran.status == 0, "\(ran.stderr)")
        Self.expectBounded(peak, "export")
        let exported = try Connection.open(path: out.path, mode: .readOnly)
        let stored = try exported.rows("SELECT entity_table, \"column\", _pk, value FROM _storelens_long_text")
        #expect(stored.count == 1)
        #expect(stored.first?[0].string == "TodoItem" && stored.first?[1].string == "notes" && stored.first?[2].int64 == 2)
        #expect(stored.first?[3].data == Data(text.utf8), "the UTF-8 of SQLite's text")
        let note = try exported.scalar("SELECT notes FROM TodoItem WHERE _pk = 2").string
        #expect(note == "<text of \(text.utf8.count - 2) bytes in _storelens_long_text>", "the stored length: the invalid byte is one, its U+FFFD three")
    }

    @Test("recover (and wal --diff) on two long texts in WAL commits: each version's size and SHA-256 are SQLite's, in under 100 MB")
    func recover() throws {
        let folder = try TemporaryFolder("long-value-recover")
        try DemoContainer.write(into: folder.url)
        let store = folder.url.appendingPathComponent("Library/Application Support/default.store").path
        var texts: [String] = []
        do {
            let connection = try Connection.open(path: store, mode: .readWrite)
            try connection.execute("PRAGMA wal_autocheckpoint = 0")
            try connection.disableCheckpointOnClose()
            for (word, count) in [("first ", 60_000_000), ("second ", 70_000_000)] {
                try connection.run("UPDATE ZTODOITEM SET ZNOTES = ? || printf('%.*c', ?, 'y') WHERE Z_PK = 2", [.text(word), .integer(Int64(count))])
                texts.append(try #require(try connection.scalar("SELECT ZNOTES FROM ZTODOITEM WHERE Z_PK = 2").string))
            }
        }
        let wal = try #require(try FileManager.default.attributesOfItem(atPath: store + "-wal")[.size] as? NSNumber).intValue
        #expect(wal > 130_000_000, "both texts are in the WAL: \(wal) bytes")

        let output = folder.path("recover.jsonl")
        let (ran, peak) = try Self.run(["recover", store, "--format", "jsonl", "--entity", "TodoItem", "--pk", "2"], output: output)
        #expect(ran.status == 0, "\(ran.stderr)")
        Self.expectBounded(peak, "recover --format jsonl")
        let lines = try Data(contentsOf: output).split(separator: 0x0A)
        let notes = try lines.compactMap { line -> [String: Any]? in
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line)) as? [String: Any])
            return object["notes"] as? [String: Any]
        }
        for text in texts {
            let sha = SHA256.hex(Data(text.utf8))
            let found = notes.first { ($0["sha256"] as? String) == sha }
            #expect((found?["size"] as? Int) == text.utf8.count, "a version with SQLite's text: \(notes.map { $0["size"] ?? "?" })")
            #expect((found?["textPrefix"] as? String).map { text.hasPrefix($0) && $0.count == 1000 } == true)
        }

        // Every commit against the one before: the two long texts compared in pieces.
        let (diffed, diffPeak) = try Self.run(["wal", store, "--diff", "--each"], output: folder.path("diff.txt"))
        #expect(diffed.status == 0, "\(diffed.stderr)")
        Self.expectBounded(diffPeak, "wal --diff --each")
        let diff = String(decoding: try Data(contentsOf: folder.path("diff.txt")), as: UTF8.self)
        #expect(diff.contains("notes \"first yyy") && diff.contains("→ \"second yyy"), "the change from the first text to the second: \(diff.suffix(3000))")
    }
}
