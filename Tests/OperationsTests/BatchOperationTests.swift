import Acquisition
import Foundation
import Operations
import StoreBuilder
import StoreFormats
import StoreTestSupport
import Testing

/// `Storelens.batch` and `Storelens.merge` from the library, as an app's tool calls them: no
/// command line, no exit code. Each line is held against facts found another way: the stores
/// `Storelens.scan` finds in the input on its own, the file's SHA-256 as the test hashes it, the
/// sentence `Storelens.describe` gives the error the input throws alone.
@Suite("the batch and merge operations")
struct BatchOperationTests {
    /// How many times the job ran, from the batch's threads.
    final class Calls: @unchecked Sendable {
        private let lock = NSLock()
        private var inputs: [String] = []
        func add(_ input: String) { lock.lock(); inputs.append(input); lock.unlock() }
        var count: Int { lock.lock(); defer { lock.unlock() }; return inputs.count }
    }

    /// A store file, a container folder, and a path where there is nothing.
    static func inputs(in folder: TemporaryFolder) throws -> (store: String, container: String, missing: String) {
        let store = try SampleStores.todo(in: folder.url, rows: 7)
        let container = folder.path("container")
        try DemoContainer.write(into: container)
        return (store.path, container.path, folder.path("no-such-ticket.tar.gz").path)
    }

    /// The job of a scan batch: the stores found, in the session the batch made for the input.
    static func scanJob(_ calls: Calls) -> Storelens.BatchJob {
        { input, evidence in
            calls.add(input)
            return try evidence.reading { session in
                let result = try Storelens.scan([input], Storelens.ScanOptions(hashArchives: true), in: session)
                try session.finish()
                return Storelens.BatchOutcome(exitCode: 0, summary: .object([("storeCount", .int(result.stores.count))]))
            }
        }
    }

    static func lines(_ file: URL) throws -> [[String: Any]] {
        try String(contentsOf: file, encoding: .utf8).split(separator: "\n").map { line in
            try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        }
    }

    @Test("two inputs and a bad third: a line each, the good ones' facts as scan finds them alone, the bad one's error as describe words it; --resume runs none again")
    func batchLines() throws {
        let folder = try TemporaryFolder("batch-op")
        let (store, container, missing) = try Self.inputs(in: folder)
        let resultsFolder = try TemporaryFolder("batch-op-results")
        let results = resultsFolder.path("scan.jsonl")
        let before = try FolderSnapshot(folder.url)

        let calls = Calls()
        let options = Storelens.BatchOptions(command: "scan", results: results.path, jobs: 2, toolVersion: "test", host: "test-host")
        let run = try Storelens.batch([store, container, missing], options, job: Self.scanJob(calls))

        // Independently: what scan finds in each input alone, the store file's hash, the missing input's error.
        let storeCount = try Storelens.scan([store]).stores.count
        let containerCount = try Storelens.scan([container]).stores.count
        #expect(storeCount == 1 && containerCount > 1, "the container holds several stores: \(containerCount)")
        let expectedError = try #require(throws: (any Error).self) { try Storelens.scan([missing]) }
        let described = Storelens.describe(expectedError)

        let counts: [Int] = [run.inputs, run.allInputs, run.ran, run.ok, run.findings, run.failed, run.skipped]
        #expect(counts == [3, 3, 3, 2, 0, 1, 0])
        #expect(run.exitCode == described.exitCode, "the worst input's")
        #expect(described.exitCode == 2, "a missing input is the input's failure: \(described.sentence)")
        let lines = try Self.lines(results)
        #expect(lines.count == 3 && calls.count == 3)
        let byInput = Dictionary(uniqueKeysWithValues: lines.map { ($0["input"] as? String ?? "", $0) })
        #expect(Set(byInput.keys) == [store, container, missing])
        for line in lines {
            #expect(line["schemaVersion"] as? Int == BatchLine.schemaVersion && line["command"] as? String == "scan")
            #expect(line["host"] as? String == "test-host" && line["storelensVersion"] as? String == "test")
        }
        let storeLine = try #require(byInput[store]), containerLine = try #require(byInput[container]), missingLine = try #require(byInput[missing])
        #expect(storeLine["status"] as? String == "ok" && storeLine["exitCode"] as? Int == 0)
        #expect((storeLine["summary"] as? [String: Any])?["storeCount"] as? Int == storeCount)
        #expect(storeLine["sha256"] as? String == (try SHA256.hexOfFile(at: URL(fileURLWithPath: store))), "a file input is named by its hash")
        #expect((containerLine["summary"] as? [String: Any])?["storeCount"] as? Int == containerCount)
        #expect(containerLine["sha256"] is NSNull, "a folder has no hash of its own")
        #expect(missingLine["status"] as? String == "error" && missingLine["exitCode"] as? Int == 2)
        #expect(missingLine["error"] as? String == described.sentence)
        #expect(try FolderSnapshot(folder.url) == before, "the inputs are unchanged, nothing was written beside them")

        // Resumed: every input has its line, so no job runs and the exit code is still the worst line's.
        let resumed = try Storelens.batch([store, container, missing], { var o = options; o.resume = true; return o }(), job: Self.scanJob(calls))
        let resumedCounts: [Int] = [resumed.inputs, resumed.ran, resumed.skipped]
        #expect(resumedCounts == [3, 0, 3] && resumed.exitCode == 2)
        let linesAfter = try Self.lines(results).count
        #expect(calls.count == 3 && linesAfter == 3)
    }

