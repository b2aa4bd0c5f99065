import Acquisition
import Foundation
import SQLiteAccess
import StoreFormats
import StoreTestSupport
import Testing
@testable import WALForensics

/// The WAL analysis runs SQLite's quick_check of the WAL view on a thread of its own, beside the
/// page walk (`BackgroundQuickCheck`), on the working copy's own view. Its answer must be
/// SQLite's on a copy of the family, and the analysis the one made without a working copy (where
/// the check runs after the walk, on the analysis' own connection).
@Suite("quick_check of the WAL view beside the page walk")
struct WALViewQuickCheckTests {
    /// A table with an index, checkpointed; then commits that stay in the -wal.
    static func store() throws -> (SQLiteWALBuilder, SQLiteWALBuilder.Copy) {
        var builder = try SQLiteWALBuilder("quick-check") { db in
            try db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT); CREATE INDEX t_v ON t (v)")
            for i in 1...400 { try db.run("INSERT INTO t VALUES (?, ?)", [.integer(Int64(i)), .text("main-\(i)-" + String(repeating: "m", count: 50))]) }
        }
        try builder.commit((401...600).map { "INSERT INTO t VALUES (\($0), 'wal-\($0)-\(String(repeating: "w", count: 50))')" }.joined(separator: ";"))
        try builder.commit("UPDATE t SET v = 'changed' WHERE id = 7; DELETE FROM t WHERE id BETWEEN 20 AND 40")
        return (builder, try builder.copy())
    }

    /// SQLite's quick_check of a scratch copy of the family, one problem a line, as the analysis lists them.
    /// Row by row: a page SQLite cannot parse stops the pragma with an error, after what it found.
    static func sqliteQuickCheck(_ copy: SQLiteWALBuilder.Copy) throws -> [String] {
        let folder = try TemporaryFolder("quick-check-truth")
        let scratch = try SQLiteWALBuilder.scratch(of: copy, includeShm: false, in: folder)
        let connection = try Connection.open(path: scratch.db.path, mode: .readWrite)
        try connection.disableCheckpointOnClose()
        var lines: [String] = []
        do {
            let statement = try connection.prepare("PRAGMA quick_check(5)")
            while let row = try statement.step() {
                lines += (row[0].string ?? "").split(whereSeparator: \.isNewline).map(String.init).filter { !$0.hasPrefix("*** in database") }
            }
        } catch {
            lines.append("SQLite stopped: \(error.message)")
        }
        return lines.isEmpty ? ["ok"] : lines
    }

    static func check(_ copy: SQLiteWALBuilder.Copy) throws -> (early: [String]?, truth: [String]) {
        let truth = try sqliteQuickCheck(copy)
        let session = try EvidenceSession()
        defer { try? session.finish() }
        let working = try session.workingCopy(of: copy.db)
        let evidence = try WALEvidence(copy: working, displayPath: copy.db.lastPathComponent)
        let background = try #require(BackgroundQuickCheck.start(evidence), "the working copy has its own WAL view")
        let early = background.result()
        #expect(background.result() == early, "a second wait gives the same answer")
        // The analysis with the check beside the walk, and without a working copy (after it).
        let beside = try WALAnalyzer.analyze(evidence)
        let after = try WALAnalyzer.analyze(try copy.evidence())
        #expect(beside.findings.map(\.id) == after.findings.map(\.id))
        #expect(beside.findings.map(\.message) == after.findings.map(\.message))
        #expect(beside.findings.map(\.evidence) == after.findings.map(\.evidence))
        return (early, truth)
    }

    @Test("a sound WAL view: ok, as SQLite says")
    func sound() throws {
        let (builder, copy) = try Self.store()
        defer { withExtendedLifetime(builder) {} }
        let (early, truth) = try Self.check(copy)
        #expect(truth == ["ok"])
        #expect(early == truth)
    }

    @Test("a -wal whose last table leaf claims cells it does not have (frames resealed): SQLite's problems, word for word")
    func damagedLeaf() throws {
        let (builder, copy) = try Self.store()
        defer { withExtendedLifetime(builder) {} }
        var wal = try Data(contentsOf: copy.wal)
        let pageSize = 4096
        let frameSize = WALFrame.headerLength + pageSize
        let frames = (wal.count - WALHeader.length) / frameSize
        // The last frame holding a table leaf (0x0D) other than page 1: its cell count made huge.
        let leaf = try #require((0..<frames).reversed().first { frame in
            let offset = WALHeader.length + frame * frameSize
            return WALSurgery.readBE(wal, at: offset) != 1 && wal[wal.startIndex + offset + WALFrame.headerLength] == 0x0D
        })
        let page = wal.startIndex + WALHeader.length + leaf * frameSize + WALFrame.headerLength
        wal[page + 3] = 0x0F
        wal[page + 4] = 0xFF
        WALSurgery.reseal(&wal, pageSize: pageSize)
        try wal.write(to: copy.wal)
        try? FileManager.default.removeItem(at: copy.shm)
        let (early, truth) = try Self.check(copy)
        #expect(truth != ["ok"], "SQLite's quick_check finds the leaf")
        #expect(early == truth)
    }
}
