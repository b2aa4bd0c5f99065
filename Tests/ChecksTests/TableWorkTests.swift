import Acquisition
@testable import Checks
import CoreDataStore
import Findings
import Foundation
import SQLiteAccess
import StoreBuilder
import StoreTestSupport
import Testing

/// The integrity task compares the tables the `-wal` changed with their indexes on two
/// connections at once (`TableWork`). Its answer must be the one a single connection gives,
/// on a sound store and on the stores where the comparison finds something.
@Suite("the integrity task's table comparisons on two connections")
struct TableWorkTests {
    /// A store of the bench corpus's shape with an uncheckpointed `-wal`.
    static func benchStore(in folder: TemporaryFolder) throws -> URL {
        let url = folder.path("bench/default.store")
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try BenchCorpus.write(to: url, rows: 1200, batch: 12, walShare: 0.3)
        return url
    }

    /// The integrity task's outcome with the comparisons on one connection and on two.
    static func integrity(_ store: URL) throws -> (one: StoreChecker.IntegrityOutcome, two: StoreChecker.IntegrityOutcome) {
        let session = try EvidenceSession()
        defer { session.scratch.remove() }
        let acquired = try #require(try session.stores(from: [store.path]).first)
        let opened = try OpenedStore.open(acquired.copy, displayPath: acquired.displayPath, xcodeModel: nil)
        let two = StoreChecker(opened: opened, copy: acquired.copy)
        #expect(two.secondConnection != nil)
        var one = two
        one.secondConnection = nil
        let result = (try one.runIntegrity(), try two.runIntegrity())
        try session.finish()
        return result
    }

    static func same(_ a: StoreChecker.IntegrityOutcome, _ b: StoreChecker.IntegrityOutcome) {
        #expect(a.walTablesSound == b.walTablesSound)
        #expect(a.findings.map(\.id) == b.findings.map(\.id))
        #expect(a.findings.map(\.message) == b.findings.map(\.message))
        #expect(a.findings.map { $0.evidence["problems"] } == b.findings.map { $0.evidence["problems"] })
        #expect(a.findings.map { $0.evidence["walViewProblems"] } == b.findings.map { $0.evidence["walViewProblems"] })
        #expect(a.findings.map { $0.evidence["tables"] } == b.findings.map { $0.evidence["tables"] })
    }

    @Test("each table's answer comes back in the tables' order, whichever connection read it")
    func order() throws {
        let folder = try TemporaryFolder("table-work")
        let url = try Self.benchStore(in: folder)
        let first = try Connection.open(path: url.path, mode: .readOnly)
        let tables = try first.tableNames().filter { !$0.hasPrefix("sqlite_") }
        #expect(tables.count > 4)
        let path = url.path
        let counts = TableWork.each(tables, on: first, second: { try Connection.open(path: path, mode: .readOnly) }) { connection, table in
            (table, (try? connection.scalar("SELECT count(*) FROM \(Identifier.quoted(table))").int) ?? -1)
        }
        #expect(counts.map(\.0) == tables)
        #expect(counts.map(\.1) == (try tables.map { try first.scalar("SELECT count(*) FROM \(Identifier.quoted($0))").int ?? -2 }))
        // Taken largest first (here: the last table first), still answered in the tables' order.
        let costly = TableWork.each(tables, on: first, second: { try Connection.open(path: path, mode: .readOnly) },
                                    cost: { tables.firstIndex(of: $0) ?? 0 }) { _, table in table }
        #expect(costly == tables)
        // Without a second connection (or one that cannot be opened) every table is read on the first.
        let alone = TableWork.each(tables, on: first, second: { throw SQLiteError(extendedCode: 14, message: "cannot open") }) { _, table in table }
        #expect(alone == tables)
    }

    @Test("a sound store: the tables the -wal changed pass on two connections as on one")
    func sound() throws {
        let folder = try TemporaryFolder("table-work")
        let (one, two) = try Self.integrity(try Self.benchStore(in: folder))
        #expect(one.walTablesSound, "\(one.findings.map(\.message))")
        Self.same(one, two)
    }

    @Test("a -wal copied late, two tables behind their indexes: the same findings on two connections as on one")
    func lateWAL() throws {
        let folder = try TemporaryFolder("table-work")
        let pulled = try LateWAL.pull(from: try Self.benchStore(in: folder), in: folder, before: 40, after: 3, tags: true)
        let (one, two) = try Self.integrity(pulled)
        #expect(!one.walTablesSound)
        #expect(one.findings.contains { $0.id == "wal-mismatch" }, "\(one.findings.map(\.id))")
        // Both tables are named, and both are found wanting.
        let tables = one.findings.first { $0.id == "wal-mismatch" }?.evidence["tables"]
        #expect("\(String(describing: tables))".contains("ZNOTE") && "\(String(describing: tables))".contains("Z_2TAGS"), "\(String(describing: tables))")
        Self.same(one, two)
    }

    /// `run()` gives the integrity task the row screen, whose scans of the tables the `-wal`
    /// changed also read their index side: the integrity findings must be the ones the task
    /// reaches reading every table itself.
    @Test("check's shared scans: run() gives the integrity findings runIntegrity() gives alone",
          arguments: [false, true])
    func sharedScans(late: Bool) throws {
        let folder = try TemporaryFolder("table-work")
        let bench = try Self.benchStore(in: folder)
        let store = late ? try LateWAL.pull(from: bench, in: folder, before: 40, after: 3, tags: true) : bench
        let session = try EvidenceSession()
        defer { session.scratch.remove() }
        let acquired = try #require(try session.stores(from: [store.path]).first)
        let opened = try OpenedStore.open(acquired.copy, displayPath: acquired.displayPath, xcodeModel: nil)
        let checker = StoreChecker(opened: opened, copy: acquired.copy)
        let alone = try checker.runIntegrity()
        let integrityIDs: Set = ["sqlite-integrity", "wal-mismatch", "check-not-run"]
        let all = try checker.run().filter { integrityIDs.contains($0.id) }
        #expect(all.map(\.id) == alone.findings.map(\.id))
        #expect(all.map(\.message) == alone.findings.map(\.message))
        #expect(all.map(\.evidence) == alone.findings.map(\.evidence))
        #expect(alone.walTablesSound == !late)
        try session.finish()
    }

    @Test("the row screen's scan of a table the -wal changed reads its index side once, for whichever thread asks")
    func screenReadsSide() throws {
        let folder = try TemporaryFolder("table-work")
        let url = try Self.benchStore(in: folder)
        let db = try Connection.open(path: url.path, mode: .readOnly)
        let condition = InvariantQueries.badZOpt(table: "ZNOTE")
        let screen = RowScreen([condition], agreementTables: Deferred(["ZNOTE"]))
        #expect(screen.reads("ZNOTE"))
        #expect(!screen.reads("ZTAG"), "no condition about its rows: nothing to share")
        let side = try #require(screen.tableSide("ZNOTE", on: db))
        #expect(IndexAgreement.holds(db, table: "ZNOTE", read: side))
        #expect(try screen.count(condition, on: db) == db.scalar("SELECT count(*) FROM (\(condition.rows))").int)
        // Without the table among those the -wal changed, the scan counts and reads no side.
        let plain = RowScreen([condition], agreementTables: Deferred(nil))
        #expect(plain.tableSide("ZNOTE", on: db) == nil)
        #expect(try plain.count(condition, on: db) == screen.count(condition, on: db))
    }
}
