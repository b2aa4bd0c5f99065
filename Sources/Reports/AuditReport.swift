import Coexistence
import Findings
import Foundation
import StoreFormats

/// The views of `audit`.
public enum AuditReport {
    /// Version of the JSON layout; bumped only on incompatible changes.
    public static let schemaVersion = 1

    /// Each finding at the store it is about, else at the manifest that asked for it (SARIF).
    public static func located(_ r: AuditResult, manifest: String) -> [SARIF.Located] {
        r.findings.map { SARIF.Located($0, at: SARIF.Location.store($0.store ?? manifest)) }
    }

    public static func json(_ r: AuditResult, manifest: String) -> JSONValue {
        JSONDocument.make(schemaVersion: schemaVersion, [
            ("manifest", .string(manifest)),
            ("stacks", .array(r.bindings.map { .object([("name", .string($0.stack)), ("kind", .string($0.kind)), ("store", .optional($0.store))]) })),
            ("entities", .array(r.entities.map { e in
                .object([
                    ("current", .string(e.current)),
                    ("legacy", .optional(e.legacy)),
                    ("writer", .string(e.writer)),
                    ("sides", .array(e.sides.map { .object([("stack", .string($0.stack)), ("store", .string($0.store)),
                                                             ("entity", .string($0.entity)), ("records", .int($0.records))]) })),
                    ("writersSeen", .array(e.writersSeen.map { .object([("stack", .string($0.stack)), ("store", .string($0.store)),
                                                                       ("transactions", .int($0.transactions)), ("changes", .int($0.changes))]) })),
                ])
            })),
            ("findings", .array(r.findings.map(FindingsReport.json))),
            ("summary", summary(r.findings)),
        ])
    }

    static func summary(_ findings: [Finding]) -> JSONValue {
        .object(Finding.Severity.allCases.reversed().map { s in (s.rawValue, .int(findings.filter { $0.severity == s }.count)) })
    }

    public static func text(_ r: AuditResult) -> String {
        var out = "stacks\n"
        for b in r.bindings { out += "  \(b.stack) (\(b.kind)): \(TextTable.sanitized(b.store ?? "not found"))\n" }
        out += "\nentities\n"
        var table: [[String]] = [["ENTITY", "LEGACY", "WRITER", "SIDES (stack: records)", "WRITERS SEEN (stack: transactions/changes)"]]
        for e in r.entities {
            table.append([e.current, e.legacy ?? "-", e.writer,
                          e.sides.map { "\($0.stack): \($0.records)" }.joined(separator: ", "),
                          e.writersSeen.isEmpty ? "-" : e.writersSeen.map { "\($0.stack): \($0.transactions)/\($0.changes)" }.joined(separator: ", ")])
        }
        out += TextTable.render(table, indent: 2)
        let counts = Finding.Severity.allCases.reversed().map { s in "\(r.findings.filter { $0.severity == s }.count) \(s.rawValue)" }
        out += "\nfindings (\(counts.joined(separator: ", ")))\n"
        out += FindingsReport.text(r.findings)
        return out
    }

    public static func markdown(_ r: AuditResult, input: String) -> String {
        var out = "## storelens audit of `\(Markdown.code(input))`\n\n"
        let counts = Finding.Severity.allCases.reversed().map { s in "\(r.findings.filter { $0.severity == s }.count) \(s.rawValue)" }
        out += "**\(counts.joined(separator: ", "))**\n\n"
        out += "| entity | legacy | writer | sides | writers seen |\n|---|---|---|---|---|\n"
        for e in r.entities {
            out += "| \(Markdown.escape(e.current)) | \(Markdown.escape(e.legacy ?? "")) | \(Markdown.escape(e.writer)) | "
            out += Markdown.escape(e.sides.map { "\($0.stack): \($0.records)" }.joined(separator: ", ")) + " | "
            out += Markdown.escape(e.writersSeen.map { "\($0.stack): \($0.transactions) tx" }.joined(separator: ", ")) + " |\n"
        }
        out += "\n" + FindingsReport.markdown(r.findings)
        return out
    }
}

extension AuditReport: FindingsView {
    /// An audit with the names its views show: the manifest file and the input as given.
    public struct Audited {
        public let result: AuditResult
        public let manifest: String
        public let input: String

        public init(_ result: AuditResult, manifest: String, input: String) {
            self.result = result
            self.manifest = manifest
            self.input = input
        }
    }

    public static func located(_ audited: Audited) -> [SARIF.Located] { located(audited.result, manifest: audited.manifest) }
    public static func json(_ audited: Audited) -> JSONValue { json(audited.result, manifest: audited.manifest) }
    public static func text(_ audited: Audited) -> String { text(audited.result) }
    public static func markdown(_ audited: Audited) -> String { markdown(audited.result, input: audited.input) }
}
