import Foundation
import SQLiteAccess
import StoreBuilder
import StoreTestSupport
import Testing

/// Python's zoneinfo (the IANA database read by another reader than Foundation's) as the oracle
/// for local times: each `zone<TAB>shown<TAB>unix seconds` line must parse as ISO 8601, name that
/// instant, and carry the offset the zone has at that instant.
enum ZoneOracle {
    static let script = """
    import sys, zoneinfo, datetime
    for line in sys.stdin.read().splitlines():
        zone, shown, unix = line.split("\\t")
        parsed = datetime.datetime.fromisoformat(shown.replace("Z", "+00:00"))
        expected = datetime.datetime.fromtimestamp(float(unix), zoneinfo.ZoneInfo(zone))
        ok = parsed.utcoffset() == expected.utcoffset() and abs(parsed.timestamp() - float(unix)) < 1e-5 \\
            and parsed.replace(tzinfo=None) == expected.replace(tzinfo=None, microsecond=parsed.microsecond) \\
            and abs(parsed.microsecond - expected.microsecond) <= 1
        print("ok" if ok else "bad %s: shown %s, zoneinfo says %s" % (zone, shown, expected.isoformat()))
    """

    static let available: Bool = check(["UTC\t1970-01-01T00:00:00Z\t0"]) == ["ok"]
    static let unavailable = "python3 with zoneinfo and the IANA database is not available; local times are not checked against it"

    /// One answer per line: "ok" or what differs.
    static func check(_ lines: [String]) -> [String] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script]
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return [] }
        input.fileHandleForWriting.write(Data((lines.joined(separator: "\n") + "\n").utf8))
        try? input.fileHandleForWriting.close()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init)
    }
}

@Suite("--tz and timeline")
struct TimeZoneTimelineTests {
    static let zones = ["Europe/Berlin", "America/St_Johns", "Asia/Kolkata", "Australia/Lord_Howe"]

    static func run(_ arguments: [String]) throws -> String {
        let result = try CLI.run(arguments)
        #expect(result.status == 0, "\(arguments.joined(separator: " ")): \(result.stderr)")
        return result.stdout
    }

    /// RFC 4180 fields of one CSV record without embedded line breaks.
    static func fields(_ line: String) -> [String] {
        var out: [String] = [], field = "", quoted = false
        var chars = Array(line)[...]
        while let c = chars.popFirst() {
            if quoted {
                if c == "\"" { if chars.first == "\"" { field.append("\""); chars.removeFirst() } else { quoted = false } } else { field.append(c) }
            } else if c == "\"" { quoted = true } else if c == "," { out.append(field); field = "" } else { field.append(c) }
        }
        out.append(field)
        return out
    }