    @Test("merge: the lines of two results files joined, the input done twice listed with its hosts, the failure with its sentence, --out written")
    func merge() throws {
        let folder = try TemporaryFolder("batch-op-merge")
        let (store, container, missing) = try Self.inputs(in: folder)
        let resultsFolder = try TemporaryFolder("batch-op-merge-results")
        let first = resultsFolder.path("first.jsonl"), second = resultsFolder.path("second.jsonl")
        let calls = Calls()
        _ = try Storelens.batch([store, container, missing], Storelens.BatchOptions(command: "scan", results: first.path, host: "h1"), job: Self.scanJob(calls))
        _ = try Storelens.batch([store], Storelens.BatchOptions(command: "scan", results: second.path, host: "h2"), job: Self.scanJob(calls))
        let written = try Self.lines(first) + Self.lines(second)

        let out = resultsFolder.path("merged.jsonl")
        let merged = try Storelens.merge(files: [first, second], out: out.path)
        #expect(merged.files == [first.path, second.path] && merged.lineCount == written.count)
        #expect(merged.inputCount == 3 && merged.malformedCount == 0)
        let scan = try #require(merged.commands.first)
        #expect(merged.commands.count == 1 && scan.command == "scan")
        #expect(scan.inputs == 3 && scan.ok == 2 && scan.errors == 1 && scan.worstExitCode == 2 && merged.exitCode == 2)
        #expect(merged.duplicates.map { "\($0.command) \($0.input) \($0.lines) \($0.hosts)" } == ["scan \(store) 2 [\"h1\", \"h2\"]"])
        #expect(merged.hosts == ["h1", "h2"])
        let failure = try #require(merged.failures.first)
        #expect(failure.input == missing && failure.error == (written.first { $0["input"] as? String == missing }?["error"] as? String))
        // The merged file: one line per input, the last line read for the store (the second file's).
        let mergedLines = try Self.lines(out)
        #expect(mergedLines.compactMap { $0["input"] as? String } == [store, container, missing].sorted())
        #expect(mergedLines.first { $0["input"] as? String == store }?["host"] as? String == "h2")

        #expect(throws: InputError.self, "merge never overwrites") { try Storelens.merge(files: [first], out: out.path) }
        #expect(throws: BatchMergeError.self, "a folder is no results file") { try Storelens.merge(files: [resultsFolder.url]) }
    }

    @Test("an error describes itself: its sentence and class; one that does not is an internal error")
    func describe() {
        let input = Storelens.describe(InputError(message: "--store x matches nothing."))
        #expect(input == Storelens.ErrorDescription(sentence: "--store x matches nothing.", errorClass: .input) && input.exitCode == 2)
        struct Unknown: Error {}
        let unknown = Storelens.describe(Unknown())
        #expect(unknown.errorClass == .ours && unknown.exitCode == 3 && unknown.sentence.hasPrefix("internal error: "))
    }
}
