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
    struct Finding: Decodable { let code: String; let message: String; let details: [String] }
    struct Store: Decodable { let path: String; let format: String; let pageSize: Int?; let wal: WAL; let shm: SHM; let warnings: [Finding]; let notes: [Finding] }
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

    static func expectUnchanged(_ store: URL, _ before: FolderSnapshot, sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(try FolderSnapshot(store.deletingLastPathComponent()) == before, "the evidence must stay byte-identical", sourceLocation: sourceLocation)
    }

    @Test("text report on the genuine store: frames, commits, salts, tables per transaction, the stale -shm", .enabled(if: ProjectPaths.hasRealFixtures, Comment(rawValue: ProjectPaths.realFixturesMissing)))
    func textReport() throws {
        guard let (store, before) = try Self.realStore() else { return }
        let result = try CLI.run(["wal", store.path])
        try Self.expectUnchanged(store, before)
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(result.stderr.isEmpty)
        #expect(result.stdout.contains("355 of 355 frames valid, 42 commits, last commit at frame 355"))
        #expect(result.stdout.contains("salts 0xe1f37357 0xaa79144c, checkpoint sequence 0"))
        #expect(result.stdout.contains("4096-byte pages, header says WAL mode"))
        #expect(result.stdout.contains("mxFrame 29, nBackfill 0, header intact, does not agree with the WAL"))
        #expect(result.stdout.contains("ZITEM (Item)"))
        #expect(result.stdout.contains("[shmStale]"))
    }

    @Test("JSON report on the genuine store matches its README", .enabled(if: ProjectPaths.hasRealFixtures, Comment(rawValue: ProjectPaths.realFixturesMissing)))
    func jsonReport() throws {
        guard let (store, before) = try Self.realStore() else { return }
        let result = try CLI.run(["wal", store.path, "--format", "json"])
        try Self.expectUnchanged(store, before)
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let report = try JSONDecoder().decode(Report.self, from: Data(result.stdout.utf8))
        #expect(report.schemaVersion == 1)
        let s = try #require(report.stores.first)
        #expect(s.format == "coredata")
        #expect(s.pageSize == 4096)
        #expect(s.wal.present)
        #expect(s.wal.frames == 355 && s.wal.validFrames == 355)
        #expect(s.wal.commits == 42 && s.wal.lastCommitFrame == 355)
        #expect(s.wal.pageSize == 4096)
        #expect(s.wal.salt1 == "0xe1f37357" && s.wal.salt2 == "0xaa79144c")
        #expect(s.wal.checkpointSequence == 0)
        #expect(s.wal.stopReason == nil)
        #expect(s.wal.uncommittedFrames == 0 && s.wal.staleFrames == 0)
        #expect(s.wal.transactions.count == 42)
        #expect(s.wal.transactions.map(\.number) == Array(1...42))
        #expect(s.wal.transactions.reduce(0) { $0 + $1.frames } == 355)
        // Commit 1 rewrote page 1's database header only: sqlite_schema itself did not change.
        #expect(s.wal.transactions.first?.tables == ["Z_PRIMARYKEY"])
        #expect(s.wal.transactions.last?.tables.contains("ZITEM") == true)
        #expect(s.wal.transactions.last?.entities.contains("Item") == true)
        #expect(s.shm.present && s.shm.mxFrame == 29 && s.shm.nBackfill == 0)
        #expect(s.shm.valid == true && s.shm.agreesWithWal == false)
        #expect(s.warnings.map(\.code) == ["shmStale"])
    }

    @Test("--diff on the genuine store: Component, CraftingRecipe and Item as the issue states", .enabled(if: ProjectPaths.hasRealFixtures, Comment(rawValue: ProjectPaths.realFixturesMissing)))
    func diffRealStore() throws {
        guard let (store, before) = try Self.realStore() else { return }
        let json = try CLI.run(["wal", store.path, "--diff", "--format", "json"])
        let text = try CLI.run(["wal", store.path, "--diff"])
        try Self.expectUnchanged(store, before)
        #expect(json.status == 0, "stderr: \(json.stderr)")
        let report = try JSONDecoder().decode(DiffReport.self, from: Data(json.stdout.utf8))
        let diff = try #require(report.stores.first)
        #expect(diff.from == 0 && diff.to == 42)
        func change(_ entity: String) throws -> Change { try #require(diff.changes.first { $0.entity == entity }) }
        let component = try change("Component")
        #expect(component.inserted == [3, 4, 5, 6, 7] && component.deleted == [2] && component.updatedCount == 0)
        let recipe = try change("CraftingRecipe")
        #expect(recipe.inserted == [3, 4] && recipe.deletedCount == 0)
        #expect(recipe.updated?.map(\.key) == [1, 2])
        let item = try change("Item")
        #expect(item.inserted == [7, 8, 9, 10, 11, 12] && item.deleted == [3, 4, 5])
        #expect(item.updatedCount == 0 && item.unchangedCount == 1)

        #expect(text.status == 0)
        #expect(text.stdout.contains("Item (ZITEM)\n    6 inserted, 0 updated, 3 deleted, 1 unchanged"))
        #expect(text.stdout.contains("inserted   Z_PK 7-12"))
        #expect(text.stdout.contains("deleted    Z_PK 3-5"))
        #expect(text.stdout.contains("Component (ZCOMPONENT)\n    5 inserted, 0 updated, 1 deleted, 0 unchanged"))

        let range = try CLI.run(["wal", store.path, "--diff", "--from", "41", "--to", "42", "--format", "json"])
        #expect(range.status == 0)
        let step = try #require(try JSONDecoder().decode(DiffReport.self, from: Data(range.stdout.utf8)).stores.first)
        #expect(step.from == 41 && step.to == 42)
        try Self.expectUnchanged(store, before)
    }

    @Test("--as-of N --out FILE writes a normal SQLite file with the rows SQLite itself shows at commit N", .enabled(if: ProjectPaths.hasRealFixtures, Comment(rawValue: ProjectPaths.realFixturesMissing)), arguments: [0, 12, 42])
    func pointInTime(commit: Int) throws {
        guard let (store, before) = try Self.realStore() else { return }
        let folder = try TemporaryFolder("wal-out")
        let out = folder.path("as-of-\(commit).sqlite")
        let result = try CLI.run(["wal", store.path, "--as-of", String(commit), "--out", out.path])
        try Self.expectUnchanged(store, before)
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(result.stdout.contains("written to \(out.path)"))

        // What SQLite itself shows at that commit: a scratch copy whose WAL ends at the commit frame.
        let report = try JSONDecoder().decode(Report.self, from: Data(try CLI.run(["wal", store.path, "--format", "json"]).stdout.utf8))
        let frames = commit == 0 ? 0 : report.stores[0].wal.transactions[commit - 1].commitFrame
        let scratch = folder.path("truth")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        let db = scratch.appendingPathComponent("default.store")
        try FileManager.default.copyItem(at: store, to: db)
        let wal = try Data(contentsOf: URL(fileURLWithPath: store.path + "-wal"))
        try wal.prefix(32 + frames * (24 + 4096)).write(to: URL(fileURLWithPath: db.path + "-wal"))
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: db.path)
        let counts = "SELECT (SELECT count(*) FROM ZITEM), (SELECT count(*) FROM ZCOMPONENT), (SELECT count(*) FROM ZCRAFTINGRECIPE), (SELECT count(*) FROM ACHANGE), (SELECT group_concat(ZNAME) FROM ZITEM)"
        let truth = try Connection.open(path: db.path, mode: .readWrite).rows(counts).first?.values

        let written = try Connection.open(path: out.path, mode: .readOnly)
        #expect(try written.rows(counts).first?.values == truth)
        #expect(try written.journalMode() == "delete")
        #expect(try written.integrityCheck() == ["ok"])
        if commit == 0 { #expect(try written.scalar("SELECT count(*) FROM ZITEM").int == 4) }
        if commit == 42 { #expect(try written.scalar("SELECT count(*) FROM ZITEM").int == 7) }
        #expect(!FileManager.default.fileExists(atPath: out.path + "-wal"))

        // Never overwritten: a second run fails and leaves the file as it was.
        let hash = try SHA256.hexOfFile(at: out)
        let again = try CLI.run(["wal", store.path, "--as-of", "1", "--out", out.path])
        #expect(again.status == 2)
        #expect(again.stderr.contains("already exists"))
        #expect(try SHA256.hexOfFile(at: out) == hash)
        try Self.expectUnchanged(store, before)
    }

    @Test("bad requests: one sentence, exit 2, nothing written, evidence unchanged", .enabled(if: ProjectPaths.hasRealFixtures, Comment(rawValue: ProjectPaths.realFixturesMissing)))
    func badRequests() throws {
        guard let (store, before) = try Self.realStore() else { return }
        let folder = try TemporaryFolder("wal-bad")
        let out = folder.path("never.sqlite")
        let outOfRange = try CLI.run(["wal", store.path, "--as-of", "43", "--out", out.path])
        #expect(outOfRange.status == 2)
        #expect(outOfRange.stderr == "Error: \(store.path) has 42 valid WAL commits, so --as-of 43 is out of range; give 0 (the main file alone) to 42.\n")
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
        #expect(s.warnings.map(\.code).contains("walDamaged"))
        #expect(s.shm.present == false)

        let text = try CLI.run(["wal", db.path])
        #expect(text.stdout.contains("[walDamaged]"))
        let out = folder.path("latest.sqlite")
        let written = try CLI.run(["wal", db.path, "--out", out.path])
        #expect(written.status == 0, "stderr: \(written.stderr)")
        #expect(try Connection.open(path: out.path, mode: .readOnly).scalar("SELECT count(*) FROM t").int == 160)
        #expect(try FolderSnapshot(evidence) == before)
    }
}

