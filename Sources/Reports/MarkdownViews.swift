import Acquisition
import CoreDataStore
import Findings
import Foundation
import Operations
import WALForensics

// Markdown views sized for a support ticket: a heading, the few facts that matter, short tables
// (capped, with the total), and every string from a device escaped by `Markdown.escape`/`code`.

extension InspectionReport {
    /// Entities listed per store before the table is cut (the count is always given).
    public static let markdownEntityLimit = 50

    public static func markdown(_ inspections: [StoreInspection]) -> String {
        var out = ""
        for s in inspections {
            out += "## storelens inspect of `\(Markdown.code(s.path))`\n\n"
            if s.format == .coreData {
                let stack = ["swiftdata": "SwiftData", "coredata": "Core Data (Xcode model)", "unknown": "undetermined"][s.stack.stack.rawValue] ?? ""
                out += "- **format:** Core Data store, \(s.journalMode) journal, \(s.pageSize)-byte pages, \(s.sizeBytes) bytes\n"
                out += "- **written by:** \(stack) (most likely)\n"
                for line in s.stack.evidence { out += "  - \(Markdown.escape(line))\n" }
            } else {
                out += "- **format:** SQLite database (not Core Data), \(s.journalMode) journal, \(s.sizeBytes) bytes\n"
            }
            if let m = s.metadata {
                out += "- **store UUID:** `\(Markdown.code(m.uuid ?? "(none)"))`, framework \(m.frameworkVersion.map(String.init) ?? "?"), "
                out += "model versions \(m.modelVersionIdentifiers.map { "`\(Markdown.code($0))`" }.joined(separator: ", "))\n"
            }
            let w = s.wal
            out += w.present
                ? "- **WAL:** \(w.validFrames) of \(w.frames) frames valid, \(w.commits) commits, last commit at frame \(w.lastCommitFrame)\n"
                : "- **WAL:** none\n"
            if let h = s.history, h.present {
                out += "- **history:** \(h.transactions) transactions, \(h.changes) changes\n"
            } else if s.format == .coreData {
                out += "- **history:** not tracked\n"
            }
            for note in s.notes { out += "- **note:** \(Markdown.escape(note))\n" }
            out += "\n"
            if !s.entities.isEmpty {
                out += "| Z_ENT | entity | main file | with WAL | max PK | Z_MAX |\n|---:|---|---:|---:|---:|---:|\n"
                for e in s.entities.prefix(markdownEntityLimit) {
                    out += "| \(e.entity.number) | \(Markdown.escape(e.entity.name)) | \(e.counts.rowsMainFileOnly.map(String.init) ?? "-") | "
                    out += "\(e.counts.rows) | \(e.counts.maxPK.map(String.init) ?? "-") | \(e.entity.zMax.map(String.init) ?? "-") |\n"
                }
                if s.entities.count > markdownEntityLimit {
                    out += "\n_Showing first \(markdownEntityLimit) of \(s.entities.count) entities; `--format json` lists them all._\n"
                }
                out += "\n"
            }
            if !s.tables.isEmpty {
                out += "| table | main file | with WAL |\n|---|---:|---:|\n"
                for t in s.tables.prefix(markdownEntityLimit) {
                    out += "| \(Markdown.escape(t.name)) | \(t.rowsMainFileOnly.map(String.init) ?? "-") | \(t.rows) |\n"
                }
                if s.tables.count > markdownEntityLimit {
                    out += "\n_Showing first \(markdownEntityLimit) of \(s.tables.count) tables; `--format json` lists them all._\n"
                }
                out += "\n"
            }
        }
        return out
    }
}

extension ScanReport {
    public static let markdownStoreLimit = 100

