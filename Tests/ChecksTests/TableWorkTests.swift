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
}
