import Foundation
import StoreBuilder
import StoreTestSupport
import Testing

@Suite("batch mode: --jsonl, --jobs, --resume, --each")
struct BatchTests {
    @Test("scan: one line per input with two jobs, the corrupt archive's line records its error, --resume does nothing the second time")
    func scanBatch() throws {
        let folder = try TemporaryFolder("batch-scan")
        let tickets = try BatchRuns.tickets(in: folder)
        let before = try FolderSnapshot(tickets)
        let results = folder.path("scan.jsonl")

        let first = try CLI.run(["scan", tickets.path, "--each", "--jsonl", results.path, "--jobs", "2"])
        #expect(first.status == 2, "one input failed: \(first.stderr)")
        #expect(first.stderr.contains("scan batch: 4 inputs; ran 4 (3 ok, 0 with findings, 1 failed) with 2 jobs; skipped 0 already done"), "\(first.stderr)")
        #expect(first.stdout.isEmpty)
        let lines = try CommandJSON.lines(of: results)
        #expect(lines.count == 4)
        let byInput = Dictionary(uniqueKeysWithValues: lines.map { (($0["input"] as? String) ?? "", $0) })
        #expect(Set(byInput.keys) == Set(["a-container", "b.tar.gz", "c-corrupt.tar.gz", "d.store"].map { tickets.path + "/" + $0 }))
        let corrupt = try #require(byInput[tickets.path + "/c-corrupt.tar.gz"])
        #expect(corrupt["status"] as? String == "error")
        #expect(corrupt["exitCode"] as? Int == 2)
        #expect((corrupt["error"] as? String)?.contains("c-corrupt.tar.gz") == true, "\(corrupt)")
        #expect((corrupt["sha256"] as? String)?.count == 64, "a file input is named by its hash even when it cannot be read")
        let archive = try #require(byInput[tickets.path + "/b.tar.gz"])
        #expect(archive["status"] as? String == "ok")
        #expect((archive["summary"] as? [String: Any])?["storeCount"] as? Int == 2)
        #expect(byInput[tickets.path + "/a-container"]?["sha256"] is NSNull, "a folder has no single hash")
        #expect((byInput[tickets.path + "/d.store"]?["sha256"] as? String)?.count == 64)

        let written = try Data(contentsOf: results)
        let second = try CLI.run(["scan", tickets.path, "--each", "--jsonl", results.path, "--jobs", "2", "--resume"])
        #expect(second.status == 2, "the batch's outcome is the same: one input failed")
        #expect(second.stderr.contains("ran 0 (0 ok, 0 with findings, 0 failed)"), "\(second.stderr)")
        #expect(second.stderr.contains("skipped 4 already done"), "\(second.stderr)")
        #expect(try Data(contentsOf: results) == written, "no work and no new lines on the second run")

        // A new input joins the batch: only it runs.
        try ReportSamples.write(to: tickets.appendingPathComponent("e.store"))
        let third = try CLI.run(["scan", tickets.path, "--each", "--jsonl", results.path, "--resume"])
        #expect(third.stderr.contains("ran 1 (1 ok, 0 with findings, 0 failed) with 1 job; skipped 4 already done"), "\(third.stderr)")
        #expect(try CommandJSON.lines(of: results).count == 5)
        try FileManager.default.removeItem(at: tickets.appendingPathComponent("e.store"))
        try FileManager.default.removeItem(at: tickets.appendingPathComponent("e.store-wal"))
        try? FileManager.default.removeItem(at: tickets.appendingPathComponent("e.store-shm"))
        #expect(try FolderSnapshot(tickets) == before, "the evidence is never modified")
    }

