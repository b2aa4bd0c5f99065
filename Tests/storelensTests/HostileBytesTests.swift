import Foundation
import SQLiteAccess
import StoreBuilder
import StoreTestSupport
import Testing

/// Bytes from the evidence (store values, entity names, file names) and from the command line
/// (arguments, option values) never reach a terminal, an error message or a CSV cell as the
/// controls they are: ESC, BEL, CR, LF, OSC 52 (`ESC ] 52 ; c ; … BEL`, which sets the
/// clipboard), DEL and C1. CSV escapes them reversibly unless `--raw-csv`.
@Suite("hostile bytes never reach a terminal, an error or a CSV cell raw")
struct HostileBytesTests {
    static let osc52 = "\u{1B}]52;c;aGk=\u{07}"
    /// Values a hostile app could store; a backslash and a literal `\u001b` test the escaping's own
    /// reversibility.
    static let values = [
        "osc52 \(osc52) end", "bell\u{07}", "cr\roverwritten", "lf\nsecond line", "esc\u{1B}[31mred", "back\\slash \\u001b literal",
        "c1\u{9B}31m", "del\u{7F}", "=formula\u{1B}", "tab\tx", "crlf\r\nx", "evil\u{202E}txt", "plain",
    ]

    /// A to-do store with history whose every change stays in its -wal (so `wal --diff` sees it),
    /// and an update and a delete (so history and recover have old values).
    static func store(at url: URL, entity: String = "TodoItem") throws {
        let model = ModelDescription(entities: [
            EntityDescription(entity, attributes: [AttributeDescription("title", .string, optional: false),
                                                   AttributeDescription("notes", .string)]),
        ], versionIdentifiers: ["1.0.0"])
        let writer = try StoreWriter(url: url, model: model)
        var pks: [Int] = []
        try writer.transaction(.init(bundleID: "com.example.\u{1B}[2Jtodo")) { w in
            for value in values { pks.append(try w.insert(entity, ["title": .string(value), "notes": .string("n " + value)])) }
        }
        try writer.transaction(.init(bundleID: "com.example.todo")) { w in
            try w.update(entity, pk: pks[0], ["title": .string("changed " + osc52)])
            try w.delete(entity, pk: pks[1])
        }
        try writer.close(leavingWAL: true)
    }

    /// CSV on stdout: the only controls are the CRLF ending each record, every cell is clean, and
    /// each cell undoes to the `--raw-csv` run's cell (a formula's leading `'` aside).
    static func expectEscapedCSV(_ safe: String, raw: String, _ what: String) {
        OutputEscaping.expectClean(safe, allowed: ["\r", "\n"], what)
        let records = CSVRecords.parse(safe), rawRecords = CSVRecords.parse(raw)
        #expect(safe.components(separatedBy: "\r\n").count - 1 == records.count, "\(what): a line break inside a cell")
        #expect(records.count == rawRecords.count && records.count > 1, "\(what): \(records.count) records, raw \(rawRecords.count)")
        for (record, rawRecord) in zip(records, rawRecords) {
            #expect(record.count == rawRecord.count)
            for (cell, rawCell) in zip(record, rawRecord) {
                OutputEscaping.expectClean(cell, allowed: [], "\(what) cell")
                let body = cell.hasPrefix("'") && !rawCell.hasPrefix("'") ? String(cell.dropFirst()) : cell
                #expect(OutputEscaping.unescape(body) == rawCell, "\(what): \(cell.debugDescription) does not undo to \(rawCell.debugDescription)")
            }
        }
    }

