import Foundation
import SQLiteAccess
import StoreBuilder
import StoreFormats
import StoreTestSupport
import Testing

/// SIGINT and SIGKILL delivered to `repair` at known points (the `TestPause` hook holds it there,
/// and each test asserts it was still running when signalled), for `--out` and `--in-place`.
///
/// The points, in order: `repair-apply` (the plan has run in the private copy, uncommitted; no
/// temporary file yet), `repair-verify` (the hidden temporary file is written beside the output,
/// not yet verified), `repair-link` (verified, evidence re-hashed, not yet under its final name),
/// `in-place-swap` (in place only: inside the documented window, the `-wal` set aside).
@Suite("repair under SIGINT and SIGKILL")
struct RepairSignalTests {
    struct Point: Sendable, CustomStringConvertible {
        let pause: String
        let inPlace: Bool
        let signal: Int32
        var description: String { "\(inPlace ? "in place" : "--out") at \(pause), \(signal == SIGKILL ? "SIGKILL" : "SIGINT")" }
        /// Whether the hidden temporary file exists beside the output (or the store) at this point.
        var temporaryExists: Bool { pause == "repair-verify" || pause == "repair-link" }
    }

    static let outPoints = ["repair-apply", "repair-verify", "repair-link"].flatMap { p in [SIGINT, SIGKILL].map { Point(pause: p, inPlace: false, signal: $0) } }
    static let inPlacePoints = ["repair-apply", "repair-verify", "repair-link", "in-place-swap"].flatMap { p in [SIGINT, SIGKILL].map { Point(pause: p, inPlace: true, signal: $0) } }

    /// A store with something to repair whose last notes and damage live only in its -wal.
    static func store(in folder: URL) throws -> URL {
        try InvariantFixture.make(in: folder, leavingWAL: true) { try $0.executeRaw("UPDATE Z_PRIMARYKEY SET Z_MAX = 1 WHERE Z_NAME = 'Note'") }
    }

    /// Starts `repair` held at `point.pause`, asserts it got there and is running, signals it, waits.
    static func signalled(_ arguments: [String], at point: Point, scratch: URL) throws -> Process {
        let gate = scratch.deletingLastPathComponent().appendingPathComponent("gate-\(UUID().uuidString)")
        defer { unlink(gate.path); unlink(gate.path + ".reached") }
        let process = try PausedRun.start(arguments, at: point.pause, scratch: scratch, gate: gate)
        let reached = (try? String(contentsOfFile: gate.path + ".reached", encoding: .utf8)) ?? ""
        #expect(reached == point.pause, "storelens reached \(point.pause)")
        #expect(process.isRunning, "storelens must still be running when it is signalled")
        kill(process.processIdentifier, point.signal)
        process.waitUntilExit()
        if point.signal == SIGKILL {
            #expect(process.terminationReason == .uncaughtSignal && process.terminationStatus == SIGKILL, "killed, not exited")
        } else {
            #expect(process.terminationReason == .exit && process.terminationStatus == 130, "Ctrl-C is exit 130")
        }
        return process
    }

    @Test("--out: nothing under the final name; after SIGINT nothing beside it and no scratch; the input byte-identical", arguments: outPoints)
    func out(_ point: Point) throws {
        let folder = try TemporaryFolder("repair-signal")
        let url = try Self.store(in: folder.url)
        let before = try FolderSnapshot(folder.url)
        let out = try TemporaryFolder("repair-signal-out")
        // A killed process cannot remove its working folder: give it one that this test removes.
        let scratch = try TemporaryFolder("repair-signal-scratch")
        _ = try Self.signalled(["repair", url.path, "--out", out.path("fixed.store").path, "--log", out.path("log.json").path], at: point, scratch: scratch.url)
        #expect(try FolderSnapshot(folder.url) == before, "the input is byte-identical")
        let left = try FileManager.default.contentsOfDirectory(atPath: out.url.path)
        #expect(!left.contains("fixed.store") && !left.contains("log.json"), "nothing under the final names")
        if point.signal == SIGINT || !point.temporaryExists {
            #expect(left.isEmpty, "no temporary file beside the output: \(left)")
        } else {
            // SIGKILL cannot be caught: the hidden temporary file stays, never under the final name.
            #expect(left.count == 1 && left[0].hasPrefix(".fixed.store.storelens-") && left[0].hasSuffix(".tmp"), "\(left)")
        }
        if point.signal == SIGINT {
            #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.url.path).isEmpty, "the working folder is removed")
        }
    }

