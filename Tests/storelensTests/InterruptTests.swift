import Foundation
import SQLiteAccess
import StoreTestSupport
import Testing

@Suite("Scratch folders on interrupt")
struct InterruptTests {
    @Test("Ctrl-C while storelens works removes its scratch folder and leaves the input unchanged")
    func interruptRemovesScratch() throws {
        let folder = try TemporaryFolder("interrupt")
        let scratchParent = try TemporaryFolder("interrupt-scratch")
        let store = folder.path("big.sqlite")
        do {
            // Big enough that hashing and copying take a while.
            let db = try Connection.open(path: store.path, mode: .create)
            try db.execute("CREATE TABLE t (x BLOB)")
            try db.execute("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 25) INSERT INTO t SELECT randomblob(1000000) FROM n")
        }
        let before = try FolderSnapshot(folder.url)

        let process = Process()
        process.executableURL = ProjectPaths.executable()
        process.arguments = ["inspect", store.path]
        var env = ProcessInfo.processInfo.environment
        env["TMPDIR"] = scratchParent.url.path
        process.environment = env
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        // Wait until the scratch folder exists, then interrupt.
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline,
              (try? FileManager.default.contentsOfDirectory(atPath: scratchParent.url.path).isEmpty) ?? true {
            usleep(2_000)
        }
        #expect(process.isRunning, "storelens finished before it could be interrupted; make the store bigger")
        process.interrupt()
        process.waitUntilExit()

        #expect(process.terminationStatus == 130)
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratchParent.url.path).isEmpty)
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
        let store = try BadInputTests.builtStore(in: folder.url, rows: 3000)
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
