import Acquisition
import Foundation
import SQLiteAccess
import StoreFormats
import StoreTestSupport
import Testing
@testable import WALForensics

/// The WAL forensics on the genuine SwiftData store, read through the
/// project's safe path (hashed, copied to a scratch folder), against the
/// facts its README gives.
@Suite("WAL forensics on the genuine SwiftData store")
struct RealStoreWALTests {
    static func evidence() throws -> (WALEvidence, EvidenceSession)? {
        let real = try #require(ProjectPaths.realFixtures())
        let session = try EvidenceSession()
        let copy = try session.workingCopy(of: real.appendingPathComponent("swiftdata-resources/default.store"))
        return (try WALEvidence(copy: copy, displayPath: "default.store"), session)
    }

    @Test("the WAL summary matches the README: 355 frames, 42 commits, salts, page size", .enabled(if: ProjectPaths.hasRealFixtures, Comment(rawValue: ProjectPaths.realFixturesMissing)))
    func summary() throws {
        guard let (evidence, session) = try Self.evidence() else { return }
        defer { try? session.finish() }
        let analysis = try WALAnalyzer.analyze(evidence)
        let wal = try #require(analysis.wal)
        #expect(wal.frames == 355)
        #expect(wal.validFrames == 355)
        #expect(wal.commits == 42)
        #expect(wal.lastCommitFrame == 355)
        #expect(wal.pageSize == 4096)
        #expect(wal.salt1 == 0xe1f3_7357)
        #expect(wal.salt2 == 0xaa79_144c)
        #expect(wal.checkpointSequence == 0)
        #expect(wal.stopReason == nil)
        #expect(analysis.transactions.count == 42)
        #expect(analysis.isCoreData)
        // The genuine -shm is stale: the app wrote 326 more frames after the index last recorded frame 29.
        #expect(analysis.warnings.map(\.code) == ["shmStale"])
        #expect(analysis.shm?.mxFrame == 29)
        #expect(analysis.shm?.valid == true)
        #expect(analysis.shm?.agreesWithWal == false)
        #expect(analysis.shm?.nBackfill == 0)
        let tables = Set(analysis.transactions.flatMap(\.tables))
        // No commit changed the schema: where page 1 was written only its database header moved.
        #expect(tables == ["ZITEM", "ZCOMPONENT", "ZCRAFTINGRECIPE", "ACHANGE", "ATRANSACTION", "Z_PRIMARYKEY"])
        #expect(analysis.entitiesByTable["ZITEM"] == ["Item"])
        // Every transaction's pages are all accounted for by tables: nothing free, nothing unused.
        #expect(analysis.transactions.allSatisfy { $0.otherPages.allSatisfy { $0.use == "header" } })
        #expect(analysis.transactions.contains { !$0.otherPages.isEmpty })
        #expect(analysis.transactions.reduce(0) { $0 + $1.frames } == 355)
        // The last transaction touched the three entity tables and the history.
        let last = try #require(analysis.transactions.last)
        #expect(last.commitFrame == 355)
        #expect(Set(last.entities).isSuperset(of: ["Item", "Component", "CraftingRecipe", "CHANGE", "TRANSACTION"]))
    }