    public static func markdown(inventories: [Inventory], stores: [ScannedStore]) -> String {
        var out = "## storelens scan of \(inventories.map { "`\(Markdown.code($0.input))`" }.joined(separator: ", "))\n\n"
        for inv in inventories {
            out += "- `\(Markdown.code(inv.input))`: \(inv.kind.rawValue)"
            if let sha = inv.inputSHA256 { out += ", SHA-256 `\(sha)`" }
            if let target = inv.linkTarget { out += ", a symbolic link to `\(Markdown.code(target))` (followed: given on the command line)" }
            out += "\n"
            if let damage = inv.damage { out += "  - **damaged:** \(Markdown.escape(damage))\n" }
            for warning in inv.warnings where warning != inv.damage { out += "  - warning: \(Markdown.escape(warning))\n" }
        }
        out += "\n"
        if stores.isEmpty {
            out += "No SQLite stores found.\n"
            return out
        }
        out += "| store | format | stack | bytes | sidecars | container |\n|---|---|---|---:|---|---|\n"
        for s in stores.prefix(markdownStoreLimit) {
            let f = s.found
            var sidecars = [f.sidecars.wal.map { _ in "wal" }, f.sidecars.shm.map { _ in "shm" }, f.sidecars.journal.map { _ in "journal" }].compactMap { $0 }
            if let external = ScanReport.externalLabel(s) { sidecars.append(external) }
            out += "| `\(Markdown.codeCell(f.path))` | \(s.formatName ?? "?") | \(s.stack?.rawValue ?? "-") | \(f.size) | "
            out += "\(sidecars.isEmpty ? "-" : sidecars.joined(separator: ", ")) | \(Markdown.escape(f.container.map { $0.identifier ?? $0.kind.rawValue } ?? "-")) |\n"
        }
        if stores.count > markdownStoreLimit {
            out += "\n_Showing first \(markdownStoreLimit) of \(stores.count) stores; `--format json` lists them all._\n"
        }
        let problems = stores.filter { $0.problem != nil }
        if !problems.isEmpty {
            out += "\n"
            for s in problems { out += "- `\(Markdown.code(s.found.path))`: \(Markdown.escape(s.problem ?? ""))\n" }
        }
        let orphans = inventories.flatMap(\.orphans)
        if !orphans.isEmpty {
            out += "\n**Orphan sidecars** (their database is missing):\n\n"
            for o in orphans.prefix(markdownStoreLimit) { out += "- `\(Markdown.code(o.path))` (\(o.kind), \(o.size) bytes)\n" }
        }
        return out
    }
}

extension WALReport {
    public static let markdownTransactionLimit = 50

    public static func markdown(_ analyses: [WALAnalysis]) -> String {
        var out = ""
        for a in analyses {
            out += "## storelens wal of `\(Markdown.code(a.displayPath))`\n\n"
            if let w = a.wal {
                out += "- **frames:** \(w.validFrames) of \(w.frames) valid (\(w.fileBytes) bytes), \(w.commits) commits, last commit at frame \(w.lastCommitFrame)\n"
                if w.uncommittedFrames > 0 { out += "- **uncommitted:** \(w.uncommittedFrames) frames after the last commit (SQLite ignores them)\n" }
                if w.staleFrames > 0 { out += "- **stale:** \(w.staleFrames) frames of an earlier WAL generation\n" }
                if let reason = w.stopReason { out += "- **stopped:** \(Markdown.escape(reason))\n" }
            } else {
                out += "- **WAL:** none\n"
            }
            if let s = a.shm {
                out += "- **-shm:** \(s.valid ? (s.agreesWithWal ? "valid, agrees with the WAL" : "valid, but stale (does not agree with the WAL)") : "not valid")\n"
            }
            out += "\n"
            if a.findings.isEmpty {
                out += "No warnings.\n\n"
            } else {
                out += "| severity | finding | what |\n|---|---|---|\n"
                for f in a.findings {
                    out += "| \(f.severity.rawValue) | `\(Markdown.codeCell(f.id))` | \(Markdown.escape(f.message)) |\n"
                }
                out += "\n"
            }
            if !a.transactions.isEmpty {
                out += "| commit | frames | pages | entities (tables) written |\n|---:|---|---:|---|\n"
                for t in a.transactions.prefix(markdownTransactionLimit) {
                    out += "| \(t.number) | \(t.firstFrame)–\(t.commitFrame) | \(t.pages.count) | "
                    out += Markdown.escape((t.entities.isEmpty ? t.tables : t.entities).joined(separator: ", ")) + " |\n"
                }
                if a.transactions.count > markdownTransactionLimit {
                    out += "\n_Showing first \(markdownTransactionLimit) of \(a.transactions.count) transactions; `--format json` lists them all._\n"
                }
                out += "\n"
            }
        }
        return out
    }
}
