import Foundation
import StoreBuilder
import StoreFormats
import StoreTestSupport
import Testing

@Suite("report command, Markdown views and progress")
struct ReportCommandTests {
    @Test("report: one HTML file with the audit's findings; never overwrites without --force, never an input; evidence untouched")
    func writesOnce() throws {
        let folder = try TemporaryFolder("report-cli")
        try DemoContainer.write(into: folder.path("c"))
        try Data(DemoContainer.manifest.utf8).write(to: folder.path("m.json"))
        let before = try FolderSnapshot(folder.path("c"))
        let out = folder.path("out/report.html")
        try FileManager.default.createDirectory(at: folder.path("out"), withIntermediateDirectories: true)

        let first = try CLI.run(["report", folder.path("c").path, "--manifest", folder.path("m.json").path, "--out", out.path])
        #expect(first.status == 1, "the demo's planted findings are errors: \(first.stderr)")
        #expect(first.stdout.hasPrefix("wrote \(out.path) ("))
        #expect(first.stdout.contains("findings: 4 error"))
        let html = try String(contentsOf: out, encoding: .utf8)
        for id in ["writer-violation", "duplicate-import", "not-migrated", "json-not-imported"] {
            #expect(html.contains("<code>\(id)</code>"), "\(id) is listed")
        }
        #expect(html.contains("Audit against the manifest"))
        #expect(html.contains("Records per entity per side"))
        #expect(html.contains("WAL transactions"))
        #expect(html.contains("verified unchanged afterwards"))
        #expect(try FolderSnapshot(folder.path("c")) == before, "the evidence is never modified")

        let again = try CLI.run(["report", folder.path("c").path, "--out", out.path])
        #expect(again.status == 2)
        #expect(again.stderr.contains("\(out.path) already exists"), "\(again.stderr)")
        #expect(try String(contentsOf: out, encoding: .utf8) == html, "the existing report is left alone")

        let forced = try CLI.run(["report", folder.path("c").path, "--out", out.path, "--force"])
        #expect(forced.status == 0 || forced.status == 1, "\(forced.stderr)")
        #expect(try String(contentsOf: out, encoding: .utf8) != html, "--force replaces it (this one has no audit)")

        let store = folder.path("c/Library/Application Support/default.store")
        let onInput = try CLI.run(["report", store.path, "--out", store.path, "--force"])
        #expect(onInput.status == 2)
        #expect(onInput.stderr.contains("is one of the inputs"), "\(onInput.stderr)")
        #expect(try FolderSnapshot(folder.path("c")) == before, "--force never writes over the evidence")
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: folder.path("out").path).filter { $0 != "report.html" }
        #expect(leftovers.isEmpty, "no temporary file is left behind: \(leftovers)")