    @Test("CSV of rows, timeline, history, recover and wal --diff: controls escaped, the cells undo to the --raw-csv ones, which are SQLite's values")
    func csvEscaped() throws {
        let folder = try TemporaryFolder("hostile-bytes-csv")
        let store = folder.path("h.store")
        try Self.store(at: store)
        // The truth from SQLite, on a copy with its -wal.
        let copy = folder.path("copy.store")
        try FileManager.default.copyItem(at: store, to: copy)
        try FileManager.default.copyItem(atPath: store.path + "-wal", toPath: copy.path + "-wal")
        let db = try Connection.open(path: copy.path, mode: .readOnly)
        let titles = Set(try db.rows("SELECT ZTITLE FROM ZTODOITEM").compactMap { $0[0].string })
        #expect(titles.count == Self.values.count - 1)

        let runs: [(String, [String])] = [
            ("rows csv", ["rows", store.path, "TodoItem", "--format", "csv"]), ("rows tsv", ["rows", store.path, "TodoItem", "--format", "tsv"]),
            ("timeline", ["timeline", store.path, "--format", "csv"]), ("history", ["history", store.path, "--format", "csv"]),
            ("recover", ["recover", store.path, "--format", "csv"]), ("wal --diff", ["wal", store.path, "--diff", "--format", "csv"]),
        ]
        for (what, arguments) in runs {
            let safe = try CLI.run(arguments), raw = try CLI.run(arguments + ["--raw-csv"])
            #expect(safe.status == 0 && raw.status == 0, "\(what): \(safe.stderr) \(raw.stderr)")
            // The timeline and history show no attribute values; the writer's bundle ID holds an ESC there.
            #expect(raw.stdout.contains(["timeline", "history"].contains(what) ? "\u{1B}[2J" : Self.osc52), "\(what): --raw-csv writes the stored bytes")
            OutputEscaping.expectClean(safe.stderr, "\(what) stderr")
            if what == "rows tsv" {
                OutputEscaping.expectClean(safe.stdout, allowed: ["\t", "\n"], what)
                let cells = safe.stdout.split(separator: "\n").map { $0.split(separator: "\t", omittingEmptySubsequences: false).map(String.init) }
                let column = try #require(cells.first?.firstIndex(of: "title"))
                #expect(Set(cells.dropFirst().compactMap { OutputEscaping.unescape($0[column].hasPrefix("'") ? String($0[column].dropFirst()) : $0[column]) }) == titles)
            } else {
                Self.expectEscapedCSV(safe.stdout, raw: raw.stdout, what)
            }
            if what == "rows csv" {
                let records = CSVRecords.parse(raw.stdout)
                let column = try #require(records.first?.firstIndex(of: "title"))
                #expect(Set(records.dropFirst().map { $0[column] }) == titles, "--raw-csv round-trips SQLite's values")
            }
        }
        // JSON escapes by JSON's rules, DEL and C1 included; the values parse back to SQLite's.
        let json = try CLI.run(["rows", store.path, "TodoItem", "--format", "jsonl"])
        OutputEscaping.expectClean(json.stdout, "rows jsonl")
        let parsed = try json.stdout.split(separator: "\n").map { try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
        #expect(Set(parsed.compactMap { $0["title"] as? String }) == titles)
    }

    @Test("text output, table titles and every error: file names, entity names, option values and store values are shown sanitised, one line each")
    func terminalAndErrors() throws {
        let folder = try TemporaryFolder("hostile-bytes-text")
        let named = folder.path("ev\(Self.osc52)il\r\n.store")
        try Self.store(at: named, entity: "Evil\u{1B}[31mItem")
        for arguments in [["inspect", named.path], ["rows", named.path, "Evil\u{1B}[31mItem"], ["history", named.path],
                          ["check", named.path], ["wal", named.path, "--diff"], ["wal", named.path], ["recover", named.path], ["schema", named.path],
                          ["lint", named.path], ["scan", folder.url.path], ["scan", folder.url.path, "--format", "markdown"]] {
            let r = try CLI.run(arguments)
            #expect(r.status <= 1, "\(arguments[0]): \(r.stderr)")
            OutputEscaping.expectClean(r.stdout, "\(arguments[0]) stdout")
            OutputEscaping.expectClean(r.stderr, "\(arguments[0]) stderr")
        }
        let rows = try CLI.run(["rows", named.path, "Evil\u{1B}[31mItem"])
        #expect(rows.stdout.hasPrefix(folder.url.path + "/ev\u{FFFD}]52;c;aGk=\u{FFFD}il\u{FFFD}\u{FFFD}.store: Evil\u{FFFD}[31mItem"), "\(rows.stdout.prefix(200))")
        // The same names in CSV: the entity column escaped, undone to the stored name with --raw-csv.
        let csv = try CLI.run(["rows", named.path, "Evil\u{1B}[31mItem", "--format", "csv"])
        let raw = try CLI.run(["rows", named.path, "Evil\u{1B}[31mItem", "--format", "csv", "--raw-csv"])
        Self.expectEscapedCSV(csv.stdout, raw: raw.stdout, "rows csv of a hostile entity")
        #expect(CSVRecords.parse(raw.stdout).dropFirst().allSatisfy { $0.first == "Evil\u{1B}[31mItem" })

        // Errors: each one sentence on one line, whatever the file name or option value holds.
        let missing = folder.path("gone\(Self.osc52)\n\u{1B}[2J.store").path
        let errors: [[String]] = [
            ["inspect", missing], ["rows", named.path, "No\u{1B}[2JSuch\nEntity"], ["rows", named.path, "Evil\u{1B}[31mItem", "--format", "csv\n\u{1B}[2J"],
            ["rows", named.path, "Evil\u{1B}[31mItem", "--tz", "Europe/Berlin\n\u{1B}]52;c;aGk=\u{07}"], ["rows", named.path, "Evil\u{1B}[31mItem", "--limit", "1\r2"],
            ["merge", missing], ["merge", named.path], ["inspect", named.path, "--store", "x\u{1B}[2J\ny"],
            ["no\u{1B}[2Jsuch\ncommand"], ["inspect", "--no-such\u{07}\noption", named.path],
        ]
        for arguments in errors {
            let r = try CLI.run(arguments)
            #expect(r.status == 2, "\(arguments): \(r.status) \(r.stderr)")
            OutputEscaping.expectClean(r.stderr, "\(arguments) stderr")
            let lines = r.stderr.split(separator: "\n")
            #expect(lines.filter { $0.hasPrefix("Error:") }.count == 1 && lines.allSatisfy { $0.hasPrefix("Error:") || $0.hasPrefix("Usage:") || $0.hasPrefix("  See") },
                    "\(arguments): one error sentence, not split: \(r.stderr.debugDescription)")
        }
    }

