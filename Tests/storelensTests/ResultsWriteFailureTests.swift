import Foundation
import StoreBuilder
import StoreTestSupport
import Testing

/// Results that cannot be written (stdout on a full disk, a batch results file on a full file
/// system) are storelens' own failure: exit 3 with one sentence saying so, never exit 0 with a
/// partial answer; the working folders are removed and the input is unchanged.
@Suite("results that cannot be written are storelens' failure, not a partial answer", .serialized)
struct ResultsWriteFailureTests {
    static let fullDevice = "/dev/full"
    static let noSpace = String(cString: strerror(ENOSPC))

    /// Runs storelens with stdout on `stdoutPath` (TMPDIR a folder of its own): status and stderr.
    static func run(_ arguments: [String], stdout stdoutPath: String, scratch: URL) throws -> (status: Int32, stderr: String) {
        let process = Process()
        process.executableURL = ProjectPaths.executable()
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(["TMPDIR": scratch.path]) { $1 }
        let sink = try #require(FileHandle(forWritingAtPath: stdoutPath))
        defer { try? sink.close() }
        let err = Pipe()
        process.standardOutput = sink
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: stderr, as: UTF8.self))
    }

    @Test("stdout on a full device: exit 3, one sentence naming standard output and the reason",
          .enabled(if: FileManager.default.fileExists(atPath: fullDevice), "needs /dev/full (Linux)"),
          arguments: [["inspect", "STORE"], ["rows", "STORE", "TodoItem", "--format", "jsonl"], ["recover", "STORE", "--format", "jsonl"],
                      ["wal", "STORE", "--format", "json"], ["check", "STORE", "--format", "json"], ["history", "STORE"]])
    func fullStdout(_ arguments: [String]) throws {
        let folder = try TemporaryFolder("full-stdout")
        let scratch = try TemporaryFolder("full-stdout-scratch")
        let store = try SampleStores.demo(in: folder)
        let before = try FolderSnapshot(folder.url)
        let args = arguments.map { $0 == "STORE" ? store.path : $0 }
        // The same command with room writes something: the failure below is the write's alone.
        let fine = try CLI.run(args)
        #expect(!fine.stdout.isEmpty && fine.status != 3, "\(args[0]) with room: \(fine.stderr)")

        let (status, stderr) = try Self.run(args, stdout: Self.fullDevice, scratch: scratch.url)
        #expect(status == 3, "\(args[0]): exit 3 (storelens' own failure), not \(status): \(stderr)")
        #expect(stderr.contains("could not be written to standard output") && stderr.contains(Self.noSpace), "\(stderr)")
        #expect(stderr.contains("not a finding about the evidence"))
        #expect(stderr.split(separator: "\n").count == 1, "one sentence: \(stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.url.path).isEmpty, "no working folder left behind")
        #expect(try FolderSnapshot(folder.url) == before)
    }

    @Test("a batch results file on a full file system: exit 3, the file named, and --resume finishes the batch once there is room",
          .enabled(if: SmallTmpfs.available, Comment(rawValue: SmallTmpfs.unavailable)))
    func fullBatchFile() throws {
        let scratch = try TemporaryFolder("full-batch-scratch")
        // Inputs in folders kept for the whole test, more lines than the small file system holds
        // (measured: the same batch written where there is room).
        let folders = try (0 ..< 16).map { try TemporaryFolder("full-batch-\($0)") }
        let stores = try folders.map { try SampleStores.demo(in: $0).path }
        let measure = try TemporaryFolder("full-batch-measure")
        let whole = try CLI.run(["inspect"] + stores + ["--jsonl", measure.path("all.jsonl").path])
        #expect(whole.status == 0, "\(whole.stderr)")
        let size = try #require(try FileManager.default.attributesOfItem(atPath: measure.path("all.jsonl").path)[.size] as? Int)
        let small = try SmallTmpfs(bytes: 4096)
        try #require(size > 2 * 4096, "the batch's lines (\(size) bytes) do not fill the small file system")
        let results = small.url.appendingPathComponent("inspect.jsonl").path
        let (status, stderr) = try Self.run(["inspect"] + stores + ["--jsonl", results], stdout: "/dev/null", scratch: scratch.url)
        #expect(status == 3, "exit 3, not \(status): \(stderr)")
        #expect(stderr.contains("batch results file") && stderr.contains(results) && stderr.contains(Self.noSpace), "\(stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.url.path).isEmpty, "no working folder left behind")
        // Moved where there is room, --resume runs what is missing and every input has its line.
        let roomy = try TemporaryFolder("full-batch-resume")
        let moved = roomy.path("inspect.jsonl").path
        try FileManager.default.copyItem(atPath: results, toPath: moved)
        let resumed = try CLI.run(["inspect"] + stores + ["--jsonl", moved, "--resume"])
        #expect(resumed.status == 0, "\(resumed.stderr)")
        let lines = try String(contentsOfFile: moved, encoding: .utf8).split(separator: "\n")
        let inputs = lines.compactMap { line -> String? in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8))).flatMap { ($0 as? [String: Any])?["input"] as? String }
        }
        #expect(Set(inputs) == Set(stores), "every input has a line after --resume")
        #expect(inputs.count == stores.count, "no input has two lines")
    }

    @Test("an output file on a full file system: exit 3 naming the file, nothing half-written left there",
          .enabled(if: SmallTmpfs.available, Comment(rawValue: SmallTmpfs.unavailable)),
          arguments: [["report", "STORE", "--out", "OUT/report.html"], ["recover", "STORE", "--out", "OUT/recovered.sqlite"],
                      ["wal", "STORE", "--as-of", "0", "--out", "OUT/as-of-0.sqlite"], ["export", "STORE", "--out", "OUT/export.sqlite"],
                      ["scan", "STORE", "--evidence", "OUT/evidence.json"], ["repair", "STORE", "--out", "OUT/repaired.store"],
                      ["merge", "RESULTS", "--out", "OUT/merged.jsonl"]])
    func fullOutputFolder(_ arguments: [String]) throws {
        let folder = try TemporaryFolder("full-out")
        let scratch = try TemporaryFolder("full-out-scratch")
        // repair writes only a store with something to repair (a Z_MAX below its largest key).
        let store = arguments[0] == "repair"
            ? try InvariantFixture.make(in: folder.url) { w in try w.executeRaw("UPDATE Z_PRIMARYKEY SET Z_MAX = 1 WHERE Z_NAME = 'Note'") }
            : try SampleStores.demo(in: folder)
        // merge reads a batch's results file (written here, before the snapshot of the inputs).
        let results = folder.path("inspect.jsonl").path
        if arguments.contains("RESULTS") {
            let batch = try CLI.run(["inspect", store.path, "--jsonl", results])
            #expect(batch.status == 0, "\(batch.stderr)")
        }
        func placed(_ argument: String, out: URL) -> String {
            argument == "STORE" ? store.path : argument == "RESULTS" ? results : argument.replacingOccurrences(of: "OUT", with: out.path)
        }
        let before = try FolderSnapshot(folder.url)
        // Where there is room the file is written.
        let roomy = try TemporaryFolder("full-out-roomy")
        let fine = try CLI.run(arguments.map { placed($0, out: roomy.url) })
        #expect(fine.status == 0, "\(arguments[0]) with room: \(fine.stderr)")
        #expect(try !FileManager.default.contentsOfDirectory(atPath: roomy.url.path).isEmpty)

        // A file system of one page, taken by a byte of another file: full for any write.
        let small = try SmallTmpfs(bytes: 4096)
        try Data([1]).write(to: small.url.appendingPathComponent("filler"))
        let args = arguments.map { placed($0, out: small.url) }
        let target = try #require(args.last)
        let (status, stderr) = try Self.run(args, stdout: "/dev/null", scratch: scratch.url)
        #expect(status == 3, "\(arguments[0]): exit 3 (storelens' own failure), not \(status): \(stderr)")
        #expect(stderr.contains(target) && stderr.contains("not a finding about the evidence"), "\(stderr)")
        #expect(!stderr.contains("working folder"), "the output's folder is not the working folder: \(stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: small.url.path) == ["filler"], "nothing left in the full folder")
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.url.path).isEmpty, "no working folder left behind")
        #expect(try FolderSnapshot(folder.url) == before)
    }
}