        let missingOut = try CLI.run(["report", folder.path("c").path])
        #expect(missingOut.status == 2)
        #expect(missingOut.stderr.contains("--out"))
    }

    @Test("report of a damaged archive: the report is written with what could be read, and the exit code says input error")
    func damagedArchive() throws {
        let folder = try TemporaryFolder("report-damaged")
        try DemoContainer.write(into: folder.path("c"))
        let archive = folder.path("c.tar")
        try ArchiveMaker.write(try ArchiveMaker.entries(of: folder.path("c")), to: archive, format: .paxTar)
        let data = try Data(contentsOf: archive)
        try data.prefix(data.count * 2 / 3).write(to: folder.path("cut.tar"))
        let r = try CLI.run(["report", folder.path("cut.tar").path, "--out", folder.path("r.html").path])
        #expect(r.status == 2, "\(r.stderr)")
        #expect(r.stderr.contains("cut.tar"))
        let html = try String(contentsOf: folder.path("r.html"), encoding: .utf8)
        #expect(html.contains("class=\"problem\""), "the damage is stated in the report")
    }

    @Test("report batch: one report per input in --out-dir, each the report a single run writes, one line each; a failing input has an error line and no file; existing reports refused, --resume skips, --force replaces")
    func batch() throws {
        let folder = try TemporaryFolder("report-batch")
        let tickets = try BatchRuns.tickets(in: folder)
        try Data(DemoContainer.manifest.utf8).write(to: folder.path("m.json"))
        // An input named as a hostile device would: its report's name is made safe.
        let odd = folder.path("odd")
        try FileManager.default.createDirectory(at: odd, withIntermediateDirectories: true)
        let hostile = odd.appendingPathComponent("..-x\u{1B}[31m\nname.store")
        try ReportSamples.write(to: hostile)
        let missing = folder.path("missing.store").path
        let before = try FolderSnapshot(tickets)
        let reports = folder.path("reports")
        let results = folder.path("report.jsonl")
        let inputs = try FileManager.default.contentsOfDirectory(atPath: tickets.path).filter { !$0.hasSuffix("-wal") && !$0.hasSuffix("-shm") }
            .sorted().map { tickets.path + "/" + $0 } + [hostile.path, missing]

        let run = try CLI.run(["report", tickets.path, hostile.path, missing, "--each", "-m", folder.path("m.json").path,
                               "--out-dir", reports.path, "--jsonl", results.path, "--jobs", "2"])
        #expect(run.status == 2, "the missing input fails: \(run.stderr)")
        #expect(run.stdout.isEmpty, "a batch prints no 'wrote' lines: \(run.stdout)")
        #expect(run.stderr.contains("report batch: 6 inputs; ran 6 "), "\(run.stderr)")
        let lines = try CommandJSON.lines(of: results)
        #expect(lines.map { $0["command"] as? String } == Array(repeating: "report", count: 6))
        let byInput = Dictionary(uniqueKeysWithValues: lines.map { (($0["input"] as? String) ?? "", $0) })
        #expect(Set(byInput.keys) == Set(inputs))

        // The failing input: an error line, no summary, and no report.
        let failed = try #require(byInput[missing])
        #expect(failed["status"] as? String == "error" && failed["exitCode"] as? Int == 2)
        #expect((failed["error"] as? String)?.contains("missing.store") == true, "\(failed)")
        #expect(failed["summary"] is NSNull)
        #expect(!FileManager.default.fileExists(atPath: reports.path + "/" + BatchRuns.reportName(missing)))

        // Every other input: its report, named from its path, equal to a single run's.
        var written: [String] = []
        for input in inputs where input != missing {
            let line = try #require(byInput[input])
            let summary = try #require(line["summary"] as? [String: Any], "\(line)")
            let name = BatchRuns.reportName(input)
            #expect(summary["report"] as? String == reports.path + "/" + name)
            written.append(name)
            let html = try String(contentsOfFile: reports.path + "/" + name, encoding: .utf8)
            #expect(summary["bytes"] as? Int == html.utf8.count)
            let findings = try #require(line["findings"] as? [[String: Any]])
            for severity in ["error", "warning", "info"] {
                #expect(summary[severity] as? Int == findings.filter { $0["severity"] as? String == severity }.count, "\(input) \(severity)")
            }
            let single = folder.path("single-\(written.count).html")
            let one = try CLI.run(["report", input, "-m", folder.path("m.json").path, "--out", single.path])
            #expect(Int(one.status) == line["exitCode"] as? Int, "\(input): the same exit code as a single run: \(one.stderr)")
            if one.status == 2 {
                #expect(line["status"] as? String == "error")
                #expect(one.stderr.contains(try #require(line["error"] as? String)), "the line's error is the single run's: \(one.stderr)")
            }
            #expect(BatchRuns.comparable(try String(contentsOf: single, encoding: .utf8)) == BatchRuns.comparable(html), "\(input): the batch's report is the single run's")
            #expect(one.stdout.contains("findings: \(summary["error"] as? Int ?? -1) error, \(summary["warning"] as? Int ?? -1) warning, \(summary["info"] as? Int ?? -1) info"), "\(one.stdout)")
        }
        #expect(try BatchRuns.files(in: reports) == written.sorted(), "one file per input that could be read, nothing else (no temporary files)")
        let odd1 = BatchRuns.reportName(hostile.path)
        #expect(odd1.hasPrefix("x_") && odd1.contains("_31m_name.store-"), "\(odd1)")
        let container = try #require(byInput[tickets.path + "/a-container"])
        #expect(container["status"] as? String == "findings", "the demo's planted findings")
        #expect((container["findings"] as? [[String: Any]])?.contains { $0["id"] as? String == "writer-violation" } == true, "the audit's findings are in the line")
        #expect((container["summary"] as? [String: Any])?["storeCount"] as? Int == 2)

        // Again without --resume or --force: every report is there, none is replaced.
        let kept = try FolderSnapshot(reports)
        let again = try CLI.run(["report", tickets.path, hostile.path, "--each", "--out-dir", reports.path, "--jsonl", folder.path("again.jsonl").path])
        #expect(again.status == 2)
        let refused = try CommandJSON.lines(of: folder.path("again.jsonl"))
        #expect(refused.count == 5 && refused.allSatisfy { ($0["error"] as? String)?.contains("already exists; add --force") == true }, "\(refused)")
        #expect(try FolderSnapshot(reports) == kept, "an existing report is left alone")
        // --resume: every input has its line; nothing runs, nothing is written.
        let resumed = try CLI.run(["report", tickets.path, hostile.path, missing, "--each", "-m", folder.path("m.json").path,
                                   "--out-dir", reports.path, "--jsonl", results.path, "--resume"])
        #expect(resumed.stderr.contains("ran 0 ") && resumed.stderr.contains("skipped 6 already done"), "\(resumed.stderr)")
        #expect(try FolderSnapshot(reports) == kept)
        // --force replaces one.
        let store = tickets.path + "/d.store"
        let forced = try CLI.run(["report", store, "--out-dir", reports.path, "--jsonl", folder.path("forced.jsonl").path, "--force"])
        #expect(forced.status == 1, "\(forced.stderr)")
        #expect(try FolderSnapshot(reports).entries[reports.path + "/" + BatchRuns.reportName(store)] != kept.entries[reports.path + "/" + BatchRuns.reportName(store)])
        #expect(try BatchRuns.files(in: reports) == written.sorted())
        #expect(try FolderSnapshot(tickets) == before, "the evidence is never modified")
    }

    @Test("report batch with --tz and two jobs: every report shows the zone, as a single run does")
    func batchTimeZone() throws {
        let folder = try TemporaryFolder("report-batch-tz")
        let tickets = folder.path("tickets")
        try FileManager.default.createDirectory(at: tickets, withIntermediateDirectories: true)
        for name in ["a.store", "b.store", "c.store"] { try ReportSamples.write(to: tickets.appendingPathComponent(name)) }
        let reports = folder.path("reports")
        let run = try CLI.run(["report", tickets.path, "--each", "--out-dir", reports.path, "--jsonl", folder.path("r.jsonl").path,
                               "--jobs", "2", "--tz", "Asia/Kolkata"])
        #expect(run.status == 1, "\(run.stderr)")
        for name in ["a.store", "b.store", "c.store"] {
            let input = tickets.path + "/" + name
            let html = try String(contentsOf: reports.appendingPathComponent(BatchRuns.reportName(input)), encoding: .utf8)
            #expect(html.contains("+05:30") && html.range(of: "[0-9]Z[<\" ,)]", options: .regularExpression) == nil, "\(name): times in the --tz zone on every job's thread")
            if name == "b.store" {
                let single = folder.path("single.html")
                _ = try CLI.run(["report", input, "--tz", "Asia/Kolkata", "--out", single.path])
                #expect(BatchRuns.comparable(try String(contentsOf: single, encoding: .utf8)) == BatchRuns.comparable(html))
            }
        }
    }

    @Test("report batch: --out-dir never an input's folder, inside an input, or inside a folder given with --each; usage errors name the right option")
    func batchOutputFolder() throws {
        let folder = try TemporaryFolder("report-batch-guard")
        let tickets = try BatchRuns.tickets(in: folder)
        let before = try FolderSnapshot(folder.url)
        let results = folder.path("r.jsonl").path
        let store = tickets.path + "/d.store"
        for (arguments, says) in [
            (["report", store, "--out-dir", tickets.path], "is the folder the input d.store is in"),
            (["report", tickets.path + "/a-container", "--out-dir", tickets.path + "/a-container/reports"], "is inside the input"),
            (["report", tickets.path, "--each", "--out-dir", tickets.path + "/reports"], "the folder given with --each whose every entry is an input"),
            (["report", tickets.path, "--each", "--out-dir", tickets.path + "/./sub/reports"], "the folder given with --each whose every entry is an input"),
            (["report", tickets.path, "--each", "--out-dir", tickets.path], "--out-dir"),
        ] {
            let r = try CLI.run(arguments + ["--jsonl", results])
            #expect(r.status == 2 && r.stderr.contains(says), "\(arguments): \(r.stderr)")
        }
        #expect(try FolderSnapshot(folder.url) == before, "a refused batch makes no folder, no results file, no report")
        for (arguments, says) in [
            (["report", store, "--out", folder.path("x.html").path, "--jsonl", results], "give --out-dir FOLDER"),
            (["report", store, "--jsonl", results], "Missing '--out-dir <folder>'"),
            (["report", store, "--out-dir", folder.path("reports").path], "add --jsonl FILE"),
            (["report", store, "--out-dir", "-", "--jsonl", results], "not - for stdout"),
        ] {
            let r = try CLI.run(arguments)
            #expect(r.status == 2 && r.stderr.contains(says), "\(arguments): \(r.stderr)")
        }
        #expect(try FolderSnapshot(folder.url) == before)
        let help = try CLI.run(["report", "--help"])
        for option in ["--out-dir", "--jsonl", "--jobs", "--resume", "--each", "--shard"] {
            #expect(help.stdout.contains(option), "report --help lists \(option)")
        }
    }

    @Test("--format markdown for scan, inspect and wal; escaped and sized for a ticket")
    func markdown() throws {
        let folder = try TemporaryFolder("markdown-cli")
        let store = folder.path("hostile.store")
        try ReportSamples.write(to: store)
        let inspect = try CLI.run(["inspect", store.path, "--format", "markdown"])
        #expect(inspect.status == 0, "\(inspect.stderr)")
        #expect(inspect.stdout.hasPrefix("## storelens inspect of `"))
        #expect(inspect.stdout.contains("\\<script\\>alert(1)\\</script\\>"))
        #expect(!inspect.stdout.contains("<script>"))
        let scan = try CLI.run(["scan", folder.url.path, "--format", "markdown"])
        #expect(scan.status == 0, "\(scan.stderr)")
        #expect(scan.stdout.contains("| `hostile.store` | coredata | swiftdata |"), "\(scan.stdout)")
        let wal = try CLI.run(["wal", store.path, "--format", "markdown"])
        #expect(wal.status == 0, "\(wal.stderr)")
        #expect(wal.stdout.contains("## storelens wal of `"))
        #expect(wal.stdout.contains("| commit | frames | pages | entities (tables) written |"))
    }

    @Test("progress goes to stderr only when asked for or on a terminal, never into results, and --quiet silences it")
    func progress() throws {
        let folder = try TemporaryFolder("progress-cli")
        try DemoContainer.write(into: folder.path("c"))
        let archive = folder.path("c.tar")
        try ArchiveMaker.write(try ArchiveMaker.entries(of: folder.path("c")), to: archive, format: .paxTar, filter: .gzip)
        let piped = try CLI.run(["scan", archive.path], environment: ["STORELENS_PROGRESS": "auto"])
        #expect(piped.status == 0)
        #expect(!piped.stderr.contains("\u{1B}") && !piped.stderr.contains("\r"), "stderr is not a terminal: no progress line")
        let forced = try CLI.run(["scan", archive.path], environment: ["STORELENS_PROGRESS": "always"])
        #expect(forced.status == 0)
        #expect(forced.stderr.contains("\r\u{1B}[2Kreading \(archive.path): "), "\(forced.stderr.debugDescription)")
        #expect(forced.stderr.hasSuffix("\r\u{1B}[2K"), "the line is cleared before the command ends")
        #expect(forced.stdout == piped.stdout, "results are the same with and without progress")
        let quiet = try CLI.run(["scan", archive.path, "--quiet"], environment: ["STORELENS_PROGRESS": "always"])
        #expect(quiet.stderr.isEmpty, "\(quiet.stderr.debugDescription)")
    }
}