    @Test("a link or a named pipe in _EXTERNAL_DATA is reported as what it is, never as an existing file of the link's length, and blocks nothing")
    func externalDataLinks() throws {
        let folder = try TemporaryFolder("hostile-external")
        let evidence = folder.path("evidence")
        try FileManager.default.createDirectory(at: evidence, withIntermediateDirectories: true)
        let store = evidence.appendingPathComponent("photos.store")
        let model = ModelDescription(entities: [
            EntityDescription("Photo", attributes: [AttributeDescription("image", .binaryData, externalStorage: true)]),
        ], versionIdentifiers: ["1.0.0"])
        let writer = try StoreWriter(url: store, model: model, options: .init(journalMode: .delete))
        let real = UUID(), linked = UUID(), pipe = UUID()
        // A secret outside the store that a link points at: its size must not be reported as the data's.
        let secret = folder.path("secret.bin")
        try Data(count: 4321).write(to: secret)
        try writer.transaction { w in
            _ = try w.insert("Photo", ["image": try writer.externalData(Data(count: 300), name: real)])
            _ = try w.insert("Photo", ["image": StoreWriter.externalReference(linked)])
            _ = try w.insert("Photo", ["image": StoreWriter.externalReference(pipe)])
        }
        try writer.close()
        let external = writer.supportFolder.appendingPathComponent("_EXTERNAL_DATA")
        try FileManager.default.createSymbolicLink(atPath: external.appendingPathComponent(linked.uuidString).path, withDestinationPath: secret.path)
        #expect(mkfifo(external.appendingPathComponent(pipe.uuidString).path, 0o600) == 0)

        let rows = try BoundedRun.run(["rows", store.path, "Photo", "--format", "jsonl"], timeout: 60)
        #expect(!rows.timedOut && rows.status == 0, "\(rows.stderr)")
        var kinds: [String: String] = [:]
        for line in rows.stdout.split(separator: "\n") {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            let file = try #require((object["image"] as? [String: Any])?["externalFile"] as? [String: Any])
            let path = try #require(file["path"] as? String)
            kinds[String(path.split(separator: "/").last ?? "")] = "\(file["kind"] ?? "-") \(file["exists"] ?? "-") \(file["size"] ?? "-")"
        }
        #expect(kinds == [real.uuidString: "file 1 300", linked.uuidString: "symbolic link 0 <null>", pipe.uuidString: "named pipe 0 <null>"]
                || kinds == [real.uuidString: "file true 300", linked.uuidString: "symbolic link false <null>", pipe.uuidString: "named pipe false <null>"], "\(kinds)")
        let table = try BoundedRun.run(["rows", store.path, "Photo"], timeout: 60)
        #expect(table.stdout.contains("symbolic link, not followed or read") && table.stdout.contains("named pipe, not followed or read")
                && !table.stdout.contains("4321"), "\(table.stdout)")
        // Every other reader of the store's family passes the pipe by too.
        for arguments in [["inspect", store.path], ["check", store.path], ["scan", evidence.path, "--evidence", folder.path("evidence.json").path],
                          ["report", store.path, "--out", folder.path("r.html").path]] {
            let r = try BoundedRun.run(arguments, timeout: 60)
            #expect(!r.timedOut && r.status <= 1, "\(arguments[0]): \(r.status) \(r.stderr)")
        }
    }
}
