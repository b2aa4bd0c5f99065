import Dispatch
import Foundation
import StoreBuilder
import StoreTestSupport
import Testing

@Suite("scale-out: --shard K/N and auto, storelens merge")
struct ShardTests {
    /// tickets/: store files, a container, its archive and a corrupt archive: inputs that succeed
    /// and one that fails, so the split is checked on both kinds of line.
    static func tickets(in folder: TemporaryFolder) throws -> URL {
        let tickets = try BatchRuns.tickets(in: folder)
        for n in 1...7 { try ReportSamples.write(to: tickets.appendingPathComponent("s\(n).store")) }
        return tickets
    }

    static func inputs(_ url: URL) throws -> [String] { try CommandJSON.lines(of: url).compactMap { $0["input"] as? String } }

    /// The documented split, computed by another program: `sha256sum` of the path, its first 16 hex
    /// digits as a number, modulo N.
    static func oracleShard(of path: String, count: Int) throws -> Int {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["sha256sum"]
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        input.fileHandleForWriting.write(Data(path.utf8))
        try input.fileHandleForWriting.close()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let hex = String(decoding: data.prefix(16), as: UTF8.self)
        let value = try #require(UInt64(hex, radix: 16), "sha256sum printed \(String(decoding: data, as: UTF8.self))")
        return Int(value % UInt64(count)) + 1
    }

    @Test("N shards run as separate processes: their union is the one-batch run, no input twice, none missed; --resume works per shard; merge agrees")
    func shardsUnionIsTheBatch() throws {
        let folder = try TemporaryFolder("shards")
        let tickets = try Self.tickets(in: folder)
        let before = try FolderSnapshot(tickets)
        let whole = folder.path("whole.jsonl")
        let one = try CLI.run(["scan", tickets.path, "--each", "--jsonl", whole.path])
        #expect(one.status == 2, "the corrupt archive fails: \(one.stderr)")
        let all = try Self.inputs(whole)
        #expect(all.count == 11 && Set(all).count == 11, "\(all)")
        let statusOf = Dictionary(uniqueKeysWithValues: try CommandJSON.lines(of: whole).map { (($0["input"] as? String) ?? "", ($0["status"] as? String) ?? "") })

        // Three shards at once, each its own process and its own results file.
        let n = 3
        let results = (1...n).map { folder.path("shard-\($0).jsonl") }
        let outcomes = Outcomes(count: n)
        DispatchQueue.concurrentPerform(iterations: n) { i in
            outcomes.set(i, Result { try CLI.run(["scan", tickets.path, "--each", "--jsonl", results[i].path, "--shard", "\(i + 1)/\(n)", "--quiet"]) })
        }
        var union: [String] = []
        for i in 0..<n {
            let run = try outcomes.get(i)
            let mine = try Self.inputs(results[i])
            union += mine
            #expect(run.stderr.contains("(shard \(i + 1)/\(n) of 11); ran \(mine.count) "), "\(run.stderr)")
            for input in mine {
                #expect(try Self.oracleShard(of: input, count: n) == i + 1, "\(input) belongs to the shard sha256sum gives")
            }
            let shardStatus = try CommandJSON.lines(of: results[i]).map { (($0["input"] as? String) ?? "", ($0["status"] as? String) ?? "") }
            for (input, status) in shardStatus { #expect(statusOf[input] == status, "\(input): the same outcome as in one batch") }
        }
        #expect(union.count == all.count, "no input done twice: \(union.sorted())")
        #expect(Set(union) == Set(all), "none missed: missing \(Set(all).subtracting(union)), extra \(Set(union).subtracting(all))")
        #expect((0..<n).filter { (try? Self.inputs(results[$0]).isEmpty) == false }.count >= 2, "11 inputs spread over more than one shard")

        // merge: one summary, the same as the one batch's.
        let merged = try CLI.run(["merge"] + results.map(\.path) + ["--format", "json", "--out", folder.path("merged.jsonl").path])
        #expect(merged.status == 2, "the batch's exit code: one input failed: \(merged.stderr)")
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(merged.stdout.utf8)) as? [String: Any])
        #expect(summary["inputs"] as? Int == 11)
        #expect((summary["duplicates"] as? [Any])?.isEmpty == true)
        let scan = try #require((summary["commands"] as? [[String: Any]])?.first)
        #expect(scan["command"] as? String == "scan")
        #expect(scan["ok"] as? Int == statusOf.values.filter { $0 == "ok" }.count)
        #expect(scan["error"] as? Int == statusOf.values.filter { $0 == "error" }.count)
        #expect(Set(try Self.inputs(folder.path("merged.jsonl"))) == Set(all), "--out holds one line per input")
        #expect(try Self.inputs(folder.path("merged.jsonl")).count == 11)
        // An input done twice is named.
        let largest = try #require(try results.max { try Self.inputs($0).count < Self.inputs($1).count })
        let twice = try CLI.run(["merge", whole.path, largest.path])
        #expect(twice.stdout.contains("duplicates: \(try Self.inputs(largest).count) inputs done more than once"), "\(twice.stdout)")

