import Acquisition
import Foundation
import SQLiteAccess
import StoreTestSupport
import Testing
@testable import WALForensics
@testable import StoreFormats

/// The pure-Swift page walker against SQLite's own `dbstat`, at every
/// commit of real and generated WALs: moving forward commit by commit
/// must give exactly what a fresh walk gives, and both exactly what dbstat
/// lists, with every other page on the freelist or in the pointer map.
@Suite("Pages to tables, against dbstat")
struct PageOwnershipTests {
    /// `name|page|type` for every b-tree page, as dbstat names them.
    static func dbstat(_ image: Data) throws -> Set<String> {
        let connection = try Connection.deserialize(image, name: "dbstat image")
        return Set(try connection.rows("SELECT name, pageno, pagetype FROM dbstat").map {
            "\($0[0].string ?? "")|\($0[1].int ?? 0)|\($0[2].string ?? "")"
        })
    }

    static func walked(_ tracker: PageOwnershipTracker) -> Set<String> {
        var result = Set<String>()
        for (page, use) in tracker.pageUses() {
            guard let object = use.object else { continue }
            let type = switch use.kind {
            case .interior: "internal"
            case .leaf: "leaf"
            default: "overflow"
            }
            result.insert("\(object.name)|\(page)|\(type)")
        }
        return result
    }

