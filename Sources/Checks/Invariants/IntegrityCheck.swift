import Acquisition
import CoreDataStore
import Findings
import Foundation
import SQLiteAccess
import StoreFormats

extension StoreChecker {
    func integrity() throws -> [Finding] {
        let outcome = try integrityOutcome()
        integrityRecord?.walTablesSound = outcome.walTablesSound
        return outcome.findings
    }

    func integrityOutcome() throws -> (findings: [Finding], walTablesSound: Bool) {
        // Row by row: a check that meets a malformed page still reports what it found before it.
        var result = WALAgreement.integrity(connection, full: full, maxErrors: limit)
        var changed: [String] = []
        var mainOnly: Connection?
        if result == ["ok"], !full, let mainFileOnly, let main = try? mainFileOnly() {
            // quick_check does not compare an index with its table: check the tables the WAL
            // changed in full, which is what a -wal copied after a missed checkpoint breaks
            // (`--full`'s integrity_check has compared them all already).
            mainOnly = main
            changed = walChangedTables?.wrappedValue ?? WALAgreement.changedTables(walView: connection, mainOnly: main)
            let limit = self.limit
            let screen = self.screen
            let connection = self.connection
            // Rows (the largest rowid, found by one seek) times the b-trees still to read: the
            // indexes, and the table itself unless the row screen reads it.
            let cost = { (table: String) -> Int in
                let rows = (try? connection.scalar("SELECT max(rowid) FROM \(Identifier.quoted(table))").int) ?? 0
                let indexes = (try? connection.scalar("SELECT count(*) FROM pragma_index_list(?)", [.text(table)]).int) ?? 0
                return max(rows, 0).multipliedReportingOverflow(by: indexes + (screen?.reads(table) ?? false ? 0 : 1)).partialValue
            }
            result = TableWork.each(changed, on: connection, second: secondConnection, cost: cost) { connection, table in
                // A table the row screen scans for the other checks is read once for both.
                let read = screen?.tableSide(table, on: connection)
                return WALAgreement.tableIntegrity(connection, table: table, structureChecked: true, maxErrors: limit, read: read)
            }.flatMap { $0 }.filter { $0 != "ok" }
            if result.isEmpty { return ([], true) }
        }
        guard result != ["ok"] else { return ([], false) }
        var findings: [Finding] = []
        if let main = try mainOnly ?? mainFileOnly?(),
           let disagreement = WALAgreement.compare(walView: connection, mainOnly: main, tables: changed, full: full, walViewProblems: result) {
            findings.append(finding(.walMismatch, .error, entity: nil,
                                    "The -wal does not belong to this main file, or the two were copied at different moments: with the -wal applied SQLite's integrity check fails while the main file alone passes it.",
                                    evidence: ["walViewProblems": .list(disagreement.walView.map(EvidenceValue.string)),
                                               "tables": .list(changed.map(EvidenceValue.string))],
                                    explanation: "Its frames were written against another state of the main file (the commonest way: `cp default.store*` while the app runs, the app checkpointing between the main file and the -wal). SQLite applies such a -wal without an error and shows rows the indexes and Z_MAX do not know; the other findings may come from the mismatch, not from the app.",
                                    suggestion: "Copy the main file, -wal and -shm again at one moment (quit the app first, or copy the whole container); the main file alone (`storelens inspect --as-of 0`) is a consistent older state."))
        }
        findings.append(finding(.sqliteIntegrity, .error, entity: nil,
                                "SQLite's \(full || !changed.isEmpty ? "integrity_check" : "quick_check") reports \(plural(result.count, "problem"))\(changed.isEmpty ? "" : " in the tables the -wal changed (\(changed.joined(separator: ", ")))").",
                                evidence: ["problems": .list(result.map(EvidenceValue.string))],
                                explanation: findings.isEmpty ? "The database file itself is damaged; Core Data may crash or lose rows reading it."
                                                              : "The image SQLite builds from the main file and the -wal is inconsistent; Core Data may crash or lose rows reading it.",
                                suggestion: "Copy the store off the device again; if the damage is in the device's copy, recover rows with `storelens wal --as-of` or a SQLite recovery tool on a copy."))
        return (findings, false)
    }

    /// A check SQLite could not finish: reported, so a store that could not be checked is never
    /// mistaken for a clean one.
    func notRun(_ task: Task, _ error: SQLiteError) -> Finding {
        finding(.checkNotRun, .error, entity: nil,
                "The check of \(task.name) (\(task.checks.map(\.rawValue).joined(separator: ", "))) could not run: SQLite says \(error.message).",
                evidence: ["checks": .list(task.checks.map { .string($0.rawValue) })],
                explanation: "SQLite met a page it cannot read while running this check, so nothing is known about what it checks.",
                suggestion: "See the sqlite-integrity and wal-mismatch findings; copy the store off the device again.")
    }
}
