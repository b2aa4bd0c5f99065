import Foundation
import SQLiteAccess
import StoreBuilder
import StoreFormats
import StoreTestSupport
import Testing

/// A failed repair leaves no result: the evidence check comes before the output gets its name,
/// every output is validated before work starts, Ctrl-C removes the hidden temporary file, and
/// the in-place swap's one window is covered by the backup.
@Suite("repair leaves no result when it fails")
struct RepairPromiseTests {
    /// Titles of the notes in the store family at `url`, read by SQLite from a copy of the family.
    static func titles(_ url: URL) throws -> [String] {
        let copy = try TemporaryFolder("repair-promise-copy")
        for suffix in ["", "-wal"] where FileManager.default.fileExists(atPath: url.path + suffix) {
            try FileManager.default.copyItem(atPath: url.path + suffix, toPath: copy.path("s.store").path + suffix)
        }
        let db = try Connection.open(path: copy.path("s.store").path, mode: .readOnly)
        return try db.rows("SELECT ZTITLE FROM ZNOTE ORDER BY Z_PK").compactMap { $0[0].string }
    }

    static func hiddenTemporaries(in folder: URL) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasPrefix(".") && $0.hasSuffix(".tmp") }
    }

    @Test("evidence changed while the repair verified: exit 3, nothing under the output's name, no temporary file")
    func evidenceChangedMidRun() throws {
        let folder = try TemporaryFolder("repair-changed")
        let url = try LaggingKeyStore.withNotesInWAL(in: folder.url)
        let out = try TemporaryFolder("repair-changed-out")
        let scratch = try TemporaryFolder("repair-changed-scratch")
        let gate = scratch.url.deletingLastPathComponent().appendingPathComponent("gate-\(UUID().uuidString)")
        defer { unlink(gate.path); unlink(gate.path + ".reached") }
        let process = try PausedRun.start(["repair", url.path, "--out", out.path("fixed.store").path, "--log", out.path("log.json").path],
                                          at: "repair-verify", scratch: scratch.url, gate: gate)
        #expect(process.isRunning, "storelens must be paused in verification when the evidence changes")
        #expect(try Self.hiddenTemporaries(in: out.url).count == 1, "the verified copy waits under a hidden name")
        // Someone (the device's app, a sync tool) appends to the evidence while we verify.
        let handle = try FileHandle(forWritingTo: url)
        try handle.seekToEnd()
        try handle.write(contentsOf: Data([0]))
        try handle.close()
        _ = FileManager.default.createFile(atPath: gate.path, contents: nil)
        process.waitUntilExit()
        #expect(process.terminationStatus == 3)
        #expect(!FileManager.default.fileExists(atPath: out.path("fixed.store").path), "a run that failed leaves no result")
        #expect(!FileManager.default.fileExists(atPath: out.path("log.json").path))
        #expect(try Self.hiddenTemporaries(in: out.url).isEmpty)
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.url.path).isEmpty, "no scratch left")
    }

    /// What is done to the verified-to-be copy while storelens waits at `repair-verify`, so that
    /// verification must fail: each reaches another of its checks.
    enum Tamper: String, CaseIterable, Sendable {
        /// The fix undone: a check the plan claimed to fix fails again.
        case undoFix = "the fix undone"
        /// A table the plan does not touch changed: its hash differs from before.
        case untouchedTable = "an untouched table changed"
        /// A row lost: the proof by SQLite against the before copy finds a table with fewer rows.
        case lostRow = "a row deleted"
        /// Half the file cut off: it cannot even be read as the store.
        case truncated = "the file truncated"

        func apply(to file: URL) throws {
            if self == .truncated {
                let size = try #require(try FileManager.default.attributesOfItem(atPath: file.path)[.size] as? NSNumber).intValue
                #expect(truncate(file.path, off_t(size / 2)) == 0)
                return
            }
            do {
                let db = try Connection.open(path: file.path, mode: .readWrite)
                switch self {
                case .undoFix: try db.execute("UPDATE Z_PRIMARYKEY SET Z_MAX = 1 WHERE Z_NAME = 'Note'")
                case .untouchedTable: try db.execute("UPDATE ZTAG SET ZNAME = 'tampered' WHERE Z_PK = 1")
                case .lostRow: try db.execute("DELETE FROM ZNOTE WHERE Z_PK = 2")
                case .truncated: break
                }
                try db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            }
            // Closing checkpointed and removed the -wal and -shm SQLite made beside it.
            #expect(!FileManager.default.fileExists(atPath: file.path + "-wal"))
        }
    }

    @Test("verification fails (the copy tampered with while storelens waits to verify it): exit 3, no output, no log, no temporary file, no scratch, the input unchanged",
          arguments: Tamper.allCases)
    func verificationFails(_ tamper: Tamper) throws {
        let folder = try TemporaryFolder("repair-verify-fails")
        let url = try InvariantFixture.make(in: folder.url, leavingWAL: true) { try $0.executeRaw("UPDATE Z_PRIMARYKEY SET Z_MAX = 1 WHERE Z_NAME = 'Note'") }
        let before = try FolderSnapshot(folder.url)
        let out = try TemporaryFolder("repair-verify-fails-out")
        let scratch = try TemporaryFolder("repair-verify-fails-scratch")
        let gate = scratch.url.deletingLastPathComponent().appendingPathComponent("gate-\(UUID().uuidString)")
        defer { unlink(gate.path); unlink(gate.path + ".reached") }
        let (process, stderr) = try PausedRun.startCapturing(["repair", url.path, "--out", out.path("fixed.store").path, "--log", out.path("log.json").path],
                                                             at: "repair-verify", scratch: scratch.url, gate: gate)
        #expect(process.isRunning, "storelens must be waiting to verify when its copy is tampered with")
        let temporaries = try Self.hiddenTemporaries(in: out.url)
        try #require(temporaries.count == 1, "the copy waits under a hidden name: \(temporaries)")
        try tamper.apply(to: out.path(temporaries[0]))
        _ = FileManager.default.createFile(atPath: gate.path, contents: nil)
        let message = String(decoding: stderr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 3, "\(message)")
        #expect(message.contains("failed verification") && message.contains("nothing was written"), "\(message)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: out.url.path).isEmpty, "no output, no log, no temporary file beside them")
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.url.path).isEmpty, "no scratch left")
        #expect(try FolderSnapshot(folder.url) == before, "the input is unchanged")
    }

    @Test("in place, verification fails: exit 3, the store family untouched, nothing staged beside it, the backup byte for byte")
    func inPlaceVerificationFails() throws {
        let folder = try TemporaryFolder("repair-inplace-verify-fails")
        let url = try InvariantFixture.make(in: folder.url, leavingWAL: true) { try $0.executeRaw("UPDATE Z_PRIMARYKEY SET Z_MAX = 1 WHERE Z_NAME = 'Note'") }
        let before = try FolderSnapshot(folder.url)
        let backup = try TemporaryFolder("repair-inplace-verify-fails-backup")
        let scratch = try TemporaryFolder("repair-inplace-verify-fails-scratch")
        let gate = scratch.url.deletingLastPathComponent().appendingPathComponent("gate-\(UUID().uuidString)")
        defer { unlink(gate.path); unlink(gate.path + ".reached") }
        let (process, stderr) = try PausedRun.startCapturing(["repair", url.path, "--in-place", "--backup", backup.url.path],
                                                             at: "repair-verify", scratch: scratch.url, gate: gate)
        #expect(process.isRunning)
        let temporaries = try Self.hiddenTemporaries(in: folder.url)
        try #require(temporaries.count == 1, "the repaired copy waits beside the store under a hidden name: \(temporaries)")
        try Tamper.undoFix.apply(to: folder.path(temporaries[0]))
        _ = FileManager.default.createFile(atPath: gate.path, contents: nil)
        let message = String(decoding: stderr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 3, "\(message)")
        #expect(try FolderSnapshot(folder.url) == before, "the store family is untouched and nothing is left beside it")
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.url.path).isEmpty)
        for name in try FileManager.default.contentsOfDirectory(atPath: backup.url.path) {
            #expect(try SHA256.hexOfFile(at: backup.path(name)) == before.entries[folder.path(name).path]?.sha256, "\(name)")
        }
    }

    @Test("--log and --out are validated before any work: a taken --log fails first and writes nothing")
    func outputsValidatedFirst() throws {
        let folder = try TemporaryFolder("repair-log-first")
        let url = try LaggingKeyStore.withNotesInWAL(in: folder.url)
        let out = try TemporaryFolder("repair-log-first-out")
        try Data("keep".utf8).write(to: out.path("log.json"))
        let r = try CLI.run(["repair", url.path, "--out", out.path("fixed.store").path, "--log", out.path("log.json").path])
        #expect(r.status == 2)
        #expect(r.stderr.contains("log.json already exists"), "\(r.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: out.url.path) == ["log.json"], "the store was not written before the log failed")
        #expect(try String(contentsOf: out.path("log.json"), encoding: .utf8) == "keep")
        let missing = try CLI.run(["repair", url.path, "--out", out.path("fixed.store").path, "--log", out.path("no/such/log.json").path])
        #expect(missing.status == 2)
        #expect(!FileManager.default.fileExists(atPath: out.path("fixed.store").path))
        let same = try CLI.run(["repair", url.path, "--out", out.path("x.store").path, "--log", out.path("x.store").path])
        #expect(same.status == 2)
        #expect(!FileManager.default.fileExists(atPath: out.path("x.store").path))
    }

    @Test("in place: killed inside the swap window, the backup restores every committed row, WAL included")
    func inPlaceWindowRecoveredFromBackup() throws {
        let folder = try TemporaryFolder("repair-window")
        let url = try LaggingKeyStore.withNotesInWAL(in: folder.url)
        let expected = try Self.titles(url)
        #expect(expected.count == 6 && FileManager.default.fileExists(atPath: url.path + "-wal"), "three notes live only in the -wal")
        let originals = try FolderSnapshot(folder.url)
        let backup = try TemporaryFolder("repair-window-backup")
        let scratch = try TemporaryFolder("repair-window-scratch")
        let gate = scratch.url.deletingLastPathComponent().appendingPathComponent("gate-\(UUID().uuidString)")
        defer { unlink(gate.path); unlink(gate.path + ".reached") }
        let process = try PausedRun.start(["repair", url.path, "--in-place", "--backup", backup.url.path],
                                          at: "in-place-swap", scratch: scratch.url, gate: gate)
        #expect(process.isRunning, "storelens must be inside the swap window when it is killed")
        // The documented window: the -wal is set aside, the main file not yet replaced.
        #expect(FileManager.default.fileExists(atPath: url.path + "-wal.storelens-old"))
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        // Recovery as docs/repair.md says: copy the backup's family back over the store's files.
        for name in try FileManager.default.contentsOfDirectory(atPath: backup.url.path) {
            let target = folder.path(name)
            try? FileManager.default.removeItem(at: target)
            try FileManager.default.copyItem(at: backup.path(name), to: target)
        }
        try FileManager.default.removeItem(atPath: url.path + "-wal.storelens-old")
        let staged = try FileManager.default.contentsOfDirectory(atPath: folder.url.path).filter { $0.contains("storelens-repaired") }
        for name in staged { try FileManager.default.removeItem(at: folder.path(name)) }
        #expect(try Self.titles(url) == expected, "every committed row is back, the -wal's included")
        let restored = try FolderSnapshot(folder.url)
        #expect(Set(restored.entries.keys) == Set(originals.entries.keys))
        for (path, entry) in originals.entries { #expect(restored.entries[path]?.sha256 == entry.sha256, "\(path) byte-identical") }
    }

    @Test("in place, not interrupted: the WAL's rows are all in the repaired store")
    func inPlaceKeepsWALRows() throws {
        let folder = try TemporaryFolder("repair-inplace-wal")
        let url = try LaggingKeyStore.withNotesInWAL(in: folder.url)
        let expected = try Self.titles(url)
        let backup = try TemporaryFolder("repair-inplace-wal-backup")
        let r = try CLI.run(["repair", url.path, "--in-place", "--backup", backup.url.path])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(try Self.titles(url) == expected)
        #expect(!FileManager.default.fileExists(atPath: url.path + "-wal.storelens-old"))
    }
}
