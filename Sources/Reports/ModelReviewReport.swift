import CoreDataStore
import Findings
import ModelReview
import Operations
import StoreFormats

/// Text, JSON and Markdown views of `storelens migration` (a plan, hop by hop) and
/// `storelens lint` (findings about one model). The findings go through `FindingsReport`.
public enum MigrationReport: FindingsView {
    public typealias Subject = MigrationPlan

    /// At the target model's file and line when it is an Xcode model, else at the store.
    public static func located(_ plan: MigrationPlan) -> [SARIF.Located] {
        plan.findings.map { f in
            SARIF.Located(f, at: SARIF.location(of: f, declaredIn: plan.target.model.declarations) ?? f.store.map(SARIF.Location.store))
        }
    }

    /// Version of the JSON layout; bumped only on incompatible changes.
    public static let schemaVersion = 1

    static func hopTitle(_ hop: MigrationHop, plan: MigrationPlan) -> String {
        let version = hop.versionIdentifiers.filter { !$0.isEmpty }.joined(separator: ", ")
        return "hop \(hop.number): \(plural(hop.stores.count, "store")) at version \(version.isEmpty ? "-" : version) (\(hop.versionDigest)) → \(plan.target.name)"
    }

    static func verdict(_ hop: MigrationHop) -> String {
        if hop.failsOrLosesData { return "fails or loses data" }
        if hop.findings.any(atOrAbove: .warning) { return "passes on these stores, with warnings" }
        return "lightweight"
    }

    public static func text(_ plan: MigrationPlan) -> String {
        var out = "target  \(TextTable.sanitized(plan.target.name)) (\(plan.target.model.source.rawValue) model, \(plan.target.model.entities.count) entities)\n"
        for hop in plan.hops {
            out += "\n\(TextTable.sanitized(hopTitle(hop, plan: plan)))\n"
            for s in hop.stores { out += "  store  \(TextTable.sanitized(s))\n" }
            out += "  model  \(TextTable.sanitized(hop.modelOrigin))\n"
            if !hop.changes.isEmpty {
                var rows = [["CHANGE", "ENTITY", "PROPERTY", "CLASS", "SEVERITY"]]
                for f in hop.findings where f.id != "no-model-changes" {
                    rows.append([f.id, f.entity ?? "-", propertyName(f) ?? "-", f.evidence["classification"]?.text ?? "-", f.severity.rawValue])
                }
                out += "\n" + TextTable.render(rows, indent: 2)
            }
            out += "\n  verdict: \(verdict(hop))\n\n"
            out += FindingsReport.text(hop.findings)
        }
        return out
    }

    static func propertyName(_ f: Finding) -> String? {
        f.evidence["property"]?.text ?? f.evidence["properties"]?.text
    }

    public static func json(_ plan: MigrationPlan) -> JSONValue {
        JSONDocument.make(schemaVersion: schemaVersion, [
            ("target", .object([("name", .string(plan.target.name)), ("source", .string(plan.target.model.source.rawValue)),
                                ("origin", .string(plan.target.model.origin)), ("entities", .int(plan.target.model.entities.count))])),
            ("failsOrLosesData", .bool(plan.failsOrLosesData)),
            ("hops", .array(plan.hops.map { hop in
                .object([
                    ("hop", .int(hop.number)),
                    ("stores", .array(hop.stores.map(JSONValue.string))),
                    ("versionIdentifiers", .array(hop.versionIdentifiers.map(JSONValue.string))),
                    ("versionDigest", .string(hop.versionDigest)),
                    ("model", .string(hop.modelOrigin)),
                    ("verdict", .string(verdict(hop))),
                    ("findings", .array(hop.findings.map(FindingsReport.json))),
                ])
            })),
        ])
    }

    public static func markdown(_ plan: MigrationPlan) -> String {
        var out = "## storelens migration to `\(Markdown.code(plan.target.name))`\n\n"
        for hop in plan.hops {
            out += "### \(Markdown.escape(hopTitle(hop, plan: plan)))\n\n"
            out += "Stores: \(hop.stores.map { "`\(Markdown.code($0))`" }.joined(separator: ", ")). Verdict: **\(verdict(hop))**.\n\n"
            out += FindingsReport.markdown(hop.findings)
        }
        return out
    }
}

public enum LintReport: FindingsView {
    public typealias Subject = Storelens.LintResult

    /// At the model file and line when the model was read from an Xcode model, else at the store.
    public static func located(_ result: Storelens.LintResult) -> [SARIF.Located] {
        result.models.flatMap { linted in
            linted.findings.map { f in
                SARIF.Located(f, at: SARIF.location(of: f, declaredIn: linted.model.declarations) ?? SARIF.Location.store(f.store ?? linted.subject))
            }
        }
    }

    public static let schemaVersion = 1

    public static func text(_ result: Storelens.LintResult) -> String {
        result.models.map(text).joined(separator: "\n")
    }

    static func text(_ linted: Storelens.LintedModel) -> String {
        "\(TextTable.sanitized(linted.subject))\n  model  \(TextTable.sanitized(linted.model.source.rawValue)): \(TextTable.sanitized(linted.model.origin)), \(linted.model.entities.filter { !$0.name.hasPrefix("NSCK") }.count) entities\n\n"
            + FindingsReport.text(linted.findings)
    }

    public static func json(_ result: Storelens.LintResult) -> JSONValue {
        JSONDocument.make(schemaVersion: schemaVersion, [
            ("inputs", .array(result.models.map { .object([("path", .string($0.subject)), ("model", .string($0.model.source.rawValue)), ("origin", .string($0.model.origin))]) })),
            ("rules", .array(CloudKitLint.Rule.allCases.map { .string($0.rawValue) })),
            ("findings", .array(result.findings.map(FindingsReport.json))),
        ])
    }

    public static func markdown(_ result: Storelens.LintResult) -> String {
        "## storelens lint of \(result.models.map { "`\(Markdown.code($0.subject))`" }.joined(separator: ", "))\n\n" + FindingsReport.markdown(result.findings)
    }
}