    @Test("point-in-time images: row counts of the README at commit 0 and at the last commit", .enabled(if: ProjectPaths.hasRealFixtures, Comment(rawValue: ProjectPaths.realFixturesMissing)))
    func pointInTime() throws {
        guard let (evidence, session) = try Self.evidence() else { return }
        defer { try? session.finish() }
        let counts = "SELECT (SELECT count(*) FROM ZCOMPONENT), (SELECT count(*) FROM ZCRAFTINGRECIPE), (SELECT count(*) FROM ZITEM), (SELECT count(*) FROM ACHANGE), (SELECT count(*) FROM ATRANSACTION), (SELECT count(*) FROM ATRANSACTIONSTRING)"
        let main = try PointInTime.open(evidence, commit: 0).rows(counts).first?.values.compactMap(\.int)
        let last = try PointInTime.open(evidence, commit: 42).rows(counts).first?.values.compactMap(\.int)
        #expect(main == [1, 2, 4, 19, 13, 2])
        #expect(last == [5, 4, 7, 55, 38, 2])
        #expect(try PointInTime.open(evidence, commit: nil).rows(counts).first?.values.compactMap(\.int) == last)
        let names = try PointInTime.open(evidence, commit: 42).rows("SELECT Z_PK, ZNAME FROM ZITEM ORDER BY Z_PK").map { "\($0[0].int ?? 0) \($0[1].string ?? "")" }
        #expect(names == ["1 Stone Axe", "7 Wooden Chest", "8 Wooden Plank", "9 Tree Bark Rope", "10 Bolts", "11 Nails", "12 Small Wooden Stick"])
        // History grows one transaction at a time: ATRANSACTION never shrinks from commit to commit.
        var previous = 13
        for commit in 1...42 {
            let count = try PointInTime.open(evidence, commit: commit).scalar("SELECT count(*) FROM ATRANSACTION").int ?? -1
            #expect(count >= previous, "commit \(commit)")
            previous = count
        }
        let error = try #require(throws: WALForensicsError.self) { try PointInTime.image(evidence, commit: 43) }
        #expect(error.description == "default.store has 42 valid WAL commits, so --as-of 43 is out of range; give 0 (the main file alone) to 42.")
    }

    @Test("the diff from the main file to the WAL view is the one the issue states", .enabled(if: ProjectPaths.hasRealFixtures, Comment(rawValue: ProjectPaths.realFixturesMissing)))
    func diff() throws {
        guard let (evidence, session) = try Self.evidence() else { return }
        defer { try? session.finish() }
        let names = AttributeNames.read(try PointInTime.open(evidence, commit: nil))
        let diff = try WALDiff.compute(evidence, attributeNames: names)
        #expect(diff.from == 0 && diff.to == 42)
        func group(_ entity: String) throws -> WALDiff.Group { try #require(diff.groups.first { $0.entity == entity }) }
        func pks(_ keys: [WALDiff.RowKey]) -> [Int] { keys.compactMap { $0.first?.int } }
        let component = try group("Component")
        #expect(pks(component.inserted) == [3, 4, 5, 6, 7])
        #expect(pks(component.deleted) == [2])
        #expect(component.updated.isEmpty)
        let recipe = try group("CraftingRecipe")
        #expect(pks(recipe.inserted) == [3, 4])
        #expect(recipe.updated.map { $0.key.first?.int } == [1, 2])
        #expect(recipe.deleted.isEmpty)
        #expect(recipe.updated.first { $0.key.first?.int == 2 }?.changedColumns == ["Z_OPT", "ZPRODUCEDITEM"])
        #expect(recipe.updated.first { $0.key.first?.int == 2 }?.changedAttributes == ["producedItem"])
        let item = try group("Item")
        #expect(pks(item.inserted) == [7, 8, 9, 10, 11, 12])
        #expect(pks(item.deleted) == [3, 4, 5])
        #expect(item.updated.isEmpty)
        #expect(item.unchanged == 1)
        #expect(try group("CHANGE").insertedCount == 36)
        #expect(try group("TRANSACTION").insertedCount == 25)
        #expect(diff.groups.first { $0.table == "Z_PRIMARYKEY" }?.updated.count == 6)
        #expect(diff.tablesAdded.isEmpty && diff.tablesRemoved.isEmpty)

        // Between two commits, and backwards.
        let step = try WALDiff.compute(evidence, from: 3, to: 5)
        #expect(step.from == 3 && step.to == 5)
        let back = try WALDiff.compute(evidence, from: 42, to: 0)
        #expect(back.groups.first { $0.entity == "Item" }.map { pks($0.inserted) } == [3, 4, 5])
        #expect(throws: WALForensicsError.self) { try WALDiff.compute(evidence, from: 0, to: 50) }
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
        #expect(!analysis.warnings.map(\.code).contains("walMayNotBelong"), "\(analysis.warnings)")
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
        let header = try Data(contentsOf: copy.copiedMain).prefix(100)
        #expect(header[40..<44].allSatisfy { $0 == 0 } && header[56..<60].allSatisfy { $0 == 0 },
                "the main file's schema cookie and text encoding are not set yet")
        #expect(!analysis.findings.contains { $0.code == "walMayNotBelong" }, "\(analysis.findings.map(\.details))")
        #expect(analysis.transactions.count == analysis.wal?.commits)
    }
}
