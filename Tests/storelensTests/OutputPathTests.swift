import Foundation
import StoreBuilder
import StoreTestSupport
import Testing

/// Every output option is refused, before any work, when it names evidence under any name:
/// the store family's files directly, through a symlink, a hard link or another spelling of the
/// path, a new sidecar-like name beside the store, or a new file inside an input folder.
@Suite("output paths never land on or in evidence")
struct OutputPathTests {
    /// A WAL-mode store with its -wal and -shm, and a container folder holding another.
    struct Evidence {
        let folder: TemporaryFolder
        var store: URL { folder.path("ev/Store.sqlite") }
        var container: URL { folder.path("container") }
        var containerStore: URL { container.appendingPathComponent("Library/Application Support/default.store") }

        init() throws {
            folder = try TemporaryFolder("outputs")
            try FileManager.default.createDirectory(at: folder.path("ev"), withIntermediateDirectories: true)
            try Self.walStore(at: folder.path("ev/Store.sqlite"))
            try Data().write(to: folder.path("ev/Store.sqlite-journal"))
            let support = container.appendingPathComponent("Library/Application Support")
            try FileManager.default.createDirectory(at: support, withIntermediateDirectories: true)
            try Self.walStore(at: support.appendingPathComponent("default.store"))
            try FileManager.default.createDirectory(at: folder.path("out"), withIntermediateDirectories: true)
        }

        static func walStore(at url: URL) throws {
            let writer = try StoreWriter(url: url, model: SampleModels.todo, options: .init(journalMode: .wal))
            try writer.checkpoint()
            try writer.transaction(.init(bundleID: "com.example.todo")) { w in
                _ = try w.insert("TodoList", ["name": .string("Home")])
            }
            try writer.close(leavingWAL: true)
        }
    }

    struct Alias: CustomStringConvertible, Sendable {
        let name: String
        /// Makes the alias (if it needs making) and returns the output path to give.
        let make: @Sendable (Evidence) throws -> String
        /// What the one-sentence error must say.
        let says: String
        var description: String { name }
    }

