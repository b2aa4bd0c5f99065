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

extension LongInputPathTests {
    @Test("a store more than 512 bytes down inside an archive is read (its extracted copy is copied up), never called damaged")
    func deepStoreInArchive() throws {
        let folder = try TemporaryFolder("long-path-archive")
        // One file, so the archive holds the whole store.
        let store = try HostileCorpus.store(in: folder.path("built"), journal: .delete)
        let name = (0..<32).map { "folder-\($0)-" + String(repeating: "x", count: 19 - "folder-\($0)-".count) }.joined(separator: "/") + "/" + store.lastPathComponent
        #expect(name.utf8.count > 512)
        let archive = folder.path("deep.tar")
        try ArchiveMaker.write([.file(name, try Data(contentsOf: store))], to: archive, format: .paxTar)
        let truth = try SQLiteOracle(copying: store)
        for command in ["inspect", "check"] {
            let run = try CLI.run([command, archive.path])
            #expect(run.status == 0, "storelens \(command): exit \(run.status): \(run.stderr)")
        }
        let rows = try CLI.run(["rows", archive.path, "TodoItem", "--format", "jsonl"])
        #expect(rows.status == 0, "\(rows.stderr)")
        #expect(rows.stdout.split(separator: "\n").count == (try truth.count("ZTODOITEM")))
    }

    @Test("a TMPDIR too deep for SQLite is storelens' own failure when a copy is made: exit 3 naming TMPDIR, never the evidence called damaged; read in place, no TMPDIR is needed")
    func tmpdirTooDeep() throws {
        let folder = try TemporaryFolder("long-tmpdir")
        let store = try HostileCorpus.store(in: folder.path("built"))
        var tmp = folder.path("tmp")
        while tmp.path.utf8.count < 520 { tmp.appendPathComponent(String(repeating: "t", count: 40)) }
        try FileManager.default.createDirectory(at: tmp, withIntermediateDirectories: true)
        let inPlace = try CLI.run(["inspect", store.path, "--format", "json"], environment: ["TMPDIR": tmp.path])
        #expect(inPlace.status == 0, "read in place, the working folder is never needed: exit \(inPlace.status): \(inPlace.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: tmp.path).isEmpty, "nothing made in TMPDIR")
        let run = try CLI.run(["inspect", store.path, "--copy"], environment: ["TMPDIR": tmp.path])
        #expect(run.status == 3, "exit \(run.status): \(run.stderr)")
        #expect(run.stderr.contains("set TMPDIR to a shorter folder") && run.stderr.contains("not a finding about the evidence") && !run.stderr.contains("damaged"),
                "\(run.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: tmp.path).isEmpty, "scratch left in TMPDIR")
    }
}
