import Foundation
import StoreTestSupport
import Testing

/// SQLite cannot open a file whose path is over 512 bytes. storelens never opens an input with
/// SQLite, only its private copy, so an input that deep must read like any other.
@Suite("an input path longer than SQLite's 512 bytes")
struct LongInputPathTests {
    @Test("a container whose store is more than 512 bytes down: inspect, schema, history, wal and check exit 0, rows has SQLite's rows, input unchanged")
    func deepStore() throws {
        let folder = try TemporaryFolder("long-path")
        let container = folder.path("AppData")
        // 32 folders of 20 bytes: over 512 bytes in all, far under the 64 folders an inventory walks.
        let deep = (0..<32).reduce(container.appendingPathComponent("Library/Application Support")) { url, i in
            url.appendingPathComponent("folder-\(i)-" + String(repeating: "x", count: 19 - "folder-\(i)-".count))
        }
        try FileManager.default.createDirectory(at: deep, withIntermediateDirectories: true)
        // Built where the path is short (SQLite writes it), then moved down.
        let store = try HostileCorpus.moved(try HostileCorpus.store(in: folder.path("built")), into: deep)
        #expect(store.path.utf8.count > 512, "\(store.path.utf8.count) bytes")
        let truth = try SQLiteOracle(copying: store)
        let before = try FolderSnapshot(container)

        for command in ["inspect", "schema", "history", "wal", "check"] {
            let run = try CLI.run([command, container.path])
            #expect(run.status == 0, "storelens \(command) on a \(store.path.utf8.count)-byte path: exit \(run.status): \(run.stderr)")
        }
        let rows = try CLI.run(["rows", container.path, "TodoItem", "--format", "jsonl"])
        #expect(rows.status == 0, "\(rows.stderr)")
        #expect(rows.stdout.split(separator: "\n").count == (try truth.count("ZTODOITEM")))
        #expect(try FolderSnapshot(container) == before, "the input changed")
    }
}