    static let aliases: [Alias] = [
        Alias(name: "the -wal itself", make: { $0.store.path + "-wal" }, says: "is the -wal of"),
        Alias(name: "the -shm itself", make: { $0.store.path + "-shm" }, says: "is the -shm of"),
        Alias(name: "the -journal itself", make: { $0.store.path + "-journal" }, says: "is the -journal of"),
        Alias(name: "the main file", make: { $0.store.path }, says: "is one of the inputs"),
        Alias(name: "a symlink to the -wal", make: { e in
            let link = e.folder.path("out/link-to-wal").path
            try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: e.store.path + "-wal")
            return link
        }, says: "is the -wal of"),
        Alias(name: "a dangling symlink to a new -wal-like name beside the store", make: { e in
            let link = e.folder.path("out/link-to-new").path
            try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: e.folder.path("ev/other.sqlite-wal").path)
            return link
        }, says: "beside the input"),
        Alias(name: "a hard link to the -shm", make: { e in
            let link = e.folder.path("out/hard-shm").path
            try FileManager.default.linkItem(atPath: e.store.path + "-shm", toPath: link)
            return link
        }, says: "is the -shm of"),
        Alias(name: "a second name through another path", make: { e in
            e.folder.path("out/../ev/./Store.sqlite-wal").path
        }, says: "is the -wal of"),
        Alias(name: "a second name through a symlinked folder", make: { e in
            let link = e.folder.path("out/evlink").path
            try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: e.folder.path("ev").path)
            return link + "/Store.sqlite-wal"
        }, says: "is the -wal of"),
        Alias(name: "a new sidecar-like name beside the store", make: { $0.folder.path("ev/results.jsonl-wal").path }, says: "beside the input"),
        Alias(name: "a new file in the store's support folder", make: { e in
            try FileManager.default.createDirectory(at: e.folder.path("ev/.Store_SUPPORT/_EXTERNAL_DATA"), withIntermediateDirectories: true)
            return e.folder.path("ev/.Store_SUPPORT/_EXTERNAL_DATA/x.json").path
        }, says: "support folder"),
    ]

    @Test("inspect --jsonl onto every kind of alias of a family file is refused and writes nothing", arguments: aliases)
    func jsonlAliases(alias: Alias) throws {
        let evidence = try Evidence()
        let output = try alias.make(evidence)
        let before = try FolderSnapshot(evidence.folder.path("ev"))
        let result = try CLI.run(["inspect", evidence.store.path, "--jsonl", output])
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.hasPrefix("Error: --jsonl ") && result.stderr.contains(alias.says), "\(result.stderr)")
        #expect(result.stderr.contains("never writes"), "\(result.stderr)")
        #expect(result.stderr.split(separator: "\n").count == 1, "one sentence: \(result.stderr)")
        #expect(try FolderSnapshot(evidence.folder.path("ev")) == before, "the evidence is unchanged and nothing was added beside it")
    }

    @Test("every output option of every command is checked, inside input folders too")
    func everyOutputOption() throws {
        let evidence = try Evidence()
        let wal = evidence.store.path + "-wal"
        let inContainer = evidence.containerStore.path + "-shm"
        let hardToContainer = evidence.folder.path("out/hard-container-wal").path
        try FileManager.default.linkItem(atPath: evidence.containerStore.path + "-wal", toPath: hardToContainer)
        let manifest = evidence.folder.path("m.json")
        try Data(DemoContainer.manifest.utf8).write(to: manifest)
        let runs: [[String]] = [
            ["scan", evidence.store.path, "--evidence", wal],
            ["scan", evidence.container.path, "--evidence", evidence.container.appendingPathComponent("evidence.json").path],
            ["inspect", evidence.container.path, "--jsonl", inContainer],
            ["check", evidence.store.path, "--jsonl", wal],
            ["audit", evidence.container.path, "-m", manifest.path, "--jsonl", manifest.path],
            ["audit", evidence.container.path, "-m", manifest.path, "--jsonl", evidence.container.appendingPathComponent("Library/new.jsonl").path],
            ["wal", evidence.store.path, "--out", wal],
            ["wal", evidence.container.path, "--out", hardToContainer],
            ["wal", evidence.store.path, "--as-of", "0", "--out", evidence.folder.path("ev/fixed.sqlite-shm").path],
            ["report", evidence.container.path, "--out", evidence.container.appendingPathComponent("report.html").path, "--force"],
            ["report", evidence.store.path, "--out", wal, "--force"],
            ["report", evidence.store.path, "--jsonl", evidence.folder.path("out/r.jsonl").path, "--out-dir", evidence.folder.path("ev").path],
            ["report", evidence.container.path, "--jsonl", evidence.folder.path("out/r.jsonl").path, "--out-dir", evidence.container.appendingPathComponent("Library/reports").path],
            ["report", evidence.folder.path("ev").path, "--each", "--jsonl", evidence.folder.path("out/r.jsonl").path, "--out-dir", evidence.folder.path("ev/reports").path],
            ["repair", evidence.store.path, "--out", wal],
            ["repair", evidence.store.path, "--plan", "--log", evidence.store.path + "-journal"],
            ["repair", evidence.store.path, "--in-place", "--backup", evidence.folder.path("ev").path],
            ["repair", evidence.container.path, "--in-place", "--backup", evidence.container.appendingPathComponent("Library").path],
        ]
        let before = try FolderSnapshot(evidence.folder.url)
        for arguments in runs {
            let result = try CLI.run(arguments)
            #expect(result.status == 2, "\(arguments): \(result.stderr)")
            #expect(result.stderr.contains("never writes"), "\(arguments): \(result.stderr)")
        }
        #expect(try FolderSnapshot(evidence.folder.url) == before, "nothing written, nothing added")
        // The same outputs somewhere else are fine.
        let fine = try CLI.run(["inspect", evidence.store.path, "--jsonl", evidence.folder.path("out/results.jsonl").path])
        #expect(fine.status == 0, "\(fine.stderr)")
        let beside = try CLI.run(["wal", evidence.store.path, "--as-of", "0", "--out", evidence.folder.path("ev/at-commit-0.sqlite").path])
        #expect(beside.status == 0, "an ordinary new name beside the store is not a family file: \(beside.stderr)")
    }
}
