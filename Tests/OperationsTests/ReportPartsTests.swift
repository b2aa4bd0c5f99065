import Acquisition
import Foundation
@testable import Operations
import Reports
import SQLiteAccess
import StoreBuilder
import StoreTestSupport
import Testing

/// `report` reads a store's parts on two threads, counting as if the checks' exact comparison of
/// the tables the `-wal` changed will prove them sound, and counting again where it does not
/// (`StoreReportReader.parallel`). Its sections must be exactly those of the plain sequence, on
/// sound stores and on the ones where the two comparisons matter: a `-wal` copied after a
/// checkpoint the main file missed, with the indexes behind the table (SQLite's structural check
/// passes) and with pages the main file does not have (it fails).
@Suite("report's parts read at once give the answers of one after another")
struct ReportPartsTests {
    /// A store of the bench corpus's shape (notes, subentity, folders, tags many-to-many, history)
    /// with an uncheckpointed `-wal`.
    static func benchStore(in folder: TemporaryFolder) throws -> URL {
        let url = folder.path("bench/default.store")
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try BenchCorpus.write(to: url, rows: 1500, batch: 15, walShare: 0.3)
        return url
    }

    /// A plain SQLite database with an uncheckpointed `-wal` (not Core Data: no checks, no history).
    static func plainStore(in folder: TemporaryFolder) throws -> URL {
        let url = folder.path("plain/cache.sqlite")
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        let db = try Connection.open(path: url.path, mode: .create)
        try db.set(.noCheckpointOnClose, true)
        try db.execute("PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0")
        try db.execute("CREATE TABLE item(id INTEGER PRIMARY KEY, name TEXT); CREATE INDEX item_name ON item(name)")
        try db.execute("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 500) INSERT INTO item SELECT i, 'item ' || i FROM n")
        try db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        try db.execute("INSERT INTO item VALUES (1000, 'late')")
        return url
    }

    /// One store read into its section, as `report` reads it, and rendered alone.
    static func report(_ store: URL, parallel: Bool) throws -> (html: String, section: ReportDocument.StoreSection) {
        let session = try EvidenceSession()
        defer { session.scratch.remove() }
        let acquired = try #require(try session.stores(from: [store.path]).first)
        var reader = StoreReportReader(describe: { "\($0)" })
        reader.parallel = parallel
        var section = ReportDocument.StoreSection(path: acquired.displayPath, found: acquired.found)
        var plan = ReportDocument.RepairPlan(steps: [])
        var notes: [String] = []
        reader.read(acquired, into: &section, plan: &plan, planNotes: &notes, stage: { _ in })
        try session.finish()
        var document = ReportDocument(inputs: [store.path], commandLine: "storelens report", toolVersion: "test",
                                      generatedAt: Date(timeIntervalSinceReferenceDate: 0))
        document.stores = [section]
        document.repairPlan = plan.steps.isEmpty ? nil : plan
        document.repairPlanNote = notes.isEmpty ? nil : notes.joined(separator: " ")
        return (HTMLReport.render(document), section)
    }

    static func sameReport(_ store: URL) throws -> ReportDocument.StoreSection {
        let sequential = try report(store, parallel: false)
        let parallel = try report(store, parallel: true)
        #expect(parallel.section.inspection?.notes == sequential.section.inspection?.notes, "\(store.path): the counts' notes")
        #expect(parallel.section.findings.map(\.id) == sequential.section.findings.map(\.id), "\(store.path): the findings")
        #expect(parallel.section.problems == sequential.section.problems, "\(store.path): the problems")
        #expect(parallel.html == sequential.html, "\(store.path): the report differs")
        return parallel.section
    }

    static let belongs = "the -wal does not belong to this main file"

    @Test("a sound store with a -wal: the same report, and no note")
    func soundStore() throws {
        let folder = try TemporaryFolder("report-parts")
        let section = try Self.sameReport(try Self.benchStore(in: folder))
        #expect(section.inspection?.notes.contains { $0.contains(Self.belongs) } == false)
        #expect(section.findings.isEmpty, "\(section.findings.map(\.id))")
        #expect(section.timeline != nil && !section.entityWriters.isEmpty, "history was read")
    }

    @Test("a -wal copied late whose rows the indexes do not hold: the exact comparison finds it, the counts still carry the quick one's note")
    func lateWALIndexesBehind() throws {
        let folder = try TemporaryFolder("report-parts")
        let pulled = try LateWAL.pull(from: try Self.benchStore(in: folder), in: folder, before: 40, after: 3)
        let section = try Self.sameReport(pulled)
        #expect(section.findings.contains { $0.id == "wal-mismatch" }, "\(section.findings.map(\.id))")
        #expect(section.inspection?.notes.contains { $0.contains(Self.belongs) } == true, "\(section.inspection?.notes ?? [])")
    }

    @Test("a -wal copied late with pages the main file lacks: SQLite's own check fails, the same report")
    func lateWALStructure() throws {
        let folder = try TemporaryFolder("report-parts")
        let pulled = try LateWAL.pull(from: try Self.benchStore(in: folder), in: folder, before: 600, after: 300)
        let section = try Self.sameReport(pulled)
        #expect(section.findings.contains { $0.id == "sqlite-integrity" || $0.id == "check-not-run" }, "\(section.findings.map(\.id))")
    }

    @Test("a -wal copied late that only adds rows the main file's pages can take: the same report")
    func lateWALSmall() throws {
        let folder = try TemporaryFolder("report-parts")
        _ = try Self.sameReport(try LateWAL.pull(from: try Self.benchStore(in: folder), in: folder, before: 2, after: 2))
    }

    @Test("plain SQLite with a -wal: no checks or history on either path, the same report")
    func plainSQLite() throws {
        let folder = try TemporaryFolder("report-parts")
        let section = try Self.sameReport(try Self.plainStore(in: folder))
        #expect(section.findings.map(\.id).contains("not-core-data"))
    }
}
