import Foundation
import SQLiteAccess
import StoreBuilder
import StoreTestSupport
import Testing

/// A `-wal` copied after a checkpoint the main file missed, made the way it arises: an app (here
/// the store builder's open connection) writes, `cp default.store*` copies the main file, the app
/// checkpoints and writes more, and only then is the `-wal` copied. Every frame of that WAL is
/// valid; SQLite applies it without a word and shows an inconsistent store.
@Suite("a -wal copied at another moment")
struct LateWALTests {
    /// SQLite's own integrity_check on a copy of the pulled family, and on a copy of its main file alone.
    static func sqliteIntegrity(_ pulled: LateWAL.Pulled) throws -> (withWAL: [String], mainAlone: [String]) {
        let scratch = pulled.root.path("sqlite-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        for suffix in ["", "-wal"] {
            try FileManager.default.copyItem(at: URL(fileURLWithPath: pulled.store.path + suffix), to: scratch.appendingPathComponent("with.store" + suffix))
        }
        try FileManager.default.copyItem(at: pulled.store, to: scratch.appendingPathComponent("alone.store"))
        func check(_ name: String) -> [String] {
            guard let c = try? Connection.open(path: scratch.appendingPathComponent(name).path, mode: .readWrite) else { return ["cannot open"] }
            var rows: [String] = []
            do {
                let statement = try c.prepare("PRAGMA integrity_check")
                while let row = try statement.step() { rows.append(row[0].string ?? "") }
            } catch {
                rows.append("error: \(error.message)")
            }
            return rows
        }
        return (check("with.store"), check("alone.store"))
    }

    struct CheckOutput: Decodable {
        struct Finding: Decodable { let id: String; let severity: String; let message: String }
        let findings: [Finding]
    }

    @Test("a -wal whose frames rewrite a row after a missed checkpoint: wal, inspect, check and report say the pair does not match")
    func rowsMissingFromIndex() throws {
        let pulled = try LateWAL.pulledTodo(.update)
        let truth = try Self.sqliteIntegrity(pulled)
        #expect(truth.withWAL != ["ok"], "SQLite's integrity_check with the -wal applied: \(truth.withWAL)")
        #expect(truth.mainAlone == ["ok"])
        let before = try FolderSnapshot(pulled.store.deletingLastPathComponent())

        let wal = try CLI.run(["wal", pulled.store.path])
        #expect(wal.stdout.contains("wal-may-not-belong"), "\(wal.stdout)")
        #expect(wal.stdout.contains("copied at different moments"))

        let inspect = try CLI.run(["inspect", pulled.store.path])
        #expect(inspect.status == 0, "\(inspect.stderr)")
        #expect(inspect.stdout.contains("the -wal does not belong to this main file, or the two were copied at different moments"))

        let check = try CLI.run(["check", pulled.store.path, "--format", "json"])
        #expect(check.status == 1, "\(check.stderr)")
        let findings = try JSONDecoder().decode(CheckOutput.self, from: Data(check.stdout.utf8)).findings
        #expect(findings.contains { $0.id == "wal-mismatch" && $0.severity == "error" }, "\(check.stdout)")
        let integrity = try #require(findings.first { $0.id == "sqlite-integrity" })
        // The same number of problems SQLite's own full check reports (its rows are for every table).
        #expect(integrity.message.contains("reports \(truth.withWAL.count) problem"), "\(integrity.message) vs \(truth.withWAL)")

        let html = pulled.root.path("report.html")
        let report = try CLI.run(["report", "--out", html.path, pulled.store.path])
        #expect(report.status == 1, "\(report.stderr)")
        let text = try String(contentsOf: html, encoding: .utf8)
        #expect(!text.contains("No findings"))
        #expect(text.contains("wal-mismatch"))
        #expect(try FolderSnapshot(pulled.store.deletingLastPathComponent()) == before, "the evidence stays byte-identical")
    }

    @Test("a -wal whose frames point at pages the copied main file does not have: check reports findings instead of failing, report does not pass")
    func pagesTheMainFileLacks() throws {
        let pulled = try LateWAL.pulledTodo(.insert)
        let truth = try Self.sqliteIntegrity(pulled)
        #expect(truth.withWAL != ["ok"], "SQLite's integrity_check with the -wal applied: \(truth.withWAL)")
        #expect(truth.mainAlone == ["ok"])

        let check = try CLI.run(["check", pulled.store.path, "--format", "json"])
        #expect(check.status == 1, "not an internal error: \(check.stderr)")
        #expect(!check.stderr.contains("internal error"))
        let findings = try JSONDecoder().decode(CheckOutput.self, from: Data(check.stdout.utf8)).findings
        #expect(findings.contains { $0.id == "wal-mismatch" })
        #expect(findings.contains { $0.id == "sqlite-integrity" })

        let inspect = try CLI.run(["inspect", pulled.store.path])
        if inspect.status != 0 {
            #expect(inspect.status == 2)
            #expect(inspect.stderr.contains("the -wal does not belong to this main file"), "\(inspect.stderr)")
        } else {
            #expect(inspect.stdout.contains("the -wal does not belong to this main file"), "\(inspect.stdout)")
        }

        let wal = try CLI.run(["wal", pulled.store.path])
        #expect(wal.stdout.contains("wal-may-not-belong"), "\(wal.stdout)")

        let report = try CLI.run(["report", "--out", "-", pulled.store.path])
        #expect(report.status != 0)
        #expect(!report.stdout.contains("<p>No findings.</p>"))
    }
}