        // --resume per shard: the last line of a shard's file cut off mid-write (a killed pod);
        // the rerun of that shard does that input alone, another shard's rerun does nothing.
        let victim = try #require((0..<n).first { ((try? Self.inputs(results[$0]))?.count ?? 0) >= 2 })
        var text = try Data(contentsOf: results[victim])
        let lastInput = try #require(try Self.inputs(results[victim]).last)
        text.removeLast(20)
        try text.write(to: results[victim])
        let resumed = try CLI.run(["scan", tickets.path, "--each", "--jsonl", results[victim].path, "--shard", "\(victim + 1)/\(n)", "--resume"])
        let count = try Self.inputs(results[victim]).count
        #expect(resumed.stderr.contains("ran 1 "), "only the cut-off input runs again: \(resumed.stderr)")
        #expect(resumed.stderr.contains("skipped \(count - 1) already done"), "\(resumed.stderr)")
        #expect(try Self.inputs(results[victim]).last == lastInput)
        let other = (victim + 1) % n
        let kept = try Data(contentsOf: results[other])
        let again = try CLI.run(["scan", tickets.path, "--each", "--jsonl", results[other].path, "--shard", "\(other + 1)/\(n)", "--resume"])
        #expect(again.stderr.contains("ran 0 "), "\(again.stderr)")
        #expect(try Data(contentsOf: results[other]) == kept, "a finished shard does no work again")
        // The resumed shards still add up to the batch.
        let final = try (0..<n).flatMap { try Self.inputs(results[$0]) }
        #expect(final.count == 11 && Set(final) == Set(all))
        #expect(try FolderSnapshot(tickets) == before, "the evidence is never modified")
    }

    @Test("report: N shards as separate processes writing into one --out-dir: the union of lines and of report files is the one-batch run's; --resume per shard finishes a report whose line was cut off")
    func reportShards() throws {
        let folder = try TemporaryFolder("shards-report")
        let tickets = try Self.tickets(in: folder)
        let before = try FolderSnapshot(tickets)
        let whole = folder.path("whole.jsonl"), wholeReports = folder.path("whole-reports")
        let one = try CLI.run(["report", tickets.path, "--each", "--out-dir", wholeReports.path, "--jsonl", whole.path, "--jobs", "2", "--quiet"])
        #expect(one.status == 2, "the corrupt archive is an input error: \(one.stderr)")
        let all = try Self.inputs(whole)
        #expect(all.count == 11 && Set(all).count == 11, "\(all)")
        let statusOf = Dictionary(uniqueKeysWithValues: try CommandJSON.lines(of: whole).map { (($0["input"] as? String) ?? "", ($0["status"] as? String) ?? "") })
        let wholeFiles = try BatchRuns.files(in: wholeReports)
        #expect(wholeFiles == all.map(BatchRuns.reportName).sorted(), "one report per input")

        // Three shards at once, one results file each, one shared folder of reports (a shared volume).
        let n = 3
        let reports = folder.path("reports")
        let results = (1...n).map { folder.path("report-\($0).jsonl") }
        let outcomes = Outcomes(count: n)
        DispatchQueue.concurrentPerform(iterations: n) { i in
            outcomes.set(i, Result { try CLI.run(["report", tickets.path, "--each", "--out-dir", reports.path, "--jsonl", results[i].path,
                                                  "--shard", "\(i + 1)/\(n)", "--quiet"]) })
        }
        var union: [String] = []
        for i in 0..<n {
            let run = try outcomes.get(i)
            let mine = try Self.inputs(results[i])
            union += mine
            #expect(run.stderr.contains("report batch: \(mine.count) input\(mine.count == 1 ? "" : "s") (shard \(i + 1)/\(n) of 11); ran \(mine.count) "), "\(run.stderr)")
            for line in try CommandJSON.lines(of: results[i]) {
                let input = (line["input"] as? String) ?? ""
                #expect(statusOf[input] == line["status"] as? String, "\(input): the same outcome as in one batch")
                let report = (line["summary"] as? [String: Any])?["report"] as? String
                #expect(report == reports.path + "/" + BatchRuns.reportName(input), "\(line)")
            }
        }
        #expect(union.count == all.count, "no input done twice: \(union.sorted())")
        #expect(Set(union) == Set(all), "none missed: missing \(Set(all).subtracting(union)), extra \(Set(union).subtracting(all))")
        #expect((0..<n).filter { (try? Self.inputs(results[$0]).isEmpty) == false }.count >= 2, "11 inputs spread over more than one shard")
        #expect(try BatchRuns.files(in: reports) == wholeFiles, "the shards wrote the same files as one batch, each once")
        for name in wholeFiles {
            let a = try String(contentsOf: reports.appendingPathComponent(name), encoding: .utf8)
            let b = try String(contentsOf: wholeReports.appendingPathComponent(name), encoding: .utf8)
            #expect(BatchRuns.comparable(a) == BatchRuns.comparable(b), "\(name): a shard's report is the batch's")
        }

        // merge reads report lines like any other command's.
        let merged = try CLI.run(["merge"] + results.map(\.path) + ["--format", "json"])
        #expect(merged.status == 2, "\(merged.stderr)")
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(merged.stdout.utf8)) as? [String: Any])
        #expect(summary["inputs"] as? Int == 11 && (summary["duplicates"] as? [Any])?.isEmpty == true)
        let totals = try #require((summary["commands"] as? [[String: Any]])?.first)
        #expect(totals["command"] as? String == "report")
        #expect(totals["error"] as? Int == statusOf.values.filter { $0 == "error" }.count)
        #expect(totals["findings"] as? Int == statusOf.values.filter { $0 == "findings" }.count)

        // --resume per shard: a shard killed after writing a report and half its line. Its rerun
        // does that input alone (the report is rewritten: it has no line); another shard's does nothing.
        let victim = try #require((0..<n).first { ((try? Self.inputs(results[$0]))?.count ?? 0) >= 2 })
        let lastInput = try #require(try Self.inputs(results[victim]).last)
        var text = try Data(contentsOf: results[victim])
        text.removeLast(20)
        try text.write(to: results[victim])
        let other = (victim + 1) % n
        let kept = try FolderSnapshot(reports)
        let again = try CLI.run(["report", tickets.path, "--each", "--out-dir", reports.path, "--jsonl", results[other].path, "--shard", "\(other + 1)/\(n)", "--resume"])
        #expect(again.stderr.contains("ran 0 "), "\(again.stderr)")
        #expect(try FolderSnapshot(reports) == kept, "a finished shard writes nothing again")
        let resumed = try CLI.run(["report", tickets.path, "--each", "--out-dir", reports.path, "--jsonl", results[victim].path, "--shard", "\(victim + 1)/\(n)", "--resume"])
        let count = try Self.inputs(results[victim]).count
        #expect(resumed.stderr.contains("ran 1 ") && resumed.stderr.contains("skipped \(count - 1) already done"), "\(resumed.stderr)")
        let redone = try #require(try CommandJSON.lines(of: results[victim]).last)
        #expect(redone["input"] as? String == lastInput)
        #expect(redone["status"] as? String == statusOf[lastInput], "\(redone)")
        let name = BatchRuns.reportName(lastInput)
        #expect(try FolderSnapshot(reports).entries.filter { !$0.key.hasSuffix("/" + name) } == kept.entries.filter { !$0.key.hasSuffix("/" + name) },
                "only the cut-off input's report is written again")
        #expect(BatchRuns.comparable(try String(contentsOf: reports.appendingPathComponent(name), encoding: .utf8))
                == BatchRuns.comparable(try String(contentsOf: wholeReports.appendingPathComponent(name), encoding: .utf8)))
        let final = try (0..<n).flatMap { try Self.inputs(results[$0]) }
        #expect(final.count == 11 && Set(final) == Set(all))
        #expect(try FolderSnapshot(tickets) == before, "the evidence is never modified")
    }

    @Test("--shard auto takes the Kubernetes Indexed Job's or the Slurm array's index")
    func auto() throws {
        let folder = try TemporaryFolder("shards-auto")
        let tickets = try Self.tickets(in: folder)
        func run(_ name: String, _ shard: String, environment: [String: String]) throws -> (Int32, [String], String) {
            let out = folder.path("\(name).jsonl")
            let r = try CLI.run(["scan", tickets.path, "--each", "--jsonl", out.path, "--shard", shard], environment: environment)
            return (r.status, FileManager.default.fileExists(atPath: out.path) ? try Self.inputs(out).sorted() : [], r.stderr)
        }
        let explicit = try run("explicit", "2/4", environment: [:])
        let kubernetes = try run("k8s", "auto", environment: ["JOB_COMPLETION_INDEX": "1", "JOB_COMPLETION_COUNT": "4"])
        let slurm = try run("slurm", "auto", environment: ["SLURM_ARRAY_TASK_ID": "2", "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_COUNT": "4"])
        #expect(kubernetes.1 == explicit.1, "index 1 of 4 is shard 2/4: \(kubernetes.2)")
        #expect(slurm.1 == explicit.1, "task 2 of an array 1-4 is shard 2/4: \(slurm.2)")
        #expect(kubernetes.2.contains("(shard 2/4 of 11)"), "\(kubernetes.2)")

        for (shard, environment, says) in [("0/4", [:], "0 does not exist in 4 shards"), ("5/4", [:], "5 does not exist in 4 shards"),
                                           ("2", [:], "give K/N"), ("1/0", [:], "out of range"),
                                           ("auto", [:], "found neither JOB_COMPLETION_INDEX"),
                                           ("auto", ["JOB_COMPLETION_INDEX": "3"], "no JOB_COMPLETION_COUNT"),
                                           ("auto", ["JOB_COMPLETION_INDEX": "4", "JOB_COMPLETION_COUNT": "4"], "index must be below the count"),
                                           ("auto", ["SLURM_ARRAY_TASK_ID": "x", "SLURM_ARRAY_TASK_COUNT": "4"], "not a whole number")] {
            let r = try run("bad", shard, environment: environment)
            #expect(r.0 == 2 && r.2.contains(says), "--shard \(shard) \(environment): \(r.2)")
            #expect(r.1.isEmpty, "a refused shard reads nothing")
        }
        let noBatch = try CLI.run(["scan", tickets.path, "--shard", "1/2"])
        #expect(noBatch.status == 2 && noBatch.stderr.contains("--shard runs a share of a batch"), "\(noBatch.stderr)")
    }

    @Test("merge refuses what is not a results file, in one sentence, and writes no partial --out")
    func mergeRefuses() throws {
        let folder = try TemporaryFolder("merge-bad")
        let good = try Self.goodResults(in: folder)
        var text = try String(contentsOf: good, encoding: .utf8)
        text += "{\"schemaVersion\":1,\"command\":\"inspect\",\"inp"
        let cut = folder.path("cut.jsonl")
        try Data(text.utf8).write(to: cut)
        let r = try CLI.run(["merge", cut.path, "--out", folder.path("m.jsonl").path])
        #expect(r.status == 2)
        #expect(r.stderr.split(separator: "\n").count == 1 && r.stderr.contains("cut.jsonl line 2"), "\(r.stderr)")
        #expect(!FileManager.default.fileExists(atPath: folder.path("m.jsonl").path))
        let dir = try CLI.run(["merge", folder.url.path])
        #expect(dir.status == 2 && dir.stderr.contains("it is a folder"), "\(dir.stderr)")
        let ok = try CLI.run(["merge", good.path])
        #expect(ok.status == 0 && ok.stdout.contains("inspect: 1 input: 1 ok"), "\(ok.stdout)\(ok.stderr)")
    }

    /// good.jsonl: the results line of an inspect batch of one sample store (d.store).
    static func goodResults(in folder: TemporaryFolder) throws -> URL {
        let good = folder.path("good.jsonl")
        try ReportSamples.write(to: folder.path("d.store"))
        _ = try CLI.run(["inspect", folder.path("d.store").path, "--jsonl", good.path])
        return good
    }

    /// `good` as a JSON line with each key of `changes` set to its JSON literal, written as is.
    static func line(_ good: [String: Any], _ changes: [String: String]) throws -> String {
        var object = good
        for key in changes.keys { object[key] = "@@\(key)@@" }
        var text = String(decoding: try JSONSerialization.data(withJSONObject: object), as: UTF8.self)
        for (key, literal) in changes { text = text.replacingOccurrences(of: "\"@@\(key)@@\"", with: literal) }
        return text
    }

    @Test("merge checks every field of a batch line: exit codes 0 to 3 matching the status, JSON types; nonsense is exit 2 naming file and line, never success")
    func mergeChecksFields() throws {
        let folder = try TemporaryFolder("merge-fields")
        let good = try Self.goodResults(in: folder)
        let goodLine = try String(contentsOf: good, encoding: .utf8).trimmingCharacters(in: .newlines)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(goodLine.utf8)) as? [String: Any])
        #expect(object["status"] as? String == "ok", "the sample store inspects cleanly: \(goodLine)")
        let clean = try CLI.run(["merge", good.path])
        #expect(clean.status == 0, "\(clean.stderr)")
        let cases: [(String, [String: String])] = [
            ("exitCode", ["exitCode": "4294967296"]), ("exitCode", ["exitCode": "9223372036854775807"]),
            ("exitCode", ["exitCode": "7"]), ("exitCode", ["exitCode": "256"]), ("exitCode", ["exitCode": "1e20"]),
            ("exitCode", ["exitCode": "-1"]), ("exitCode", ["exitCode": "0.0"]), ("exitCode", ["exitCode": "false"]),
            ("exitCode", ["exitCode": "\"0\""]), ("exitCode", ["exitCode": "null"]),
            ("exitCode", ["exitCode": "18446744073709551616"]),
            ("contradicts", ["exitCode": "2"]), ("contradicts", ["status": "\"findings\"", "exitCode": "0"]),
            ("contradicts", ["status": "\"error\"", "exitCode": "1"]),
            ("status", ["status": "\"\\u001b]52;c;aGk=\\u0007\""]), ("status", ["status": "true"]),
            ("command", ["command": "5"]), ("input", ["input": "null"]), ("host", ["host": "7"]),
            ("error", ["error": "[]"]), ("storelensVersion", ["storelensVersion": "{}"]),
            ("sha256", ["sha256": "\"xyz\""]), ("startedAt", ["startedAt": "\"yesterday\""]),
            ("seconds", ["seconds": "\"fast\""]), ("seconds", ["seconds": "-1"]), ("seconds", ["seconds": "true"]),
            ("summary", ["summary": "3"]), ("findings", ["findings": "{\"a\":1}"]), ("findings", ["findings": "[1]"]),
            ("schemaVersion", ["schemaVersion": "true"]), ("schemaVersion", ["schemaVersion": "1.0"]),
        ]
        for (n, (says, changes)) in cases.enumerated() {
            let bad = folder.path("bad\(n).jsonl")
            try Data((goodLine + "\n" + (try Self.line(object, changes)) + "\n").utf8).write(to: bad)
            let out = folder.path("m\(n).jsonl")
            let r = try CLI.run(["merge", bad.path, "--out", out.path])
            #expect(r.status == 2, "\(changes): exit \(r.status) \(r.stderr)")
            #expect(r.stderr.split(separator: "\n").count == 1 && r.stderr.contains("bad\(n).jsonl line 2") && r.stderr.contains(says),
                    "\(changes): \(r.stderr)")
            #expect(!r.stderr.unicodeScalars.contains { $0.value < 0x20 && $0 != "\n" }, "\(changes): no control character on stderr")
            #expect(!FileManager.default.fileExists(atPath: out.path), "\(changes): no --out from a partial account")
            // --resume does not take such a line as done: its input runs again.
            let alone = folder.path("alone\(n).jsonl")
            try Data(((try Self.line(object, changes)) + "\n").utf8).write(to: alone)
            let resumed = try CLI.run(["inspect", folder.path("d.store").path, "--jsonl", alone.path, "--resume"])
            #expect(resumed.stderr.contains("ran 1 ") && resumed.stderr.contains("skipped 0"), "\(changes): \(resumed.stderr)")
        }
    }
}


struct Unfinished: Error { let index: Int }

/// Results of concurrent runs, by index.
final class Outcomes: @unchecked Sendable {
    private let lock = NSLock()
    private var results: [Result<CommandResult, Error>?]
    init(count: Int) { results = Array(repeating: nil, count: count) }
    func set(_ i: Int, _ r: Result<CommandResult, Error>) { lock.lock(); results[i] = r; lock.unlock() }
    func get(_ i: Int) throws -> CommandResult {
        lock.lock(); defer { lock.unlock() }
        guard let r = results[i] else { throw Unfinished(index: i) }
        return try r.get()
    }
}
