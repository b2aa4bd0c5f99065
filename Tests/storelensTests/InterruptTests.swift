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
