import Foundation
import SQLiteAccess
import StoreBuilder
import StoreTestSupport
import Testing

/// A Core Data store beside a `-wal` that is not its own: a plain SQLite database's, or another
/// Core Data store's. SQLite applies it without a word; storelens must not present what it shows
/// as the store. `inspect` says so and shows the main file alone, `check` reports `wal-mismatch`
/// (error), `wal` analyses the frames and says they may not belong, and every other command
/// refuses the store naming the `-wal`, in place and with `--copy`.
@Suite("a -wal from another database beside a store")
struct ForeignWALTests {
    enum Foreign: String, CaseIterable, Sendable {
        case plainDatabase = "a plain SQLite database's -wal"
        case otherStore = "another Core Data store's -wal"
    }

    /// The demo store with the foreign `-wal` beside it, in a folder of its own.
    static func pair(_ foreign: Foreign, in folder: TemporaryFolder) throws -> URL {
        let demo = try SampleStores.demo(in: folder)
        let built = folder.path("built")
        try FileManager.default.createDirectory(at: built, withIntermediateDirectories: true)
        let kept = built.appendingPathComponent("kept-wal")
        switch foreign {
        case .plainDatabase: try ForeignWAL.plainDatabase(copiedTo: kept, in: built)
        case .otherStore: try ForeignWAL.otherStore(copiedTo: kept, in: built)
        }
        let wal = URL(fileURLWithPath: demo.path + "-wal")
        try FileManager.default.removeItem(at: wal)
        try? FileManager.default.removeItem(atPath: demo.path + "-shm")
        try FileManager.default.copyItem(at: built.appendingPathComponent("kept-wal"), to: wal)
        return demo
    }

    @Test("inspect says it, check reports wal-mismatch, wal analyses it, the others refuse naming the -wal; in place and with --copy",
          arguments: Foreign.allCases)
    func everyCommand(_ foreign: Foreign) throws {
        let folder = try TemporaryFolder("foreign-wal")
        let store = try Self.pair(foreign, in: folder)
        let before = try FolderSnapshot(store.deletingLastPathComponent())
        for copy in [[], ["--copy"]] {
            let inspect = try CLI.run(["inspect", store.path, "--format", "json"] + copy)
            #expect(inspect.status == 0, "\(inspect.stderr)")
            #expect(inspect.stdout.contains("the -wal does not belong to this main file"), "\(foreign.rawValue): \(inspect.stdout.prefix(2000))")
            #expect(inspect.stdout.contains("\"TodoItem\""), "the main file alone is inspected as the Core Data store it is")

            let check = try CLI.run(["check", store.path, "--format", "json"] + copy)
            #expect(check.status == 1, "\(check.stderr)")
            let json = try #require(try JSONSerialization.jsonObject(with: Data(check.stdout.utf8)) as? [String: Any])
            let findings = (json["findings"] as? [[String: Any]]) ?? []
            #expect(findings.contains { $0["id"] as? String == "wal-mismatch" && $0["severity"] as? String == "error" }, "\(check.stdout.prefix(2000))")
            #expect(!findings.contains { $0["id"] as? String == "not-core-data" })

            let wal = try CLI.run(["wal", store.path] + copy)
            #expect(wal.status == 0 || wal.status == 1, "\(wal.stderr)")
            #expect(wal.stdout.contains("wal-may-not-belong"), "\(wal.stdout.prefix(2000))")

            for command in [["rows", store.path, "TodoItem"], ["history", store.path], ["recover", store.path], ["schema", store.path],
                            ["timeline", store.path], ["wal", store.path, "--diff"]] {
                let r = try CLI.run(command + copy)
                #expect(r.status == 2, "\(command.joined(separator: " ")): \(r.stderr)")
                #expect(r.stderr.contains("default.store-wal does not belong to"), "\(command.joined(separator: " ")): \(r.stderr)")
                #expect(!r.stderr.contains("is damaged"), "the -wal is named, not the store")
            }
        }
        #expect(try FolderSnapshot(store.deletingLastPathComponent()) == before)
    }
}
