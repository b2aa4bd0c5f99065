import Acquisition
import Coexistence
import Findings
import Foundation
import Operations
import SQLiteAccess
import StoreBuilder
import StoreTestSupport
import Testing

/// The report is the operations put together: every finding `check` gives, and (with `--lint`)
/// every finding `lint` gives, is in the report, and the report holds no finding that neither
/// they nor the WAL analysis (`wal`) give. Run on the demo, a bench-shaped store, a damaged
/// archive read as asked, a store whose `-wal` has the wrong page size, and every genuine store.
@Suite("report's findings are check's, lint's and wal's")
struct ReportAgreementTests {
    /// What makes two findings the same one, whichever command gave it.
    struct Key: Hashable, CustomStringConvertible {
        let id: String, severity: String, store: String?, entity: String?, message: String
        init(_ f: Finding) { id = f.id; severity = f.severity.rawValue; store = f.store; entity = f.entity; message = f.message }
        var description: String { "\(id) [\(severity)] \(store ?? "-") \(entity ?? "-"): \(message.prefix(80))" }
    }

    /// The differences, one line each (empty when they agree).
    static func differences(_ inputs: [String], input: Storelens.InputOptions = .init()) throws -> [String] {
        let report = try Storelens.report(inputs, .init(input: input, lint: true, toolVersion: "test"))
        let check = try Storelens.check(inputs, .init(input: input))
        // lint and wal read the store as check does where it has a -wal that cannot belong.
        var leavingOut = input
        leavingOut.open.ignoreMismatchedWAL = true
        let lint = try Storelens.lint(inputs, .init(input: leavingOut))
        let wal = try Storelens.wal(inputs, .init(input: leavingOut))
        let reported = Set(report.findings.map(Key.init))
        let fromCheck = Set(check.findings.map(Key.init)), fromLint = Set(lint.findings.map(Key.init))
        let fromWAL = Set(wal.flatMap(\.findings).map(Key.init))
        var out: [String] = []
        for key in fromCheck.subtracting(reported) { out.append("check gives, report does not: \(key)") }
        for key in fromLint.subtracting(reported) { out.append("lint gives, report does not: \(key)") }
        for key in reported.subtracting(fromCheck).subtracting(fromLint).subtracting(fromWAL) { out.append("report alone gives: \(key)") }
        return out.sorted()
    }

    @Test("the demo container and a bench-shaped store")
    func builderStores() throws {
        let folder = try TemporaryFolder("report-agreement")
        _ = try SampleStores.demo(in: folder)
        #expect(try Self.differences([folder.url.path]) == [])
        let bench = folder.path("bench/default.store")
        try FileManager.default.createDirectory(at: bench.deletingLastPathComponent(), withIntermediateDirectories: true)
        try BenchCorpus.write(to: bench, rows: 1500, batch: 15, walShare: 0.3)
        #expect(try Self.differences([bench.path]) == [])
    }

    /// With the demo's manifest: every finding of `audit` is the report's, and the report gives
    /// none that `audit`, `check` or `wal` does not.
    @Test("the demo audited against its manifest")
    func audit() throws {
        let folder = try TemporaryFolder("report-agreement-audit")
        _ = try SampleStores.demo(in: folder)
        let manifest = try Manifest.parse(DemoContainer.manifest, path: "demo.storelens.json")
        let inputs = [folder.url.path]
        let report = try Storelens.report(inputs, .init(manifest: manifest, toolVersion: "test"))
        let audit = try Storelens.audit(inputs, manifest: manifest)
        let check = try Storelens.check(inputs)
        let wal = try Storelens.wal(inputs)
        #expect(!audit.findings.isEmpty, "the demo has planted findings")
        let reported = Set(report.findings.map(Key.init)), fromAudit = Set(audit.findings.map(Key.init))
        #expect(fromAudit.subtracting(reported).isEmpty, "audit gives, report does not: \(fromAudit.subtracting(reported))")
        let alone = reported.subtracting(fromAudit).subtracting(check.findings.map(Key.init)).subtracting(wal.flatMap(\.findings).map(Key.init))
        #expect(alone.isEmpty, "report alone gives: \(alone)")
    }

    /// The demo as a .tar.gz whose gzip trailer is wrong, read as asked (`--read-damaged`):
    /// check's `archive-damaged` must be the report's too.
    @Test("a damaged archive read as asked", .enabled(if: GzipDecoder.available.contains(.isal), "ISA-L is not built in; libarchive's gzip filter does not check the trailer"))
    func damagedArchive() throws {
        let folder = try TemporaryFolder("report-agreement-archive")
        try DemoContainer.write(into: folder.path("tree"))
        let tar = folder.path("c.tar")
        try ArchiveMaker.write(try ArchiveMaker.entries(of: folder.path("tree"), prefix: "AppData"), to: tar, format: .paxTar)
        var gz = [UInt8](try ArchiveMaker.gzip(try Data(contentsOf: tar)))
        gz[gz.count - 8] ^= 0xFF
        let archive = folder.path("damaged.tar.gz")
        try Data(gz).write(to: archive)
        var input = Storelens.InputOptions()
        input.limits.readDamaged = true
        #expect(try Storelens.check([archive.path], .init(input: input)).findings.contains { $0.id == "archive-damaged" })
        let differences = try Self.differences([archive.path], input: input)
        #expect(differences == [], "\(differences)")
    }

    /// A -wal of 1024-byte pages beside a store of 4096-byte pages: `check` leaves it out and says
    /// so (`wal-page-size-mismatch`); the report must read the store the same way, not refuse it.
    @Test("a -wal whose page size is not the store's")
    func mismatchedWAL() throws {
        let folder = try TemporaryFolder("report-agreement-wal")
        let store = try SampleStores.todo(in: folder.url, journal: .wal)
        let other = folder.path("other/small.sqlite")
        try FileManager.default.createDirectory(at: other.deletingLastPathComponent(), withIntermediateDirectories: true)
        do {
            let db = try Connection.open(path: other.path, mode: .create)
            try db.set(.noCheckpointOnClose, true)
            try db.execute("PRAGMA page_size = 1024; PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0; CREATE TABLE t(x); INSERT INTO t VALUES (1)")
            try? FileManager.default.removeItem(atPath: store.path + "-wal")
            try FileManager.default.copyItem(atPath: other.path + "-wal", toPath: store.path + "-wal")
        }
        #expect(try Storelens.check([store.path]).findings.contains { $0.id == "wal-page-size-mismatch" })
        let differences = try Self.differences([store.path])
        #expect(differences == [], "\(differences)")
    }

    @Test("every genuine store", .enabled(if: ProjectPaths.hasRealFixtures, Comment(rawValue: ProjectPaths.realFixturesMissing)),
          arguments: ProjectPaths.realFixtureFolders())
    func genuineStores(_ folder: String) throws {
        let root = try #require(ProjectPaths.realFixtures()).appendingPathComponent(folder)
        let store = try #require(try ProjectPaths.realStoreFile(in: root))
        #expect(try Self.differences([store.path]) == [])
    }
}