    @Test("audit and inspect: findings and summaries per input; lines from two runs concatenate")
    func auditAndInspect() throws {
        let folder = try TemporaryFolder("batch-audit")
        let tickets = try BatchRuns.tickets(in: folder)
        try Data(DemoContainer.manifest.utf8).write(to: folder.path("m.json"))
        let results = folder.path("all.jsonl")
        let audit = try CLI.run(["audit", tickets.appendingPathComponent("a-container").path, tickets.appendingPathComponent("c-corrupt.tar.gz").path,
                                 "-m", folder.path("m.json").path, "--jsonl", results.path, "--jobs", "2"])
        #expect(audit.status == 2, "\(audit.stderr)")
        let inspect = try CLI.run(["inspect", tickets.appendingPathComponent("d.store").path, "--jsonl", results.path])
        // The results file inside the folder of inputs is not an input.
        let inFolder = try CLI.run(["scan", tickets.path, "--each", "--jsonl", tickets.appendingPathComponent("results.jsonl").path])
        #expect(inFolder.stderr.contains("scan batch: 4 inputs;"), "\(inFolder.stderr)")
        try FileManager.default.removeItem(at: tickets.appendingPathComponent("results.jsonl"))
        #expect(inspect.status == 0, "\(inspect.stderr)")
        let lines = try CommandJSON.lines(of: results)
        #expect(lines.map { $0["command"] as? String } .sorted { ($0 ?? "") < ($1 ?? "") } == ["audit", "audit", "inspect"])
        let container = try #require(lines.first { ($0["input"] as? String)?.hasSuffix("a-container") == true })
        #expect(container["status"] as? String == "findings")
        #expect(container["exitCode"] as? Int == 1)
        let findings = try #require(container["findings"] as? [[String: Any]])
        #expect(findings.contains { $0["id"] as? String == "writer-violation" })
        #expect((container["summary"] as? [String: Any])?["error"] as? Int == findings.filter { $0["severity"] as? String == "error" }.count)
        let store = try #require(lines.first { $0["command"] as? String == "inspect" })
        let stores = try #require((store["summary"] as? [String: Any])?["stores"] as? [[String: Any]])
        #expect(stores.first?["entities"] as? Int == 2)
        #expect(stores.first?["historyTransactions"] as? Int == 4)
    }

    @Test("check: a clean store, one with a planted problem and a cut archive give ok, findings and error lines")
    func checkBatch() throws {
        let folder = try TemporaryFolder("batch-check")
        let tickets = try BatchRuns.tickets(in: folder)
        let cleanFolder = tickets.appendingPathComponent("clean")
        let brokenFolder = tickets.appendingPathComponent("broken")
        for f in [cleanFolder, brokenFolder] { try FileManager.default.createDirectory(at: f, withIntermediateDirectories: true) }
        let clean = try InvariantFixture.make(in: cleanFolder)
        let broken = try InvariantFixture.make(in: brokenFolder) { try $0.executeRaw("UPDATE Z_PRIMARYKEY SET Z_MAX = 1 WHERE Z_NAME = 'Note'") }
        let corrupt = tickets.appendingPathComponent("c-corrupt.tar.gz")
        let before = try FolderSnapshot(tickets)
        let results = folder.path("check.jsonl")

        let run = try CLI.run(["check", clean.path, broken.path, corrupt.path, "--jsonl", results.path, "--jobs", "2"])
        #expect(run.status == 2, "the cut archive fails: \(run.stderr)")
        #expect(run.stderr.contains("check batch: 3 inputs; ran 3 (1 ok, 1 with findings, 1 failed)"), "\(run.stderr)")
        let byInput = Dictionary(uniqueKeysWithValues: try CommandJSON.lines(of: results).map { (($0["input"] as? String) ?? "", $0) })
        let ok = try #require(byInput[clean.path])
        #expect(ok["status"] as? String == "ok")
        #expect((ok["summary"] as? [String: Any])?["error"] as? Int == 0)
        let found = try #require(byInput[broken.path])
        #expect(found["status"] as? String == "findings")
        #expect(found["exitCode"] as? Int == 1)
        #expect((found["summary"] as? [String: Any])?["error"] as? Int == 1)
        #expect((found["findings"] as? [[String: Any]])?.map { $0["id"] as? String } == ["zmax-below-max-pk"])
        #expect(byInput[corrupt.path]?["status"] as? String == "error")
        #expect(try FolderSnapshot(tickets) == before, "a batch leaves every input byte-identical")
    }

    @Test("batch options without --jsonl are usage errors; --jsonl - writes lines to stdout")
    func usage() throws {
        let folder = try TemporaryFolder("batch-usage")
        try ReportSamples.write(to: folder.path("s.store"))
        for extra in [["--jobs", "2"], ["--resume"], ["--each"]] {
            let r = try CLI.run(["scan", folder.path("s.store").path] + extra)
            #expect(r.status == 2)
            #expect(r.stderr.contains("--jsonl"), "\(r.stderr)")
        }
        let zero = try CLI.run(["scan", folder.path("s.store").path, "--jsonl", "-", "--jobs", "0"])
        #expect(zero.status == 2)
        let stdout = try CLI.run(["inspect", folder.path("s.store").path, folder.path("missing.store").path, "--jsonl", "-"])
        #expect(stdout.status == 2)
        let lines = stdout.stdout.split(separator: "\n")
        #expect(lines.count == 2)
        #expect(lines.contains { $0.contains("\"status\":\"error\"") && $0.contains("missing.store: no such file or folder") })
    }
}
