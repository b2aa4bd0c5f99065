import Foundation
import SQLiteAccess
import StoreFormats
import StoreTestSupport
import Testing

/// `storelens wal`, run as a user runs it: the report in text and JSON, point-in-time images
/// any SQLite opens, the diff on the genuine SwiftData store, bad input, and inputs left
/// byte-identical.
@Suite("wal command")
struct WALCommandTests {
    struct Transaction: Decodable { let commitFrame: Int; let frames: Int; let pages: [Int]; let tables: [String]; let number: Int; let entities: [String] }
    struct WAL: Decodable {
        let present: Bool
        let frames: Int
        let validFrames: Int
        let commits: Int
        let lastCommitFrame: Int
        let pageSize: Int?
        let salt1: String?
        let salt2: String?
        let checkpointSequence: Int?
        let stopReason: String?
        let transactions: [Transaction]
        let uncommittedFrames: Int
        let staleFrames: Int
    }
    struct SHM: Decodable { let present: Bool; let mxFrame: Int?; let nBackfill: Int?; let valid: Bool?; let agreesWithWal: Bool? }
    struct Finding: Decodable { let id: String; let severity: String; let message: String }
    struct Store: Decodable { let path: String; let format: String; let pageSize: Int?; let wal: WAL; let shm: SHM; let findings: [Finding]
        var warnings: [Finding] { findings.filter { $0.severity == "warning" } }
    }
    struct Report: Decodable { let schemaVersion: Int; let stores: [Store] }

    struct Updated: Decodable { let key: Int; let changedColumns: [String]; let changedAttributes: [String]? }
    struct Change: Decodable {
        let entity: String?
        let table: String
        let inserted: [Int]?
        let deleted: [Int]?
        let updated: [Updated]?
        let insertedCount: Int
        let updatedCount: Int
        let deletedCount: Int
        let unchangedCount: Int
    }
    struct DiffStore: Decodable { let path: String; let from: Int; let to: Int; let changes: [Change] }
    struct DiffReport: Decodable { let schemaVersion: Int; let stores: [DiffStore] }

    /// The genuine store, and a snapshot of its folder taken before the command runs.
    static func realStore() throws -> (URL, FolderSnapshot)? {
        let real = try #require(ProjectPaths.realFixtures())
        let store = real.appendingPathComponent("swiftdata-resources/default.store")
        return (store, try FolderSnapshot(store.deletingLastPathComponent()))
    }

    /// The WAL as its own frame headers describe it (StoreTestSupport's reader, not the tool's),
    /// and the -shm's header, read from the original's bytes.
    static func truth(_ store: URL) throws -> (wal: WALFrameOracle, shm: SharedMemoryOracle) {
        let wal = try #require(try WALFrameOracle.read(URL(fileURLWithPath: store.path + "-wal")))
        let shm = try #require(SharedMemoryOracle(data: try Data(contentsOf: URL(fileURLWithPath: store.path + "-shm"))))
        return (wal, shm)
    }

    static func hex(_ value: UInt32) -> String { "0x" + String(format: "%08x", value) }

    static func expectUnchanged(_ store: URL, _ before: FolderSnapshot, sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(try FolderSnapshot(store.deletingLastPathComponent()) == before, "the evidence must stay byte-identical", sourceLocation: sourceLocation)
    }