    /// Checks every commit of `evidence`; returns the number of commits checked.
    @discardableResult
    static func checkEveryCommit(_ evidence: WALEvidence, firstCommit: Int = 0,
                                 sourceLocation: SourceLocation = #_sourceLocation) throws -> Int {
        let wal = evidence.wal
        let incremental = try PageOwnershipTracker(mainFile: evidence.mainFile, wal: wal, walData: evidence.walData)
        if firstCommit > 0 { incremental.advance(toCommit: firstCommit - 1) }
        for commit in firstCommit...evidence.commitCount {
            if commit > 0 { #expect(incremental.advance(), sourceLocation: sourceLocation) }
            #expect(incremental.commit == commit, sourceLocation: sourceLocation)
            let fresh = try PageOwnershipTracker(mainFile: evidence.mainFile, wal: wal, walData: evidence.walData, startCommit: commit)
            let image = try PointInTime.image(evidence, commit: commit)
            let truth = try dbstat(image)
            let walkedFresh = walked(fresh)
            let walkedIncremental = walked(incremental)
            #expect(walkedFresh == truth, "commit \(commit): fresh walk differs from dbstat: only walked \(walkedFresh.subtracting(truth).sorted().prefix(5)), only dbstat \(truth.subtracting(walkedFresh).sorted().prefix(5))", sourceLocation: sourceLocation)
            #expect(walkedIncremental == walkedFresh, "commit \(commit): incremental walk differs from a fresh one: \(walkedIncremental.symmetricDifference(walkedFresh).sorted().prefix(5))", sourceLocation: sourceLocation)
            #expect(incremental.problems.isEmpty, "commit \(commit): \(incremental.problems.prefix(3))", sourceLocation: sourceLocation)
            #expect(fresh.problems.isEmpty, "commit \(commit): \(fresh.problems.prefix(3))", sourceLocation: sourceLocation)
            #expect(incremental.unaccountedPages.isEmpty, "commit \(commit): pages reached by nothing \(incremental.unaccountedPages.prefix(5))", sourceLocation: sourceLocation)
            let connection = try Connection.deserialize(image, name: "image")
            let free = try connection.scalar("PRAGMA freelist_count").int ?? -1
            let uses = incremental.pageUses().values
            #expect(uses.filter { $0.kind == .freelistTrunk || $0.kind == .freelistLeaf }.count == free,
                    "commit \(commit)", sourceLocation: sourceLocation)
            #expect(incremental.pageCount == image.count / incremental.pageSize, sourceLocation: sourceLocation)
            #expect(Set(incremental.objects.map(\.name)) == Set(try connection.rows(
                "SELECT name FROM sqlite_master WHERE rootpage > 0").compactMap { $0[0].string } + ["sqlite_schema"]),
                sourceLocation: sourceLocation)
        }
        #expect(!incremental.advance(), "no commit after the last", sourceLocation: sourceLocation)
        return evidence.commitCount + 1 - firstCommit
    }

    @Test("the genuine SwiftData store: every state (the main file and each commit)", .enabled(if: ProjectPaths.hasRealFixtures, Comment(rawValue: ProjectPaths.realFixturesMissing)))
    func realStore() throws {
        let real = try #require(ProjectPaths.realFixtures())
        let session = try EvidenceSession()
        defer { try? session.finish() }
        let copy = try session.workingCopy(of: real.appendingPathComponent("swiftdata-resources/default.store"))
        let evidence = try WALEvidence(copy: copy)
        let commits = try #require(try WALFrameOracle.read(URL(fileURLWithPath: real.appendingPathComponent("swiftdata-resources/default.store").path + "-wal"))).commitFrames.count
        #expect(try Self.checkEveryCommit(evidence) == commits + 1, "the main file and every commit the frame headers name")
        // Pointer-map page 2 of this incremental-auto-vacuum store is named as such.
        let tracker = try PageOwnershipTracker(mainFile: evidence.mainFile)
        #expect(tracker.use(of: 2)?.kind == .pointerMap)
        #expect(tracker.use(of: 1)?.object == .schema)
    }

    @Test("generated WALs: splits, overflow chains, indexes, deletes, dropped and new tables, vacuum",
          arguments: [(4096, "NONE", UInt64(1)), (1024, "INCREMENTAL", 2), (512, "FULL", 3), (4096, "INCREMENTAL", 4)])
    func generated(pageSize: Int, autoVacuum: String, seed: UInt64) throws {
        var builder = try SQLiteWALBuilder("pages", options: .init(pageSize: pageSize, autoVacuum: autoVacuum)) { db in
            try db.execute("""
                CREATE TABLE ZITEM (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZNAME VARCHAR, ZDATA BLOB);
                CREATE INDEX ZITEM_ZNAME_INDEX ON ZITEM (ZNAME);
                CREATE TABLE pairs (a TEXT, b TEXT, PRIMARY KEY (a, b)) WITHOUT ROWID;
                """)
            for i in 1...60 {
                try db.run("INSERT INTO ZITEM VALUES (?, 1, 1, ?, randomblob(?))",
                           [.integer(Int64(i)), .text("item \(i)"), .integer(Int64(i * 37 % 900))])
            }
        }
        var random = SeededRandom(seed: seed)
        var next = 61
        for step in 0..<40 {
            switch Int.random(in: 0..<10, using: &random) {
            case 0...3:
                let count = Int.random(in: 1...30, using: &random)
                var sql = ""
                for _ in 0..<count {
                    let size = [10, 200, pageSize, pageSize * 3][Int.random(in: 0..<4, using: &random)]
                    sql += "INSERT INTO ZITEM VALUES (\(next), 1, 1, 'item \(next) \(String(repeating: "x", count: next % 50))', randomblob(\(size)));"
                    next += 1
                }
                try builder.commit(sql)
            case 4:
                try builder.commit("DELETE FROM ZITEM WHERE Z_PK % \(Int.random(in: 2...5, using: &random)) = 0")
            case 5:
                try builder.commit("UPDATE ZITEM SET ZDATA = randomblob(\(pageSize * 2)), Z_OPT = Z_OPT + 1 WHERE Z_PK % 7 = \(step % 7)")
            case 6:
                try builder.commit("INSERT OR IGNORE INTO pairs VALUES ('\(step)-\(String(repeating: "k", count: step * 13))', hex(randomblob(\(pageSize / 4))))")
            case 7:
                try builder.commit("CREATE TABLE IF NOT EXISTS extra\(step % 3) (x); INSERT INTO extra\(step % 3) VALUES (randomblob(\(pageSize)))")
            case 8:
                try builder.commit("DROP TABLE IF EXISTS extra\(step % 3)")
            default:
                if autoVacuum == "INCREMENTAL" {
                    try builder.writer.execute("PRAGMA incremental_vacuum(5)")
                } else {
                    try builder.commit("DELETE FROM pairs WHERE a LIKE '1%'")
                }
            }
        }
        if seed % 2 == 0 { try builder.writer.execute("VACUUM") }
        try builder.commit("INSERT INTO ZITEM VALUES (\(next), 1, 1, 'last', randomblob(\(pageSize * 5)))")
        let copy = try builder.copy()
        let evidence = try copy.evidence()
        #expect(evidence.commitCount >= 30)
        try Self.checkEveryCommit(evidence)
    }

    /// Moves a tracker that keeps unchanged subtrees and one that walks every written tree in
    /// full through every commit; both must say the same of every page, and find the same problems.
    @discardableResult
    static func compareReuse(_ mainFile: Data, _ walData: Data, _ label: String,
                             sourceLocation: SourceLocation = #_sourceLocation) throws -> Int {
        let wal = WAL(data: walData)
        guard let reusing = try? PageOwnershipTracker(mainFile: mainFile, wal: wal, walData: walData),
              let full = try? PageOwnershipTracker(mainFile: mainFile, wal: wal, walData: walData) else { return 0 }
        full.reusesUnchangedSubtrees = false
        while true {
            let moved = (reusing.advance(), full.advance())
            #expect(moved.0 == moved.1, sourceLocation: sourceLocation)
            #expect(reusing.pageUses() == full.pageUses(), "\(label), commit \(full.commit): page uses differ", sourceLocation: sourceLocation)
            #expect(reusing.problems == full.problems, "\(label), commit \(full.commit): \(reusing.problems.prefix(3)) against \(full.problems.prefix(3))",
                    sourceLocation: sourceLocation)
            #expect(reusing.unaccountedPages == full.unaccountedPages, "\(label), commit \(full.commit)", sourceLocation: sourceLocation)
            #expect(reusing.objects == full.objects, "\(label), commit \(full.commit)", sourceLocation: sourceLocation)
            if !moved.1 { break }
        }
        #expect(full.advancesReusingSubtrees == 0, sourceLocation: sourceLocation)
        return reusing.advancesReusingSubtrees
    }

    @Test("keeping unchanged subtrees gives exactly the full walk, on sound and on damaged WALs",
          arguments: [(4096, "NONE", UInt64(11)), (1024, "INCREMENTAL", 12), (512, "FULL", 13)])
    func subtreeReuse(pageSize: Int, autoVacuum: String, seed: UInt64) throws {
        var builder = try SQLiteWALBuilder("reuse", options: .init(pageSize: pageSize, autoVacuum: autoVacuum)) { db in
            try db.execute("""
                CREATE TABLE ZITEM (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZNAME VARCHAR, ZDATA BLOB);
                CREATE INDEX ZITEM_ZNAME_INDEX ON ZITEM (ZNAME);
                """)
            for i in 1...400 {
                try db.run("INSERT INTO ZITEM VALUES (?, 1, 1, ?, randomblob(?))",
                           [.integer(Int64(i)), .text("item \(i)"), .integer(Int64(i * 37 % (pageSize * 2)))])
            }
        }
        var random = SeededRandom(seed: seed)
        var next = 401
        for step in 0..<30 {
            switch Int.random(in: 0..<4, using: &random) {
            case 0, 1:
                var sql = ""
                for _ in 0..<Int.random(in: 1...40, using: &random) {
                    sql += "INSERT INTO ZITEM VALUES (\(next), 1, 1, 'item \(next)', randomblob(\([10, 300, pageSize * 2][next % 3])));"
                    next += 1
                }
                try builder.commit(sql)
            case 2:
                try builder.commit("UPDATE ZITEM SET ZNAME = ZNAME || 'u', Z_OPT = Z_OPT + 1 WHERE Z_PK % 11 = \(step % 11)")
            default:
                try builder.commit("DELETE FROM ZITEM WHERE Z_PK % 13 = \(step % 13)")
            }
        }
        let copy = try builder.copy()
        let main = try Data(contentsOf: copy.db)
        let walData = try Data(contentsOf: copy.wal)
        let sound = WAL(data: walData)
        #expect(sound.transactions.count >= 30)
        let reused = try Self.compareReuse(main, walData, "sound")
        #expect(reused >= sound.transactions.count / 2, "most commits of a sound WAL keep unchanged subtrees (\(reused) of \(sound.transactions.count))")
        // The same check where the full walk must find problems: page bytes of committed frames
        // changed (and the frames resealed, so SQLite would apply them), and the WAL over another
        // database's main file.
        for trial in 0..<25 {
            var damaged = walData
            for _ in 0..<Int.random(in: 1...6, using: &random) {
                let frame = Int.random(in: 1...sound.lastCommitFrame, using: &random)
                let start = WALSurgery.offset(ofFrame: frame, pageSize: pageSize) + WALFrame.headerLength
                let at = start + Int.random(in: 0..<min(pageSize, 64), using: &random)
                damaged[at] = UInt8.random(in: 0...255, using: &random)
            }
            WALSurgery.reseal(&damaged, pageSize: pageSize)
            try Self.compareReuse(main, damaged, "trial \(trial)")
        }
        var other = main
        other.replaceSubrange(100 ..< other.count, with: Data(repeating: 0, count: other.count - 100))
        try Self.compareReuse(other, walData, "zeroed main file")
    }

    @Test("a WAL that holds every page: the main file given empty")
    func emptyMainFile() throws {
        var builder = try SQLiteWALBuilder("empty-main") { _ in }
        try builder.commit("CREATE TABLE t (x); INSERT INTO t VALUES (randomblob(10000))")
        try builder.commit("CREATE TABLE u (y); INSERT INTO u VALUES (1)")
        let copy = try builder.copy()
        let walData = try Data(contentsOf: copy.wal)
        let evidence = WALEvidence(displayPath: "db.sqlite", mainFile: Data(), walData: walData)
        let tracker = try PageOwnershipTracker(mainFile: Data(), wal: evidence.wal, walData: walData)
        #expect(tracker.pageCount == 0)
        #expect(tracker.problems.isEmpty)
        #expect(try Self.checkEveryCommit(evidence, firstCommit: 1) == 2)
    }

    @Test("damaged b-trees are reported, never trapped on")
    func damage() throws {
        var builder = try SQLiteWALBuilder("damage") { db in
            try db.execute("CREATE TABLE t (x); CREATE INDEX t_x ON t (x);")
            for i in 0..<300 { try db.run("INSERT INTO t VALUES (?)", [.text(String(repeating: "v\(i)", count: 40))]) }
        }
        try builder.commit("INSERT INTO t VALUES ('wal')")
        let copy = try builder.copy()
        let main = try Data(contentsOf: copy.db)
        let pageSize = 4096
        let pages = main.count / pageSize
        // Each page in turn overwritten with a pattern that makes it point at page 2 and past the end.
        for victim in 2...pages {
            for pattern: [UInt8] in [[0x05, 0, 0, 0, 0x10, 0, 0, 0, 0, 0, 0, 0x02], [0x0D, 0xFF, 0xFF, 0xFF, 0xFF], [0x02, 0, 0, 0, 0x02, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF]] {
                var damaged = main
                let start = (victim - 1) * pageSize
                damaged.replaceSubrange(start ..< start + pattern.count, with: pattern)
                let tracker = try PageOwnershipTracker(mainFile: damaged)
                #expect(!tracker.problems.isEmpty || !tracker.unaccountedPages.isEmpty, "page \(victim) damaged with \(pattern)")
            }
        }
        // Random bytes everywhere but page 1.
        var random = SeededRandom(seed: 9)
        for _ in 0..<50 {
            var damaged = main
            for _ in 0..<200 {
                let at = Int.random(in: 100..<damaged.count, using: &random)
                damaged[at] = UInt8.random(in: 0...255, using: &random)
            }
            _ = try PageOwnershipTracker(mainFile: damaged).problems
        }
    }
}