    @Test("--in-place: outside the window the store family is byte-identical; inside it the backup restores the family byte for byte", arguments: inPlacePoints)
    func inPlace(_ point: Point) throws {
        let folder = try TemporaryFolder("repair-signal-inplace")
        let url = try Self.store(in: folder.url)
        let before = try FolderSnapshot(folder.url)
        let truth = try TemporaryFolder("repair-signal-inplace-truth")
        let applied = try SQLiteCopies.walApplied(url, in: truth.url)
        let backup = try TemporaryFolder("repair-signal-inplace-backup")
        let scratch = try TemporaryFolder("repair-signal-inplace-scratch")
        _ = try Self.signalled(["repair", url.path, "--in-place", "--backup", backup.url.path], at: point, scratch: scratch.url)

        // The backup was made and verified before any of these points: the family byte for byte.
        let backedUp = try FileManager.default.contentsOfDirectory(atPath: backup.url.path)
        #expect(backedUp.contains("default.store") && backedUp.contains("default.store-wal"), "\(backedUp)")
        for name in backedUp {
            #expect(try SHA256.hexOfFile(at: backup.path(name)) == before.entries[folder.path(name).path]?.sha256, "\(name) byte for byte")
        }
        let left = Set(try FileManager.default.contentsOfDirectory(atPath: folder.url.path))
        let original = Set(before.entries.keys.map { URL(fileURLWithPath: $0).lastPathComponent })
        if point.pause == "in-place-swap" {
            // Inside the window: the old main file, its -wal set aside; recovery as docs/repair.md says.
            #expect(left.contains("default.store-wal.storelens-old") && !left.contains("default.store-wal"), "\(left)")
            #expect(try SHA256.hexOfFile(at: url) == before.entries[url.path]?.sha256, "the main file is not yet replaced")
            // Ctrl-C removes the staged store (it lies beside the evidence); SIGKILL cannot.
            #expect(left.contains(".default.store.storelens-repaired") == (point.signal == SIGKILL), "\(left)")
            for name in backedUp {
                try? FileManager.default.removeItem(at: folder.path(name))
                try FileManager.default.copyItem(at: backup.path(name), to: folder.path(name))
            }
            try FileManager.default.removeItem(atPath: url.path + "-wal.storelens-old")
            try? FileManager.default.removeItem(at: folder.path(".default.store.storelens-repaired"))
            #expect(try FolderSnapshot(folder.url).entries.mapValues(\.sha256) == before.entries.mapValues(\.sha256), "restored byte for byte")
        } else if point.signal == SIGINT || !point.temporaryExists {
            #expect(try FolderSnapshot(folder.url) == before, "the store family is byte-identical and nothing is left beside it: \(left.subtracting(original))")
        } else {
            // SIGKILL after the hidden temporary file was made: it stays (a signal that cannot be
            // caught), the family itself is byte-identical.
            let extra = left.subtracting(original)
            #expect(extra.count == 1 && extra.allSatisfy { $0.hasPrefix("..default.store.storelens-repaired.storelens-") && $0.hasSuffix(".tmp") }, "\(extra)")
            let now = try FolderSnapshot(folder.url)
            for (path, entry) in before.entries { #expect(now.entries[path] == entry, "\(path) unchanged") }
        }
        // Whatever the point, the store's committed rows, -wal included, are all there again (or still).
        let diff = try StoreDiff(before: applied, after: url)
        #expect(diff.changes.isEmpty && diff.schemaChanges.isEmpty, "\(diff.listed)")
        if point.signal == SIGINT {
            #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.url.path).isEmpty, "the working folder is removed")
        }
    }
}
