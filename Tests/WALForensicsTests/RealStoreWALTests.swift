import Acquisition
import Foundation
import SQLiteAccess
import StoreFormats
import StoreTestSupport
import Testing
@testable import WALForensics

/// The WAL forensics on the genuine SwiftData store, read through the project's safe path
/// (hashed, copied to a scratch folder), against facts this test computes itself: the WAL's and
/// the -shm's own header bytes (StoreTestSupport's oracles, which share no code with
/// StoreFormats), and SQLite on private copies of the store cut at each commit.
@Suite("WAL forensics on the genuine SwiftData store")
struct RealStoreWALTests {
    static let relative = "swiftdata-resources/default.store"

    static func evidence() throws -> (WALEvidence, EvidenceSession)? {
        let real = try #require(ProjectPaths.realFixtures())
        let session = try EvidenceSession()
        let copy = try session.workingCopy(of: real.appendingPathComponent(relative))
        return (try WALEvidence(copy: copy, displayPath: "default.store"), session)
    }

    static func original() throws -> URL { try #require(ProjectPaths.realFixtures()).appendingPathComponent(relative) }

    /// The WAL as its own frame headers describe it.
    static func frames() throws -> WALFrameOracle {
        try #require(try WALFrameOracle.read(URL(fileURLWithPath: try original().path + "-wal")), "the -wal has a valid header")
    }

    static let tables = ["ZCOMPONENT", "ZCRAFTINGRECIPE", "ZITEM", "ACHANGE", "ATRANSACTION", "ATRANSACTIONSTRING"]
    static let counts = "SELECT " + tables.map { "(SELECT count(*) FROM \($0))" }.joined(separator: ", ")

    @Test("the WAL summary is what the WAL's own frame headers and SQLite say", .enabled(if: ProjectPaths.hasRealFixtures, Comment(rawValue: ProjectPaths.realFixturesMissing)))
    func summary() throws {
        guard let (evidence, session) = try Self.evidence() else { return }
        defer { try? session.finish() }
        let truth = try Self.frames()
        let shm = try #require(SharedMemoryOracle(data: try Data(contentsOf: URL(fileURLWithPath: try Self.original().path + "-shm"))))
        // SQLite itself, on a copy without the -shm: the last commit frame it recovers from the WAL.
        #expect(try SQLiteOracle(copying: try Self.original()).walLastCommitFrame() == truth.lastCommitFrame)
        // And every commit frame the headers name is one SQLite ends a transaction at, with none between.
        #expect(try SQLiteOracle.disagreements(commitFrames: truth.commitFrames, of: try Self.original()) == [])
        #expect(!truth.commitFrames.isEmpty && truth.validFrames == truth.frameSlots, "the genuine WAL is whole")

        let analysis = try WALAnalyzer.analyze(evidence)
        let wal = try #require(analysis.wal)
        #expect(wal.frames == truth.frameSlots)
        #expect(wal.validFrames == truth.validFrames)
        #expect(wal.commits == truth.commitFrames.count)
        #expect(wal.lastCommitFrame == truth.lastCommitFrame)
        #expect(wal.pageSize == truth.pageSize)
        #expect(wal.salt1 == truth.salt1)
        #expect(wal.salt2 == truth.salt2)
        #expect(wal.checkpointSequence == truth.checkpointSequence)
        #expect(wal.stopReason == nil)
        #expect(analysis.transactions.map(\.commitFrame) == truth.commitFrames)
        #expect(analysis.transactions.map { $0.pages.map(Int.init) } == truth.pagesByCommit)
        #expect(analysis.isCoreData)
        // Whether the -shm is stale (as Apple's copy was: its index stopped at an earlier commit)
        // is read from its own header, not assumed.
        #expect(shm.mxFrame <= UInt32(truth.lastCommitFrame) && (shm.mxFrame == 0 || truth.commitFrames.contains(Int(shm.mxFrame))))
        #expect(analysis.findings.filter { $0.severity == .warning }.map(\.id) == (shm.agrees(with: truth) ? [] : ["shm-stale"]))
        #expect(analysis.shm?.mxFrame == Int(shm.mxFrame))
        #expect(analysis.shm?.valid == true)
        #expect(analysis.shm?.agreesWithWal == shm.agrees(with: truth))
        #expect(analysis.shm?.nBackfill == Int(shm.nBackfill))
        // Which tables each commit wrote: SQLite's dbstat on a copy cut at that commit names the
        // owner of every page the commit's frames hold (page 1 is the header when the schema is unchanged).
        let cuts = [1, truth.commitFrames.count / 2, truth.commitFrames.count]
        for n in cuts {
            let copy = try SQLiteOracle(copying: try Self.original(), wal: .frames(truth.commitFrames[n - 1]))
            let pages = Set(truth.pagesByCommit[n - 1])
            let owners = Set(try copy.connection.rows("SELECT DISTINCT name, pageno FROM dbstat").compactMap { row -> String? in
                guard let page = row[1].int, pages.contains(page), let name = row[0].string else { return nil }
                return name
            })
            let indexes = Dictionary(try copy.connection.rows("SELECT name, tbl_name FROM sqlite_master WHERE type = 'index'")
                .map { ($0[0].string ?? "", $0[1].string ?? "") }, uniquingKeysWith: { a, _ in a })
            let tables = Set(owners.map { indexes[$0] ?? $0 }.filter { $0 != "sqlite_schema" && $0 != "sqlite_master" })
            let reported = try #require(analysis.transactions.first { $0.number == n })
            #expect(Set(reported.tables) == tables, "commit \(n)")
        }
        #expect(analysis.entitiesByTable["ZITEM"] == ["Item"])
        #expect(analysis.transactions.allSatisfy { $0.otherPages.allSatisfy { $0.use == "header" } })
        #expect(analysis.transactions.reduce(0) { $0 + $1.frames } == truth.lastCommitFrame)
    }

    @Test("point-in-time images hold the rows SQLite counts on copies cut at the same commits", .enabled(if: ProjectPaths.hasRealFixtures, Comment(rawValue: ProjectPaths.realFixturesMissing)))
    func pointInTime() throws {
        guard let (evidence, session) = try Self.evidence() else { return }
        defer { try? session.finish() }
        let truth = try Self.frames()
        let commits = truth.commitFrames.count
        func sqlite(_ wal: SQLiteOracle.WALChoice) throws -> [Int]? {
            try SQLiteOracle(copying: try Self.original(), wal: wal).rows(Self.counts).first?.values.compactMap(\.int)
        }
        let main = try PointInTime.open(evidence, commit: 0).rows(Self.counts).first?.values.compactMap(\.int)
        let last = try PointInTime.open(evidence, commit: commits).rows(Self.counts).first?.values.compactMap(\.int)
        #expect(main == (try sqlite(.none)))
        #expect(last == (try sqlite(.whole)))
        #expect(main != last, "the WAL holds rows the main file does not")
        #expect(try PointInTime.open(evidence, commit: nil).rows(Self.counts).first?.values.compactMap(\.int) == last)
        let nameQuery = "SELECT Z_PK, ZNAME FROM ZITEM ORDER BY Z_PK"
        func names(_ rows: [Row]) -> [String] { rows.map { "\($0[0].int ?? 0) \($0[1].string ?? "")" } }
        #expect(names(try PointInTime.open(evidence, commit: commits).rows(nameQuery)) == names(try SQLiteOracle(copying: Self.original()).rows(nameQuery)))
        // Every commit: the tool's image and SQLite on a copy whose WAL ends at that commit's frame agree.
        for (n, frame) in truth.commitFrames.enumerated() {
            let ours = try PointInTime.open(evidence, commit: n + 1).rows(Self.counts).first?.values.compactMap(\.int)
            #expect(ours == (try sqlite(.frames(frame))), "commit \(n + 1) (frame \(frame))")
        }
        let error = try #require(throws: WALForensicsError.self) { try PointInTime.image(evidence, commit: commits + 1) }
        #expect(error.description == "default.store has \(commits) valid WAL commits, so --as-of \(commits + 1) is out of range; give 0 (the main file alone) to \(commits).")
    }

    /// SQLite's own diff of two copies (by Z_PK): keys only in `to`, only in `from`, and in both with any column changed.
    static func sqliteDiff(_ table: String, from: SQLiteOracle.WALChoice, to: SQLiteOracle.WALChoice) throws -> (inserted: [Int], deleted: [Int], updated: [Int], unchanged: Int) {
        let a = try SQLiteOracle(copying: try original(), wal: from)
        let b = try SQLiteOracle(copying: try original(), wal: to)
        try b.connection.run("ATTACH DATABASE ? AS old", [.text(a.url.path)])
        defer { withExtendedLifetime(a) {} }
        let t = Identifier.quoted(table)
        func keys(_ sql: String) throws -> [Int] { try b.connection.rows(sql).compactMap { $0[0].int } }
        let inserted = try keys("SELECT Z_PK FROM main.\(t) WHERE Z_PK NOT IN (SELECT Z_PK FROM old.\(t)) ORDER BY Z_PK")
        let deleted = try keys("SELECT Z_PK FROM old.\(t) WHERE Z_PK NOT IN (SELECT Z_PK FROM main.\(t)) ORDER BY Z_PK")
        let updated = try keys("SELECT Z_PK FROM (SELECT * FROM main.\(t) EXCEPT SELECT * FROM old.\(t)) WHERE Z_PK IN (SELECT Z_PK FROM old.\(t)) ORDER BY Z_PK")
        let both = try b.connection.scalar("SELECT count(*) FROM main.\(t) WHERE Z_PK IN (SELECT Z_PK FROM old.\(t))").int ?? 0
        return (inserted, deleted, updated, both - updated.count)
    }

    @Test("the diff from the main file to the WAL view is SQLite's diff of the two copies", .enabled(if: ProjectPaths.hasRealFixtures, Comment(rawValue: ProjectPaths.realFixturesMissing)))
    func diff() throws {
        guard let (evidence, session) = try Self.evidence() else { return }
        defer { try? session.finish() }
        let commits = try Self.frames().commitFrames.count
        let names = AttributeNames.read(try PointInTime.open(evidence, commit: nil))
        let diff = try WALDiff.compute(evidence, attributeNames: names)
        #expect(diff.from == 0 && diff.to == commits)
        func pks(_ keys: [WALDiff.RowKey]) -> [Int] { keys.compactMap { $0.first?.int } }
        for (entity, table) in [("Component", "ZCOMPONENT"), ("CraftingRecipe", "ZCRAFTINGRECIPE"), ("Item", "ZITEM")] {
            let group = try #require(diff.groups.first { $0.entity == entity })
            let truth = try Self.sqliteDiff(table, from: .none, to: .whole)
            #expect(pks(group.inserted) == truth.inserted, "\(entity) inserted")
            #expect(pks(group.deleted) == truth.deleted, "\(entity) deleted")
            #expect(group.updated.compactMap { $0.key.first?.int }.sorted() == truth.updated, "\(entity) updated")
            #expect(group.unchanged == truth.unchanged, "\(entity) unchanged")
        }
        #expect(try #require(diff.groups.first { $0.entity == "CHANGE" }).insertedCount == (try Self.sqliteDiff("ACHANGE", from: .none, to: .whole)).inserted.count)
        #expect(try #require(diff.groups.first { $0.entity == "TRANSACTION" }).insertedCount == (try Self.sqliteDiff("ATRANSACTION", from: .none, to: .whole)).inserted.count)
        // The columns named for an update are the ones SQLite shows changed (read on the two copies).
        let recipe = try #require(diff.groups.first { $0.entity == "CraftingRecipe" })
        let old = try SQLiteOracle(copying: try Self.original(), wal: .none), new = try SQLiteOracle(copying: try Self.original())
        let columns = try new.connection.columns(of: "ZCRAFTINGRECIPE").map(\.name)
        for update in recipe.updated {
            let pk = try #require(update.key.first?.int)
            let before = try old.connection.rows("SELECT * FROM ZCRAFTINGRECIPE WHERE Z_PK = ?", [.integer(Int64(pk))]).first?.values ?? []
            let after = try new.connection.rows("SELECT * FROM ZCRAFTINGRECIPE WHERE Z_PK = ?", [.integer(Int64(pk))]).first?.values ?? []
            let changed = zip(columns, zip(before, after)).filter { $0.1.0 != $0.1.1 }.map(\.0)
            #expect(update.changedColumns == changed, "CraftingRecipe #\(pk)")
        }
        #expect(diff.tablesAdded.isEmpty && diff.tablesRemoved.isEmpty)

        // Between two commits, and backwards.
        let step = try WALDiff.compute(evidence, from: 3, to: 5)
        #expect(step.from == 3 && step.to == 5)
        let back = try WALDiff.compute(evidence, from: commits, to: 0)
        #expect(back.groups.first { $0.entity == "Item" }.map { pks($0.inserted) } == (try Self.sqliteDiff("ZITEM", from: .whole, to: .none)).inserted)
        #expect(throws: WALForensicsError.self) { try WALDiff.compute(evidence, from: 0, to: commits + 8) }
    }

    @Test("a store that lives wholly in its WAL (main file never checkpointed into) belongs to it: no walMayNotBelong", .enabled(if: ProjectPaths.hasRealFixtures, Comment(rawValue: ProjectPaths.realFixturesMissing)))
    func walOnlyStore() throws {
        let real = try #require(ProjectPaths.realFixtures())
        let session = try EvidenceSession()
        defer { try? session.finish() }
        let copy = try session.workingCopy(of: real.appendingPathComponent("photoanalysis-walonly/PGCurationCache.sqlite.sqlite"))
        let evidence = try WALEvidence(copy: copy, displayPath: "PGCurationCache.sqlite.sqlite")
        // What SQLite itself says of the pair, on the working copy.
        let connection = try copy.open()
        #expect(try connection.integrityCheck(full: true) == ["ok"])
        let analysis = try WALAnalyzer.analyze(evidence)
        #expect(analysis.wal?.validFrames == analysis.wal?.frames)
        #expect(!analysis.findings.filter { $0.severity == .warning }.map(\.id).contains("wal-may-not-belong"), "\(analysis.findings)")
    }
}

@Suite("page 1 in the WAL: schema or header only")
struct PageOneTests {
    @Test("a commit that grows the file rewrites only page 1's header; one that creates a table writes sqlite_schema")
    func headerOnlyOrSchema() throws {
        var builder = try SQLiteWALBuilder("page-one") { db in
            try db.execute("CREATE TABLE t (x)")
        }
        // Enough rows to need new pages: the page count in the header changes, the schema does not.
        try builder.commit("INSERT INTO t SELECT randomblob(3000) FROM (WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20) SELECT i FROM n)")
        try builder.commit("CREATE TABLE u (y)")
        let analysis = try WALAnalyzer.analyze(try builder.copy().evidence())
        #expect(analysis.transactions.count == 2)
        let grow = try #require(analysis.transactions.first)
        #expect(grow.pages.contains(1), "SQLite wrote page 1 for the new page count")
        #expect(!grow.tables.contains("sqlite_schema"))
        #expect(grow.otherPages.contains { $0.use == "header" && $0.count == 1 })
        let create = try #require(analysis.transactions.last)
        #expect(create.tables.contains("sqlite_schema"), "\(create.tables)")
    }
}

@Suite("a store that lives only in its WAL")
struct WALOnlyStoreTests {
    @Test("photoanalysis-walonly: the header-only main file does not make the WAL 'not belong'; SQLite agrees the store is consistent", .enabled(if: ProjectPaths.hasRealFixtures, Comment(rawValue: ProjectPaths.realFixturesMissing)))
    func walOnly() throws {
        let real = try #require(ProjectPaths.realFixtures())
        let url = real.appendingPathComponent("photoanalysis-walonly/PGCurationCache.sqlite.sqlite")
        try #require(FileManager.default.fileExists(atPath: url.path), "photoanalysis-walonly is missing from the real fixtures")
        let session = try EvidenceSession()
        defer { try? session.finish() }
        let copy = try session.workingCopy(of: url)
        let analysis = try WALAnalyzer.analyze(try WALEvidence(copy: copy, displayPath: url.lastPathComponent))
        // SQLite itself, on the working copy with the WAL applied: the store is consistent.
        let db = try copy.open()
        #expect(try db.integrityCheck() == ["ok"])
        let header = try Data(contentsOf: copy.databaseFile).prefix(100)
        #expect(header[40..<44].allSatisfy { $0 == 0 } && header[56..<60].allSatisfy { $0 == 0 },
                "the main file's schema cookie and text encoding are not set yet")
        #expect(!analysis.findings.contains { $0.id == "wal-may-not-belong" }, "\(analysis.findings.map(\.evidence))")
        #expect(analysis.transactions.count == analysis.wal?.commits)
    }
}