    @Test("text report on the genuine store: frames, commits, salts, tables per transaction, the -shm as its header says", .enabled(if: ProjectPaths.hasRealFixtures, Comment(rawValue: ProjectPaths.realFixturesMissing)))
    func textReport() throws {
        guard let (store, before) = try Self.realStore() else { return }
        let result = try CLI.run(["wal", store.path])
        try Self.expectUnchanged(store, before)
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(result.stderr.isEmpty)
        let (wal, shm) = try Self.truth(store)
        #expect(result.stdout.contains("\(wal.validFrames) of \(wal.frameSlots) frames valid, \(wal.commitFrames.count) commits, last commit at frame \(wal.lastCommitFrame)"))
        #expect(result.stdout.contains("salts \(Self.hex(wal.salt1)) \(Self.hex(wal.salt2)), checkpoint sequence \(wal.checkpointSequence)"))
        #expect(result.stdout.contains("\(wal.pageSize)-byte pages, header says WAL mode"))
        let agreement = shm.agrees(with: wal) ? "agrees with the WAL" : "does not agree with the WAL"
        #expect(result.stdout.contains("mxFrame \(shm.mxFrame), nBackfill \(shm.nBackfill), header intact, \(agreement)"))
        #expect(result.stdout.contains("ZITEM (Item)"))
        #expect(result.stdout.contains("[shm-stale]") == !shm.agrees(with: wal))
    }

    @Test("JSON report on the genuine store: what the WAL's frame headers and the -shm's header say", .enabled(if: ProjectPaths.hasRealFixtures, Comment(rawValue: ProjectPaths.realFixturesMissing)))
    func jsonReport() throws {
        guard let (store, before) = try Self.realStore() else { return }
        let result = try CLI.run(["wal", store.path, "--format", "json"])
        try Self.expectUnchanged(store, before)
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let report = try JSONDecoder().decode(Report.self, from: Data(result.stdout.utf8))
        #expect(report.schemaVersion == 2)
        let s = try #require(report.stores.first)
        #expect(s.format == "coredata")
        let (wal, shm) = try Self.truth(store)
        let sqlite = try SQLiteOracle(copying: store)
        #expect(s.pageSize == (try sqlite.connection.scalar("PRAGMA page_size").int))
        #expect(s.wal.present)
        #expect(s.wal.frames == wal.frameSlots && s.wal.validFrames == wal.validFrames)
        #expect(s.wal.commits == wal.commitFrames.count && s.wal.lastCommitFrame == wal.lastCommitFrame)
        #expect(try sqlite.walLastCommitFrame() == wal.lastCommitFrame, "SQLite recovers the same last commit")
        #expect(s.wal.pageSize == wal.pageSize)
        #expect(s.wal.salt1 == Self.hex(wal.salt1) && s.wal.salt2 == Self.hex(wal.salt2))
        #expect(s.wal.checkpointSequence == Int(wal.checkpointSequence))
        #expect(s.wal.stopReason == nil)
        #expect(s.wal.uncommittedFrames == wal.uncommittedFrames && s.wal.staleFrames == wal.frameSlots - wal.validFrames)
        #expect(s.wal.transactions.map(\.commitFrame) == wal.commitFrames)
        #expect(s.wal.transactions.map(\.pages) == wal.pagesByCommit)
        #expect(s.wal.transactions.map(\.number) == Array(1...wal.commitFrames.count))
        #expect(s.wal.transactions.reduce(0) { $0 + $1.frames } == wal.lastCommitFrame)
        // Commit 1 rewrote page 1's database header only: sqlite_schema itself did not change.
        #expect(s.wal.transactions.first?.tables == ["Z_PRIMARYKEY"])
        #expect(s.wal.transactions.last?.tables.contains("ZITEM") == true)
        #expect(s.wal.transactions.last?.entities.contains("Item") == true)
        #expect(s.shm.present && s.shm.mxFrame == Int(shm.mxFrame) && s.shm.nBackfill == Int(shm.nBackfill))
        #expect(s.shm.valid == true && s.shm.agreesWithWal == shm.agrees(with: wal))
        #expect(s.warnings.map(\.id) == (shm.agrees(with: wal) ? [] : ["shm-stale"]))
    }

