import Foundation
import SQLiteAccess
import StoreBuilder
import StoreTestSupport
import Testing

/// Keys a device stored at or near SQLite's largest integer: every command answers with a
/// finding, a plan or one clear sentence, never a trap, and never leaves scratch behind.
@Suite("stored keys at the top of the integer range")
struct StoredKeyOverflowTests {
    static let top = Int64.max

    /// A demo container whose modern store gets `sql` (run by SQLite on the builder's output).
    static func container(in folder: TemporaryFolder, _ sql: String, _ arguments: [DatabaseValue]) throws -> (container: URL, store: URL, manifest: URL) {
        let container = folder.path("c")
        try DemoContainer.write(into: container)
        let manifest = folder.path("m.json")
        try Data(DemoContainer.manifest.utf8).write(to: manifest)
        let store = container.appendingPathComponent("Library/Application Support/default.store")
        let db = try Connection.open(path: store.path, mode: .readWrite)
        try db.run(sql, arguments)
        return (container, store, manifest)
    }

    /// How many TodoItem records the manifest repair imports into an unchanged demo container,
    /// read from repair's own JSON plan (the boundary below depends on it).
    static func importedCount() throws -> Int {
        let folder = try TemporaryFolder("overflow-count")
        let c = try container(in: folder, "SELECT 1", [])
        let r = try CLI.run(["repair", c.container.path, "-m", c.manifest.path, "--plan", "--format", "json"])
        let json = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
        let actions = try #require((json["plan"] as? [String: Any])?["actions"] as? [[String: Any]])
        return try #require(actions.first { $0["action"] as? String == "import-missing-records" }?["count"] as? Int)
    }

    static func expectNoCrash(_ r: CommandResult, _ what: String) {
        #expect(r.status >= 0 && r.status <= 3, "\(what): exit \(r.status)")
        #expect(!r.stderr.contains("Backtrace") && !r.stderr.contains("Fatal error"), "\(what): \(r.stderr.prefix(400))")
    }

