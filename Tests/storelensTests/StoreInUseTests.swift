import Foundation
import StoreTestSupport
import Testing

/// A store another process has open, or is writing (an app still running on a simulator
/// container): every command says so before its answer, from the locks SQLite itself takes.
@Suite("a store another process has open or is writing")
struct StoreInUseTests {
    /// Python's sqlite3 (SQLite itself, a second process) holding `sql` on `store` until the test
    /// removes the gate; returns when it holds it.
    static func holding(_ sql: String, on store: URL, gate: URL) throws -> Process {
        let ready = URL(fileURLWithPath: gate.path + ".ready")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", """
            import os, sqlite3, sys, time
            c = sqlite3.connect(sys.argv[1], isolation_level=None)
            c.execute(sys.argv[2]) if sys.argv[2] else c.execute('SELECT count(*) FROM sqlite_master').fetchall()
            open(sys.argv[3] + '.ready', 'w').close()
            for _ in range(600):
                if not os.path.exists(sys.argv[3]): break
                time.sleep(0.1)
            """, store.path, sql, gate.path]
        FileManager.default.createFile(atPath: gate.path, contents: nil)
        try process.run()
        for _ in 0 ..< 600 where !FileManager.default.fileExists(atPath: ready.path) && process.isRunning { usleep(50_000) }
        return process
    }

    @Test("a write transaction held by another process, and a connection merely open: each is a warning naming the process, before the answer")
    func warned() throws {
        for (sql, says) in [("BEGIN IMMEDIATE", "is being written by another process"), ("", "is open in another process")] {
            let folder = try TemporaryFolder("store-in-use")
            let store = try SampleStores.demo(in: folder)
            let gate = folder.path("gate")
            let holder = try Self.holding(sql, on: store, gate: gate)
            defer { try? FileManager.default.removeItem(at: gate); holder.waitUntilExit() }
            #expect(holder.isRunning, "the second process holds the store")
            for command in [["inspect", store.path], ["check", store.path], ["rows", store.path, "TodoItem", "--format", "jsonl"]] {
                let r = try CLI.run(command)
                #expect([0, 1].contains(r.status), "\(command): \(r.stderr)")
                #expect(r.stderr.contains("warning: ") && r.stderr.contains(says) && r.stderr.contains("pid \(holder.processIdentifier)"),
                        "\(command.joined(separator: " ")): \(r.stderr)")
            }
        }
        // Nobody holds it: no warning.
        let folder = try TemporaryFolder("store-not-in-use")
        let quiet = try CLI.run(["inspect", try SampleStores.demo(in: folder).path])
        #expect(!quiet.stderr.contains("another process"), "\(quiet.stderr)")
    }
}