    @Test("--tz: rows csv and history text in the zone, with the offset zoneinfo gives for each instant; JSON unchanged and UTC",
          .enabled(if: ZoneOracle.available, Comment(rawValue: ZoneOracle.unavailable)))
    func localTimes() throws {
        let folder = try TemporaryFolder("tz")
        let store = try ShelfStores.flat(in: folder)
        let json = try Self.run(["rows", store.path, "Entry", "--format", "json"])
        let rows = try #require(try CommandJSON.object(json)["rows"] as? [[String: Any]])
        let utc = rows.map { ($0["values"] as? [String: Any])?["at"] as? String }
        #expect(utc.compactMap { $0 }.count == 2)
        let history = try #require(try CommandJSON.object(try Self.run(["history", store.path, "--format", "json"]))["transactions"] as? [[String: Any]])
        let stamps = history.compactMap { $0["timestamp"] as? String }
        #expect(!stamps.isEmpty)
        var checks: [String] = []
        for zone in Self.zones {
            #expect(try Self.run(["rows", store.path, "Entry", "--format", "json", "--tz", zone]) == json, "\(zone): JSON stays UTC")
            let csv = try Self.run(["rows", store.path, "Entry", "--format", "csv", "--raw-csv", "--tz", zone]).components(separatedBy: "\r\n")
            let header = Self.fields(csv[0])
            let column = try #require(header.firstIndex(of: "at"))
            // The titles hold no line break but the first: the hostile title's newline is quoted, so read by record.
            let records = try Self.run(["rows", store.path, "Entry", "--format", "jsonl", "--tz", zone]).split(separator: "\n").map { try CommandJSON.object($0) }
            #expect(records.map { $0["at"] as? String } == utc, "\(zone): jsonl stays UTC")
            let shown = csv.dropFirst().filter { !$0.isEmpty }.map(Self.fields).filter { $0.count == header.count }.map { $0[column] }.filter { !$0.isEmpty }
            #expect(shown.count >= 1)
            for (local, iso) in zip(shown, utc.compactMap { $0 }.suffix(shown.count)) {
                #expect(!local.hasSuffix("Z") || zone == "UTC", "\(zone): \(local) has an offset")
                checks.append("\(zone)\t\(local)\t\(try #require(ISOTimestamps.seconds(iso)))")
            }
            let text = try Self.run(["history", store.path, "--tz", zone])
            for transaction in history {
                guard let stamp = transaction["timestamp"] as? String, let id = transaction["id"] as? Int else { continue }
                let seconds = try #require(ISOTimestamps.seconds(stamp))
                let line = try #require(text.split(separator: "\n").first { $0.hasPrefix("  #\(id)  ") })
                let local = String(line.split(separator: " ", omittingEmptySubsequences: true)[1])
                checks.append("\(zone)\t\(local)\t\(seconds)")
            }
        }
        let answers = ZoneOracle.check(checks)
        #expect(answers.count == checks.count)
        for (check, answer) in zip(checks, answers) { #expect(answer == "ok", "\(check): \(answer)") }

        let bad = try CLI.run(["rows", store.path, "Entry", "--tz", "Mars/Olympus_Mons"])
        #expect(bad.status == 2)
        #expect(bad.stderr.hasPrefix("Error: The value 'Mars/Olympus_Mons' is invalid for '--tz'; give an IANA time zone name"), "\(bad.stderr)")
        #expect(bad.stdout.isEmpty)
    }

    @Test("timeline: every history transaction, every dated value and every WAL commit with history, sorted, in Timesketch's columns; csv loads with sqlite-utils",
          .enabled(if: SQLiteUtils.available, Comment(rawValue: SQLiteUtils.unavailable)))
    func timeline() throws {
        let folder = try TemporaryFolder("timeline")
        let store = try ShelfStores.withHistoryInWAL(in: folder)
        let before = try FolderSnapshot(folder.url)
        let oracle = try SQLiteOracle(copying: store)
        let transactions = try oracle.scalar("SELECT count(*) FROM ATRANSACTION WHERE ZTIMESTAMP IS NOT NULL").int ?? -1
        let dated = try oracle.scalar("SELECT count(*) FROM ZENTRY WHERE ZAT IS NOT NULL").int ?? -1
        let each = try CommandJSON.object(try Self.run(["wal", store.path, "--diff", "--each", "--format", "json"]))
        let commits = ((each["stores"] as? [[String: Any]])?.first?["commits"] as? [[String: Any]] ?? [])
            .filter { !(($0["transactions"] as? [Any]) ?? []).isEmpty }
        #expect(transactions >= 3 && dated >= 2 && commits.count >= 2)

        let lines = try Self.run(["timeline", store.path, "--format", "jsonl"]).split(separator: "\n").map { try CommandJSON.object($0) }
        #expect(lines.filter { $0["source"] as? String == "history" }.count == transactions)
        #expect(lines.filter { $0["source"] as? String == "attribute" }.count == dated)
        let walEvents = lines.filter { $0["source"] as? String == "wal" }
        #expect(walEvents.map { $0["commit"] as? Int } == commits.map { $0["commit"] as? Int })
        for (event, commit) in zip(walEvents, commits) {
            let last = (commit["transactions"] as? [[String: Any]])?.last
            #expect(event["datetime"] as? String == last?["timestamp"] as? String, "a commit is dated by the last transaction it wrote")
        }
        let stamps = lines.compactMap { $0["timestamp"] as? Int }
        #expect(stamps.count == lines.count && stamps == stamps.sorted(), "sorted by time")
        for line in lines {
            let iso = try #require(line["datetime"] as? String)
            let seconds = try #require(ISOTimestamps.seconds(iso), "datetime is ISO 8601 UTC: \(iso)")
            #expect(abs(seconds * 1_000_000 - Double(line["timestamp"] as? Int ?? 0)) < 2, "timestamp is datetime in microseconds")
            #expect(!(line["timestamp_desc"] as? String ?? "").isEmpty && !(line["message"] as? String ?? "").isEmpty)
        }
        #expect(lines.contains { $0["timestamp_desc"] as? String == "Entry.at" && $0["entity"] as? String == "Entry" && $0["attribute"] as? String == "at" })

        // csv: the same events in the same columns, loaded by sqlite-utils; --tz moves datetime only.
        let tool = try #require(SQLiteUtils.executable)
        let csvFile = folder.path("timeline.csv")
        try Data(try Self.run(["timeline", store.path, "--tz", "Asia/Kolkata"]).utf8).write(to: csvFile)
        let db = folder.path("timeline.db")
        let insert = SQLiteUtils.run(tool, ["insert", db.path, "events", csvFile.path, "--csv"])
        #expect(insert.status == 0, "\(insert.stderr)")
        let loaded = try Connection.open(path: db.path, mode: .readOnly)
        let columns = try loaded.columns(of: "events").map(\.name)
        #expect(Array(columns.prefix(4)) == ["datetime", "timestamp", "timestamp_desc", "message"], "\(columns)")
        let rows = try loaded.rows("SELECT datetime, timestamp, timestamp_desc, source FROM events ORDER BY rowid")
        #expect(rows.count == lines.count)
        for (row, line) in zip(rows, lines) {
            #expect((row[1].string ?? row[1].int64.map(String.init)) == (line["timestamp"] as? Int).map(String.init))
            #expect(row[2].string == line["timestamp_desc"] as? String && row[3].string == line["source"] as? String)
            #expect(row[0].string?.hasSuffix("+05:30") == true, "datetime in the zone: \(row[0])")
        }
        #expect(try FolderSnapshot(folder.url).entries.filter { before.entries[$0.key] != nil } == before.entries, "the store stays byte-identical")
    }

    @Test("timeline on the genuine SwiftData store (a copy): one event per history transaction SQLite holds, each WAL commit with history",
          .enabled(if: ProjectPaths.hasRealFixtures, Comment(rawValue: ProjectPaths.realFixturesMissing)))
    func realTimeline() throws {
        let folder = try TemporaryFolder("timeline-real")
        let copy = folder.path("swiftdata-resources")
        try FileManager.default.copyItem(at: try #require(ProjectPaths.realFixtures()).appendingPathComponent("swiftdata-resources"), to: copy)
        let store = copy.appendingPathComponent("default.store")
        let before = try FolderSnapshot(copy)
        let oracle = try SQLiteOracle(copying: store)
        let transactions = try oracle.scalar("SELECT count(*) FROM ATRANSACTION WHERE ZTIMESTAMP IS NOT NULL").int ?? -1
        let result = try CLI.run(["timeline", store.path, "--format", "jsonl"])
        #expect(result.status == 0, "\(result.stderr)")
        let lines = try result.stdout.split(separator: "\n").map { try CommandJSON.object($0) }
        #expect(lines.filter { $0["source"] as? String == "history" }.count == transactions)
        let walCommits = Set(lines.compactMap { $0["source"] as? String == "wal" ? $0["commit"] as? Int : nil })
        let each = try CommandJSON.object(try Self.run(["wal", store.path, "--diff", "--each", "--format", "json"]))
        let withHistory = Set(((each["stores"] as? [[String: Any]])?.first?["commits"] as? [[String: Any]] ?? [])
            .filter { !(($0["transactions"] as? [Any]) ?? []).isEmpty }.compactMap { $0["commit"] as? Int })
        #expect(walCommits == withHistory && !walCommits.isEmpty)
        let stamps = lines.compactMap { $0["timestamp"] as? Int }
        #expect(stamps == stamps.sorted())
        #expect(try FolderSnapshot(copy) == before)
    }
}
