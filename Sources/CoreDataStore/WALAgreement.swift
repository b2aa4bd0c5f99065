import Foundation
import SQLiteAccess

/// Whether a store's `-wal` belongs to its main file, as SQLite itself sees it.
///
/// The commonest mismatched pair is made by `cp default.store*` while the app runs: the main
/// file is copied, the app checkpoints (the main file on the device moves on, the WAL starts
/// again) and writes more, then the `-wal` is copied. Every frame of that WAL is valid, but its
/// pages were written against a main file the copy never saw: a table's leaf holds rows its
/// index does not, or an interior page points at pages the copied main file does not have.
/// SQLite applies such a WAL without a word; only its integrity check notices. When the WAL
/// view fails the check and the main file alone passes it, the WAL is the odd one out.
public enum WALAgreement {
    /// What SQLite's check says about the two views of one store.
    public struct Disagreement: Equatable, Sendable, CustomStringConvertible {
        /// The WAL view's complaints (at most `maxErrors`), and why the check stopped, if it did.
        public let walView: [String]
        /// The tables checked (empty: the whole database).
        public let tables: [String]

        public var description: String {
            "the -wal does not belong to this main file, or the two were copied at different moments (for example the main file before a checkpoint and the -wal after it): with the -wal applied SQLite's integrity check fails (\(walView.prefix(3).joined(separator: "; "))) while the main file alone passes it"
        }
    }

    /// SQLite's check, row by row: a check that meets a page it cannot even parse returns the
    /// problems found before it and then fails with SQLITE_CORRUPT; both are kept.
    ///
    /// - Parameter table: check only this table and its indexes (`PRAGMA integrity_check(T)`).
    /// - Returns: the problems (`["ok"]` when there are none); a check that cannot start at all
    ///   returns SQLite's error as its one problem.
    public static func integrity(_ connection: Connection, full: Bool, table: String? = nil, maxErrors: Int = 20) -> [String] {
        let pragma = full ? "integrity_check" : "quick_check"
        let argument = table.map { Identifier.quoted($0) } ?? String(max(1, maxErrors))
        var problems: [String] = []
        do {
            let statement = try connection.prepare("PRAGMA \(pragma)(\(argument))")
            while let row = try statement.step() {
                // quick_check puts several problems in one row, one per line.
                for line in (row[0].string ?? "").split(whereSeparator: \.isNewline) where !line.hasPrefix("*** in database") {
                    problems.append(String(line))
                }
            }
        } catch {
            problems.append("SQLite stopped: \(error.message)")
        }
        if problems.count > maxErrors { problems = Array(problems.prefix(maxErrors)) + ["\(problems.count - maxErrors) more"] }
        return problems.isEmpty ? ["ok"] : problems
    }

    /// `PRAGMA integrity_check(table)`'s answer, found without a seek per row and index when the
    /// table is sound: SQLite's structural check of the table (`quick_check(table)`, skipped when
    /// the whole file's `quick_check` already passed), then `IndexAgreement`. Only when either
    /// finds something does SQLite's full check of the table run, so the problems returned are
    /// always SQLite's own words. `read` is the table's side of `IndexAgreement` when a scan made
    /// for other questions has read it already.
    public static func tableIntegrity(_ connection: Connection, table: String, structureChecked: Bool = false, maxErrors: Int = 20,
                                      read: IndexAgreement.TableSide? = nil) -> [String] {
        if !structureChecked, integrity(connection, full: false, table: table, maxErrors: maxErrors) != ["ok"] {
            return integrity(connection, full: true, table: table, maxErrors: maxErrors)
        }
        if IndexAgreement.holds(connection, table: table, read: read) { return ["ok"] }
        return integrity(connection, full: true, table: table, maxErrors: maxErrors)
    }

    /// Tables whose row count or largest rowid differ between the two views: the ones the WAL
    /// wrote to (a WAL that only updates rows in place is missed; the whole-file check catches
    /// the damage such a WAL does to the structure).
    public static func changedTables(walView: Connection, mainOnly: Connection) -> [String] {
        let list = "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name"
        guard let names = try? walView.rows(list).compactMap({ $0[0].string }) else { return [] }
        let mainNames = Set((try? mainOnly.rows(list).compactMap { $0[0].string }) ?? [])
        func shape(_ c: Connection, _ table: String) -> [DatabaseValue]? {
            // Two statements: alone, `max(rowid)` reads the table's own b-tree, while count(*) may
            // use a (smaller) index, and together both would come from the index.
            let quoted = Identifier.quoted(table)
            guard let count = try? c.scalar("SELECT count(*) FROM \(quoted)"), let max = try? c.scalar("SELECT max(rowid) FROM \(quoted)") else { return nil }
            return [count, max]
        }
        return names.filter { name in
            guard mainNames.contains(name) else { return false }
            guard let wal = shape(walView, name) else { return true }
            return shape(mainOnly, name) != wal
        }
    }

    /// Compares the two views: nil when the WAL view passes, or when the main file alone fails
    /// too (then the store itself is damaged, which the ordinary integrity finding says).
    ///
    /// - Parameter walView: nil when SQLite cannot open the store with the WAL applied at all.
    /// - Parameter tables: check only these tables, with the full check (a quick_check does not
    ///   compare an index with its table); empty checks the whole file with `full`.
    /// - Parameter structureChecked: the WAL view's whole-file `quick_check` has passed already.
    /// - Parameter walPages: check `tables` where the `-wal` wrote them (`WALPageAgreement`, the
    ///   quick form `inspect` and `wal` use) instead of row by row; SQLite's full check of a table
    ///   still runs wherever that finds anything.
    public static func compare(walView: Connection?, mainOnly: Connection, tables: [String] = [], full: Bool = false,
                               structureChecked: Bool = false, walPages: WALPageAgreement.Pages? = nil,
                               walViewProblems known: [String]? = nil) -> Disagreement? {
        var walProblems: [String] = []
        if let known {
            walProblems = known == ["ok"] ? [] : known
        } else if let walView {
            if tables.isEmpty {
                walProblems = integrity(walView, full: full).filter { $0 != "ok" }
            } else {
                let verdicts = walPages.map { WALPageAgreement.verdicts(walView, pages: $0, tables: tables) } ?? [:]
                for table in tables where verdicts[table] != .agrees {
                    let problems = walPages == nil ? tableIntegrity(walView, table: table, structureChecked: structureChecked)
                                                   : integrity(walView, full: true, table: table)
                    walProblems += problems.filter { $0 != "ok" }
                }
            }
        } else {
            walProblems = ["SQLite cannot read the store with the -wal applied"]
        }
        guard !walProblems.isEmpty else { return nil }
        let mainProblems = tables.isEmpty || walView == nil
            ? integrity(mainOnly, full: full)
            : tables.flatMap { integrity(mainOnly, full: true, table: $0) }.filter { $0 != "ok" }
        guard mainProblems.isEmpty || mainProblems == ["ok"] else { return nil }
        return Disagreement(walView: walProblems, tables: tables)
    }
}