    @Test("--diff on the genuine store: Component, CraftingRecipe and Item as SQLite diffs the two copies", .enabled(if: ProjectPaths.hasRealFixtures, Comment(rawValue: ProjectPaths.realFixturesMissing)))
    func diffRealStore() throws {
        guard let (store, before) = try Self.realStore() else { return }
        let json = try CLI.run(["wal", store.path, "--diff", "--format", "json"])
        let text = try CLI.run(["wal", store.path, "--diff"])
        try Self.expectUnchanged(store, before)
        #expect(json.status == 0, "stderr: \(json.stderr)")
        let report = try JSONDecoder().decode(DiffReport.self, from: Data(json.stdout.utf8))
        let diff = try #require(report.stores.first)
        let commits = try Self.truth(store).wal.commitFrames.count
        #expect(diff.from == 0 && diff.to == commits)
        func change(_ entity: String) throws -> Change { try #require(diff.changes.first { $0.entity == entity }) }
        #expect(text.status == 0)
        for (entity, table) in [("Component", "ZCOMPONENT"), ("CraftingRecipe", "ZCRAFTINGRECIPE"), ("Item", "ZITEM")] {
            let c = try change(entity)
            let truth = try Self.sqliteDiff(store, table)
            #expect(c.inserted == truth.inserted && c.insertedCount == truth.inserted.count, "\(entity) inserted")
            #expect(c.deleted == truth.deleted && c.deletedCount == truth.deleted.count, "\(entity) deleted")
            #expect((c.updated?.map(\.key) ?? []).sorted() == truth.updated && c.updatedCount == truth.updated.count, "\(entity) updated")
            #expect(c.unchangedCount == truth.unchanged, "\(entity) unchanged")
            #expect(text.stdout.contains("\(entity) (\(table))\n    \(truth.inserted.count) inserted, \(truth.updated.count) updated, \(truth.deleted.count) deleted, \(truth.unchanged) unchanged"), "\(entity) in text")
            // A run of consecutive keys is printed as a range.
            if let first = truth.inserted.first, let last = truth.inserted.last, truth.inserted.count > 1, last - first + 1 == truth.inserted.count {
                #expect(text.stdout.contains("inserted   Z_PK \(first)-\(last)"), "\(entity) inserted range")
            }
        }

        let range = try CLI.run(["wal", store.path, "--diff", "--from", String(commits - 1), "--to", String(commits), "--format", "json"])
        #expect(range.status == 0)
        let step = try #require(try JSONDecoder().decode(DiffReport.self, from: Data(range.stdout.utf8)).stores.first)
        #expect(step.from == commits - 1 && step.to == commits)
        try Self.expectUnchanged(store, before)
    }

    /// SQLite's own diff of the main file alone and the store with its WAL (two copies, by Z_PK).
    static func sqliteDiff(_ store: URL, _ table: String) throws -> (inserted: [Int], deleted: [Int], updated: [Int], unchanged: Int) {
        let old = try SQLiteOracle(copying: store, wal: .none)
        let new = try SQLiteOracle(copying: store)
        try new.connection.run("ATTACH DATABASE ? AS old", [.text(old.url.path)])
        defer { withExtendedLifetime(old) {} }
        let t = Identifier.quoted(table)
        func keys(_ sql: String) throws -> [Int] { try new.connection.rows(sql).compactMap { $0[0].int } }
        let inserted = try keys("SELECT Z_PK FROM main.\(t) WHERE Z_PK NOT IN (SELECT Z_PK FROM old.\(t)) ORDER BY Z_PK")
        let deleted = try keys("SELECT Z_PK FROM old.\(t) WHERE Z_PK NOT IN (SELECT Z_PK FROM main.\(t)) ORDER BY Z_PK")
        let updated = try keys("SELECT Z_PK FROM (SELECT * FROM main.\(t) EXCEPT SELECT * FROM old.\(t)) WHERE Z_PK IN (SELECT Z_PK FROM old.\(t)) ORDER BY Z_PK")
        let both = try new.connection.scalar("SELECT count(*) FROM main.\(t) WHERE Z_PK IN (SELECT Z_PK FROM old.\(t))").int ?? 0
        return (inserted, deleted, updated, both - updated.count)
    }

    /// Commits 0 (the main file), 1, one in the middle and the last, as the WAL's frame headers count them.
    static let asOfCommits: [Int] = {
        guard let real = ProjectPaths.realFixtures(),
              let wal = try? WALFrameOracle.read(real.appendingPathComponent("swiftdata-resources/default.store-wal")),
              !wal.commitFrames.isEmpty else { return [0] }
        let n = wal.commitFrames.count
        return Array(Set([0, 1, n / 3, n])).sorted()
    }()

    @Test("--as-of N --out FILE writes a normal SQLite file with the rows SQLite itself shows at commit N", .enabled(if: ProjectPaths.hasRealFixtures, Comment(rawValue: ProjectPaths.realFixturesMissing)), arguments: asOfCommits)
    func pointInTime(commit: Int) throws {
        guard let (store, before) = try Self.realStore() else { return }
        let folder = try TemporaryFolder("wal-out")
        let out = folder.path("as-of-\(commit).sqlite")
        let result = try CLI.run(["wal", store.path, "--as-of", String(commit), "--out", out.path])
        try Self.expectUnchanged(store, before)
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(result.stdout.contains("written to \(out.path)"))

        // What SQLite itself shows at that commit: a copy whose WAL ends at the commit frame, the
        // frame found from the WAL's own frame headers (not from the tool) and confirmed by SQLite.
        let wal = try Self.truth(store).wal
        let frames = commit == 0 ? 0 : wal.commitFrames[commit - 1]
        let truthCopy = try SQLiteOracle(copying: store, wal: .frames(frames))
        #expect(try truthCopy.walLastCommitFrame() == frames, "SQLite ends commit \(commit) at frame \(frames) too")
        let counts = "SELECT (SELECT count(*) FROM ZITEM), (SELECT count(*) FROM ZCOMPONENT), (SELECT count(*) FROM ZCRAFTINGRECIPE), (SELECT count(*) FROM ACHANGE), (SELECT group_concat(ZNAME) FROM ZITEM)"
        let truth = try truthCopy.connection.rows(counts).first?.values
        // And the two ends: the main file alone, the WAL applied whole.
        if commit == 0 { #expect(truth == (try SQLiteOracle(copying: store, wal: .none).rows(counts).first?.values)) }
        if commit == wal.commitFrames.count { #expect(truth == (try SQLiteOracle(copying: store).rows(counts).first?.values)) }

        let written = try Connection.open(path: out.path, mode: .readOnly)
        #expect(try written.rows(counts).first?.values == truth)
        #expect(try written.journalMode() == "delete")
        #expect(try written.integrityCheck() == ["ok"])
        #expect(!FileManager.default.fileExists(atPath: out.path + "-wal"))

        // Never overwritten: a second run fails and leaves the file as it was.
        let hash = try SHA256.hexOfFile(at: out)
        let again = try CLI.run(["wal", store.path, "--as-of", "1", "--out", out.path])
        #expect(again.status == 2)
        #expect(again.stderr.contains("already exists"))
        #expect(again.stderr.contains("--force"), "the refusal says how to replace it: \(again.stderr)")
        #expect(try SHA256.hexOfFile(at: out) == hash)

        // --force replaces it, as report's does: the file then holds the other commit, whole.
        let other = commit == 0 ? wal.commitFrames.count : 0
        let forced = try CLI.run(["wal", store.path, "--as-of", String(other), "--out", out.path, "--force"])
        #expect(forced.status == 0, "stderr: \(forced.stderr)")
        let otherOracle = try SQLiteOracle(copying: store, wal: .frames(other == 0 ? 0 : wal.commitFrames[other - 1]))
        let otherTruth = try otherOracle.connection.rows(counts).first?.values
        let replaced = try Connection.open(path: out.path, mode: .readOnly)
        #expect(try replaced.rows(counts).first?.values == otherTruth)
        #expect(try replaced.integrityCheck() == ["ok"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.url.path) == [out.lastPathComponent], "no temporary file is left beside it")
        try Self.expectUnchanged(store, before)
    }

    @Test("bad requests: one sentence, exit 2, nothing written, evidence unchanged", .enabled(if: ProjectPaths.hasRealFixtures, Comment(rawValue: ProjectPaths.realFixturesMissing)))
    func badRequests() throws {
        guard let (store, before) = try Self.realStore() else { return }
        let folder = try TemporaryFolder("wal-bad")
        let out = folder.path("never.sqlite")
        let commits = try Self.truth(store).wal.commitFrames.count
        let outOfRange = try CLI.run(["wal", store.path, "--as-of", String(commits + 1), "--out", out.path])
        #expect(outOfRange.status == 2)
        #expect(outOfRange.stderr == "Error: \(store.path) has \(commits) valid WAL commits, so --as-of \(commits + 1) is out of range; give 0 (the main file alone) to \(commits).\n")
        #expect(!FileManager.default.fileExists(atPath: out.path))

        let diffOutOfRange = try CLI.run(["wal", store.path, "--diff", "--to", "99"])
        #expect(diffOutOfRange.status == 2)
        #expect(diffOutOfRange.stderr.contains("--to 99 is out of range"))
        #expect(diffOutOfRange.stderr.contains(store.path))

        for arguments in [["--as-of", "3"], ["--from", "1"], ["--as-of", "-1", "--out", out.path], ["--diff", "--out", out.path],
                          ["--as-of", "two", "--out", out.path]] {
            let result = try CLI.run(["wal", store.path] + arguments)
            #expect(result.status == 2, "\(arguments)")
            #expect(result.stderr.hasPrefix("Error: "), "\(arguments)")
            #expect(result.stdout.isEmpty)
        }
        #expect(!FileManager.default.fileExists(atPath: out.path))
        try Self.expectUnchanged(store, before)
    }

    @Test("a damaged WAL made by SQLite: the report names the damage and what was lost; inputs unchanged")
    func damagedWAL() throws {
        let folder = try TemporaryFolder("wal-cli")
        let path = folder.path("db.sqlite").path
        let writer = try Connection.open(path: path, mode: .create)
        try writer.execute("PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0")
        try writer.disableCheckpointOnClose()
        try writer.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT); PRAGMA wal_checkpoint(TRUNCATE);")
        for batch in 0..<3 {
            try writer.execute("BEGIN")
            for i in 0..<80 { try writer.run("INSERT INTO t (v) VALUES (?)", [.text(String(repeating: "\(batch)", count: 100 + i))]) }
            try writer.execute("COMMIT")
        }
        let evidence = folder.path("evidence")
        try FileManager.default.createDirectory(at: evidence, withIntermediateDirectories: true)
        let db = evidence.appendingPathComponent("db.sqlite")
        try FileManager.default.copyItem(atPath: path, toPath: db.path)
        var wal = try Data(contentsOf: URL(fileURLWithPath: path + "-wal"))
        wal = wal.prefix(wal.count - 3000)  // the last frame is torn
        try wal.write(to: URL(fileURLWithPath: db.path + "-wal"))
        let before = try FolderSnapshot(evidence)

        let result = try CLI.run(["wal", db.path, "--format", "json"])
        #expect(try FolderSnapshot(evidence) == before)
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let s = try #require(try JSONDecoder().decode(Report.self, from: Data(result.stdout.utf8)).stores.first)
        #expect(s.format == "sqlite")
        #expect(s.wal.commits == 2)
        #expect(s.wal.stopReason?.contains("incomplete") == true || s.wal.stopReason?.contains("cut off") == true)
        #expect(s.warnings.map(\.id).contains("wal-damaged"))
        #expect(s.shm.present == false)

        let text = try CLI.run(["wal", db.path])
        #expect(text.stdout.contains("[wal-damaged]"))
        let out = folder.path("latest.sqlite")
        let written = try CLI.run(["wal", db.path, "--out", out.path])
        #expect(written.status == 0, "stderr: \(written.stderr)")
        #expect(try Connection.open(path: out.path, mode: .readOnly).scalar("SELECT count(*) FROM t").int == 160)
        #expect(try FolderSnapshot(evidence) == before)
    }
}

