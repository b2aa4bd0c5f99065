import Foundation
import SQLiteAccess
import StoreTestSupport
import Testing

@Suite("Scratch folders on interrupt")
struct InterruptTests {
    /// Ctrl-C arrives at a known point, not after a guessed delay: storelens waits at the
    /// `working-copy` pause (`STORELENS_TEST_PAUSE_AT`, Acquisition/TestPause.swift) with its working
    /// copy made, so the scratch folder is known to exist and the process to be running.
    @Test("Ctrl-C while storelens works removes its scratch folder (made with --copy; read in place, none is) and leaves the input unchanged",
          arguments: ["inspect", "check", "wal"], [true, false])
    func interruptRemovesScratch(command: String, copying: Bool) throws {
        let folder = try TemporaryFolder("interrupt")
        let scratchParent = try TemporaryFolder("interrupt-scratch")
        let store = try SampleStores.todo(in: folder.url, rows: 50)
        let before = try FolderSnapshot(folder.url)
        let gates = try TemporaryFolder("interrupt-gate")
        let gate = gates.path("gate")

        let process = try PausedRun.start([command, store.path] + (copying ? ["--copy"] : []), at: "working-copy", scratch: scratchParent.url, gate: gate)
        let paused = process.isRunning
        #expect(paused, "storelens must be waiting at the pause when interrupted")
        let scratch = try FileManager.default.contentsOfDirectory(atPath: scratchParent.url.path)
        if copying {
            #expect(scratch.count == 1 && scratch.allSatisfy { $0.hasPrefix("storelens-") }, "the working folder exists when the signal arrives: \(scratch)")
        } else {
            #expect(scratch.isEmpty, "read in place, no working folder is made: \(scratch)")
        }
        process.interrupt()
        process.waitUntilExit()

        #expect(process.terminationStatus == 130, "Ctrl-C exits with 128 + SIGINT")
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratchParent.url.path).isEmpty)
        #expect(try FolderSnapshot(folder.url) == before)
    }
}

/// A CPU-time limit crossed (`ulimit -t`: SIGXCPU) ends a run like SIGTERM: exit 128 + the
/// signal, the working folder removed.
@Suite("a CPU-time limit crossed while storelens works")
struct CPULimitTests {
    @Test("SIGXCPU while storelens holds a working copy: exit 128 + SIGXCPU, no scratch left, the input unchanged")
    func cpuLimitRemovesScratch() throws {
        let folder = try TemporaryFolder("cpu-limit")
        let scratchParent = try TemporaryFolder("cpu-limit-scratch")
        let store = try SampleStores.todo(in: folder.url, rows: 50)
        let before = try FolderSnapshot(folder.url)
        let gates = try TemporaryFolder("cpu-limit-gate")
        let process = try PausedRun.start(["check", store.path, "--copy"], at: "working-copy", scratch: scratchParent.url, gate: gates.path("gate"))
        #expect(process.isRunning, "storelens must be waiting at the pause when the signal arrives")
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratchParent.url.path).count == 1, "the working folder exists")
        kill(process.processIdentifier, SIGXCPU)
        process.waitUntilExit()
        #expect(process.terminationReason == .exit && process.terminationStatus == 128 + SIGXCPU, "exit \(process.terminationStatus)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratchParent.url.path).isEmpty, "no scratch left")
        #expect(try FolderSnapshot(folder.url) == before)
    }
}

@Suite("Scratch folders when the reader of stdout goes away")
struct ClosedPipeTests {
    @Test("rows into a pipe whose reader closes early: a quiet stop with 141, no scratch left, input unchanged", arguments: ["table", "csv", "jsonl", "array", "tsv"])
    func closedPipeRemovesScratch(format: String) throws {
        let folder = try TemporaryFolder("pipe")
        let scratchParent = try TemporaryFolder("pipe-scratch")
        // Far more rows than a pipe buffers (64 KiB), so storelens is still writing when the reader goes.
        let store = try SampleStores.todo(in: folder.url, rows: 3000)
        let before = try FolderSnapshot(folder.url)

        let process = Process()
        process.executableURL = ProjectPaths.executable()
        process.arguments = ["rows", store.path, "TodoItem", "--format", format]
        var env = ProcessInfo.processInfo.environment
        env["TMPDIR"] = scratchParent.url.path
        process.environment = env
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        // Read the first bytes, as `head -c` would, then close the only read end.
        var first = [UInt8](repeating: 0, count: 512)
        let n = read(out.fileHandleForReading.fileDescriptor, &first, first.count)
        try out.fileHandleForReading.close()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()

        #expect(n > 0, "storelens wrote rows before the reader went away")
        #expect(process.terminationReason == .exit, "a clean exit, not death by SIGPIPE")
        #expect(process.terminationStatus == 141)
        #expect(stderr.isEmpty, "a quiet stop: \(String(decoding: stderr, as: UTF8.self))")
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratchParent.url.path).isEmpty, "no working folder left behind")
        #expect(try FolderSnapshot(folder.url) == before)
    }
}
