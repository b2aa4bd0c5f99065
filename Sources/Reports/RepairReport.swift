import Findings
import Foundation
import Repair
import StoreFormats

/// The views of `repair`: the plan, what was applied, and the proof.
public enum RepairReport {
    /// Version of the JSON layout; bumped only on incompatible changes.
    public static let schemaVersion = 1

    public static func json(_ o: RepairOutcome, inputHashes: [(String, String?)]) -> JSONValue {
        JSONDocument.make(schemaVersion: schemaVersion, [
            ("input", .string(o.input)),
            ("inputHashes", .object(inputHashes.map { ($0.0, .optional($0.1)) })),
            ("plan", plan(o.plan, changes: o.written ? o.changes : nil)),
            ("written", .bool(o.written)),
            ("output", .optional(o.output)),
            ("outputSHA256", .optional(o.outputSHA256)),
            ("tables", .array(o.tablesBefore.keys.sorted().map { t in
                .object([("table", .string(t)), ("before", .optional(o.tablesBefore[t])), ("after", .optional(o.tablesAfter[t])),
                         ("touched", .bool(o.plan.touchedTables.contains(t)))])
            })),
            ("findingsBefore", .array(o.findings.map(FindingsReport.json))),
            ("findingsAfter", .array((o.written ? o.remaining : []).map(FindingsReport.json))),
        ])
    }

    public static func plan(_ p: RepairPlan, changes: [Int]?) -> JSONValue {
        .object([
            ("actions", .array(p.actions.enumerated().map { i, a in
                .object([("action", .string(a.name)), ("answers", .string(a.answers)), ("entity", .optional(a.entity)),
                         ("tables", .array(a.tables.map(JSONValue.string))), ("summary", .string(a.summary)),
                         ("affected", .array(a.affected.map(JSONValue.string))), ("count", .int(a.count)),
                         ("rowsChanged", .optional(changes.flatMap { i < $0.count ? $0[i] : nil }))])
            })),
            ("notRepaired", .array(p.unrepaired.map { .object([("id", .string($0.id)), ("entity", .optional($0.entity)), ("message", .string($0.message))]) })),
            ("notes", .array(p.notes.map(JSONValue.string))),
            ("derivedNotRecomputed", .array(p.derivedNotRecomputed.map(JSONValue.string))),
        ])
    }

    public static func text(_ o: RepairOutcome, planOnly: Bool) -> String {
        var out = "\(TextTable.sanitized(o.input))\n"
        if o.plan.isEmpty {
            out += o.findings.isEmpty ? "  nothing to repair: every check passes\n" : "  no automatic repair for these findings:\n"
        } else {
            out += "  plan (\(plural(o.plan.actions.count, "action")), one transaction):\n"
            for (i, a) in o.plan.actions.enumerated() {
                out += "  \(i + 1). \(a.name) [answers \(a.answers)]: \(TextTable.sanitized(a.summary))\n"
                out += a.affected.isEmpty ? "     affects \(a.count)\n" : "     affects \(a.count): \(a.affected.joined(separator: ", "))\(a.count > a.affected.count ? ", …" : "")\n"
                if o.written, i < o.changes.count { out += "     changed \(plural(o.changes[i], "row"))\n" }
            }
        }
        if !o.plan.derivedNotRecomputed.isEmpty {
            out += "  triggers off: the store's Z_DA_ triggers call functions only Core Data registers, so the repair writes with them off;\n"
            out += "  these derived values are left as they are and the app recomputes them when it next saves the rows:\n"
            for d in o.plan.derivedNotRecomputed { out += "     \(TextTable.sanitized(d))\n" }
        }
        for f in o.plan.unrepaired {
            out += "  not repaired: \(f.id)\(f.entity.map { " [\(TextTable.sanitized($0))]" } ?? ""): \(TextTable.sanitized(f.message))\n"
        }
        for note in o.plan.notes { out += "  note: \(TextTable.sanitized(note))\n" }
        if planOnly {
            out += "  (--plan: nothing was written)\n"
        } else if o.written, let output = o.output {
            let untouched = o.tablesBefore.keys.filter { !o.plan.touchedTables.contains($0) }.count
            out += "  verified: every check ran again on the output; the \(plural(o.plan.answered.count, "repaired check")) pass, \(plural(untouched, "untouched table")) hash the same as before, no table lost a row no action deletes, and no reference to a row that exists was removed\n"
            out += "  wrote \(TextTable.sanitized(output)) (SHA-256 \(o.outputSHA256 ?? "?"))\n"
        }
        return out
    }
}
