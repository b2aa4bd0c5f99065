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
       .enabled(if: ReadOnlyMount.available, Comment(rawValue: ReadOnlyMount.unavailableReason)))
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
        let built = root.path("built"), evidence = root.path("evidence"), tmp = root.path("tmp"), logs = root.path("logs")
        for url in [built, evidence, tmp, logs] { try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true) }
        let store = try Self.store(in: built)
        #expect(FileManager.default.fileExists(atPath: store.path + "-wal"), "the builder left a -wal")
        try ReadOnlyMount.bind(built, readOnlyAt: evidence)
        defer { ReadOnlyMount.unmount(evidence) }
        try ReadOnlyMount.emptyReadOnly(at: tmp)
        defer { ReadOnlyMount.unmount(tmp) }
        let input = evidence.appendingPathComponent(store.lastPathComponent).path
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

/// Mounting for the test above: a bind mount made read-only, and an empty read-only tmpfs.
enum ReadOnlyMount {
    static func mount(_ arguments: [String]) -> Bool {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/mount")
        process.arguments = arguments
        process.standardError = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return false }
        process.waitUntilExit()
        return process.terminationStatus == 0
    }

    struct Failed: Error, CustomStringConvertible {
        let description: String
    }

    static func bind(_ source: URL, readOnlyAt target: URL) throws {
        guard mount(["--bind", source.path, target.path]) else { throw Failed(description: "mount --bind \(source.path) failed") }
        guard mount(["-o", "remount,bind,ro", target.path]) else {
            unmount(target)
            throw Failed(description: "remount read-only of \(target.path) failed")
        }
    }

    static func emptyReadOnly(at target: URL) throws {
        guard mount(["-t", "tmpfs", "-o", "ro,size=64k", "storelens-test", target.path]) else {
            throw Failed(description: "mount -t tmpfs at \(target.path) failed")
        }
    }

    static func unmount(_ target: URL) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/umount")
        process.arguments = [target.path]
        try? process.run()
        process.waitUntilExit()
    }

    /// Whether this process may mount (root on Linux, with the capability): tried once on a tmpfs.
    static let available: Bool = {
        #if os(Linux)
        guard getuid() == 0, FileManager.default.isExecutableFile(atPath: "/bin/mount") else { return false }
        let probe = FileManager.default.temporaryDirectory.appendingPathComponent("storelens-mount-probe-\(getpid())")
        guard (try? FileManager.default.createDirectory(at: probe, withIntermediateDirectories: true)) != nil else { return false }
        defer { try? FileManager.default.removeItem(at: probe) }
        guard (try? emptyReadOnly(at: probe)) != nil else { return false }
        unmount(probe)
        return true
        #else
        return false
        #endif
    }()

    static let unavailableReason = "needs mount(8) as root on Linux (a read-only bind mount and a read-only tmpfs); this process cannot mount"
}
