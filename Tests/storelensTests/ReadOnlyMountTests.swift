import Acquisition
import Foundation
import StoreBuilder
import StoreTestSupport
import Testing

/// A store on a read-only file system (a mounted image, a write-blocked extraction) with no
/// writable `$TMPDIR` either: read in place through the evidence VFS, every reading command works
/// and answers as it does on a copy; nothing could have been written (the kernel refuses any
/// write to a read-only mount, root's included), and SQLite asked for none (the VFS counts refusals).
/// Needs `mount` (root on Linux); skipped, with the reason, elsewhere.
@Suite("a store on a read-only mount, with no writable TMPDIR", .serialized,
       .enabled(if: SmallTmpfs.available, Comment(rawValue: "a read-only bind mount and a read-only tmpfs need root and mount(8)")))
struct ReadOnlyMountTests {
    /// A store whose last transactions live only in its `-wal`, with history, made by the builder.
    static func store(in folder: URL) throws -> URL {
        let url = folder.appendingPathComponent("default.store")
        let w = try StoreWriter(url: url, model: SampleModels.todo)
        try w.transaction { w in for n in 0..<40 { try w.insert("TodoList", ["name": .string("list \(n)")]) } }
        try w.checkpoint()
        try w.transaction { w in
            for n in 0..<10 { try w.insert("TodoList", ["name": .string("in the wal \(n)")]) }
            try w.delete("TodoList", pk: 3)
        }
        try w.close(leavingWAL: true)
        return url
    }

    static let commands: [[String]] = [
        ["inspect", "--format", "json"], ["check", "--format", "json"], ["wal", "--format", "json"],
        ["rows", "TodoList", "--format", "jsonl"], ["schema", "--format", "json"], ["history", "--format", "json"],
        ["wal", "--diff", "--format", "json"],
    ]

    @Test("every reading command answers as on a copy, asks no write, and needs no TMPDIR")
    func readOnlyMount() throws {
        let root = try TemporaryFolder("read-only-mount")
        let built = root.path("built"), logs = root.path("logs")
        for url in [built, logs] { try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true) }
        let store = try Self.store(in: built)
        #expect(FileManager.default.fileExists(atPath: store.path + "-wal"), "the builder left a -wal")
        let evidence = try ReadOnlyBind(of: built)
        let tmpfs = try SmallTmpfs(bytes: 64 * 1024, readOnly: true)
        // Both mounts stay until the end of the test (released, they are unmounted).
        defer { withExtendedLifetime((evidence, tmpfs)) {} }
        let tmp = tmpfs.url
        let input = evidence.url.appendingPathComponent(store.lastPathComponent).path
        #expect(open(input, O_WRONLY) < 0 && errno == EROFS, "the mount refuses writes, root's too")
        let before = try FolderSnapshot(built)

        for (n, command) in Self.commands.enumerated() {
            let arguments = [command[0], input] + command.dropFirst()
            let log = logs.appendingPathComponent("run-\(n).log")
            let inPlace = try CLI.run(arguments, environment: ["TMPDIR": tmp.path, "STORELENS_EVIDENCE_READS": log.path])
            let what = "storelens \(arguments.joined(separator: " "))"
            #expect([0, 1].contains(inPlace.status), "\(what): exit \(inPlace.status): \(inPlace.stderr)")
            let logged = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
            #expect(!logged.contains(EvidenceReads.refusedWritesName), "SQLite asked to write: \(what)")
            // The copy path, on the same input (so the same paths in the output), with a writable TMPDIR.
            let copied = try CLI.run(arguments + ["--copy"], environment: ["TMPDIR": root.url.path])
            #expect(inPlace.status == copied.status && inPlace.stdout == copied.stdout, "\(what): read in place differs from the copy")
            #expect(!inPlace.stdout.isEmpty, "\(what) printed its answer")
        }
        // A copy needs the working folder: without one, the failure is ours (exit 3), named as such.
        let refused = try CLI.run(["inspect", input, "--copy"], environment: ["TMPDIR": tmp.path])
        #expect(refused.status == 3, "exit \(refused.status): \(refused.stderr)")
        #expect(refused.stderr.contains("not a finding about the evidence"), "\(refused.stderr)")
        #expect(try FolderSnapshot(built) == before)
    }
}