    @Test("Z_MAX or a Z_PK at or near 2^63−1: repair -m refuses in one sentence when the imports (and the next insert) do not fit, repairs when they do",
          arguments: ["zmax", "pk"])
    func manifestRepair(_ where_: String) throws {
        let n = try Self.importedCount()
        #expect(n > 1)
        // `room` free keys above the highest: the imports fit when one more key stays free for the
        // app's next insert (room == n + 1); room == n would use the key space up.
        for room in [0, 1, n, n + 1] {
            let value = Self.top - Int64(room)
            let folder = try TemporaryFolder("overflow-\(where_)-\(room)")
            let scratch = try TemporaryFolder("overflow-scratch")
            let sql = where_ == "zmax"
                ? "UPDATE Z_PRIMARYKEY SET Z_MAX = ? WHERE Z_NAME = 'TodoItem'"
                : "UPDATE ZTODOITEM SET Z_PK = ? WHERE Z_PK = (SELECT max(Z_PK) FROM ZTODOITEM)"
            let c = try Self.container(in: folder, sql, [.integer(value)])
            let before = try FolderSnapshot(c.container)
            let env = ["TMPDIR": scratch.url.path]
            let plan = try CLI.run(["repair", c.container.path, "-m", c.manifest.path, "--plan"], environment: env)
            Self.expectNoCrash(plan, "repair -m --plan with \(where_) \(value)")
            let out = folder.path("fixed.store")
            let run = try CLI.run(["repair", c.container.path, "-m", c.manifest.path, "--out", out.path], environment: env)
            Self.expectNoCrash(run, "repair -m with \(where_) \(value)")
            if room <= n {
                for r in [plan, run] {
                    #expect(r.status == 2, "refused: \(r.stderr)")
                    let lines = r.stderr.split(separator: "\n")
                    #expect(lines.count == 1, "one sentence: \(r.stderr)")
                    #expect(r.stderr.contains("TodoItem") && r.stderr.contains(String(value)) && r.stderr.contains("default.store"),
                            "names the entity, the value and the store: \(r.stderr)")
                }
                #expect(!FileManager.default.fileExists(atPath: out.path))
            } else {
                #expect(plan.status == 0, "\(plan.stderr)")
                #expect(run.status == 0, "\(run.stderr)")
                // SQLite itself, on the output: the imported rows end one below the largest integer.
                let db = try Connection.open(path: out.path, mode: .readOnly)
                #expect(try db.scalar("SELECT max(Z_PK) FROM ZTODOITEM").int64 == Self.top - 1)
                #expect(try db.scalar("SELECT count(*) FROM ZTODOITEM WHERE Z_PK > ?", [.integer(value)]).int == n)
                #expect(try db.scalar("SELECT typeof(Z_MAX) FROM Z_PRIMARYKEY WHERE Z_NAME = 'TodoItem'").string == "integer")
            }
            #expect(try FolderSnapshot(c.container) == before, "the input is untouched")
            #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.url.path).isEmpty, "no scratch left behind")
        }
    }

    @Test("history keys with no room: --record-history refuses and names the history entity")
    func historyKeys() throws {
        let folder = try TemporaryFolder("overflow-history")
        let scratch = try TemporaryFolder("overflow-history-scratch")
        let c = try Self.container(in: folder, "UPDATE Z_PRIMARYKEY SET Z_MAX = ? WHERE Z_NAME = 'CHANGE'", [.integer(Self.top - 1)])
        let r = try CLI.run(["repair", c.container.path, "-m", c.manifest.path, "--record-history", "--plan"], environment: ["TMPDIR": scratch.url.path])
        Self.expectNoCrash(r, "repair -m --record-history")
        #expect(r.status == 2)
        #expect(r.stderr.contains("Change") && r.stderr.contains(String(Self.top - 1)), "\(r.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.url.path).isEmpty)
    }

    @Test("check, inspect, audit, rows and repair on a store whose keys and Z_OPT sit at 2^63−1: answers, no trap")
    func otherCommands() throws {
        let folder = try TemporaryFolder("overflow-commands")
        let scratch = try TemporaryFolder("overflow-commands-scratch")
        let c = try Self.container(in: folder, """
            UPDATE ZTODOITEM SET Z_PK = ?1, Z_OPT = ?1 WHERE Z_PK = (SELECT max(Z_PK) FROM ZTODOITEM)
            """, [.integer(Self.top)])
        do {
            let db = try Connection.open(path: c.store.path, mode: .readWrite)
            try db.run("UPDATE Z_PRIMARYKEY SET Z_MAX = ? WHERE Z_NAME = 'TodoList'", [.integer(Self.top)])
        }
        let before = try FolderSnapshot(c.container)
        let env = ["TMPDIR": scratch.url.path]
        for args in [["check", c.store.path], ["inspect", c.store.path], ["rows", c.store.path, "TodoItem"],
                     ["audit", c.container.path, "-m", c.manifest.path], ["repair", c.store.path, "--plan"]] {
            let r = try CLI.run(args, environment: env)
            Self.expectNoCrash(r, args[0])
            #expect(r.status <= 1, "\(args[0]): \(r.stderr)")
        }
        // check names the exhausted key space (a finding, not a trap).
        let check = try CLI.run(["check", c.store.path, "--format", "json"], environment: env)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(check.stdout.utf8)) as? [String: Any])
        let exhausted = ((json["findings"] as? [[String: Any]]) ?? []).filter { $0["id"] as? String == "zmax-exhausted" }.compactMap { $0["entity"] as? String }
        #expect(Set(exhausted) == ["TodoItem", "TodoList"], "\(exhausted)")
        // The repair raises TodoItem's lagging Z_MAX to the largest key without overflowing.
        let out = folder.path("fixed.store")
        let r = try CLI.run(["repair", c.store.path, "--out", out.path], environment: env)
        #expect(r.status == 0, "\(r.stderr)")
        let db = try Connection.open(path: out.path, mode: .readOnly)
        #expect(try db.scalar("SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_NAME = 'TodoItem'").int64 == Self.top)
        #expect(try FolderSnapshot(c.container) == before)
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.url.path).isEmpty)
    }
}
