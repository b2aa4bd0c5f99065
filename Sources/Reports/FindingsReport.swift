import Findings
import Foundation
import StoreFormats

/// Views of a list of findings: every command that finds things renders them through here, so
/// text, JSON, Markdown and HTML always say the same.
public enum FindingsReport {
    public static func json(_ f: Finding) -> JSONValue {
        .object([
            ("id", .string(f.id)),
            ("severity", .string(f.severity.rawValue)),
            ("store", .optional(f.store)),
            ("entity", .optional(f.entity)),
            ("message", .string(f.message)),
            ("evidence", .object(f.evidence.sorted { $0.key < $1.key }.map { ($0.key, json($0.value)) })),
            ("explanation", .string(f.explanation)),
            ("suggestion", .optional(f.suggestion)),
        ])
    }

    static func json(_ value: EvidenceValue) -> JSONValue {
        switch value {
        case .int(let i): return .int(i)
        case .string(let s): return .string(s)
        case .list(let items): return .array(items.map(json))
        case .record(let members): return .object(members.map { ($0.0, json($0.1)) })
        }
    }

    public static func text(_ findings: [Finding]) -> String {
        guard !findings.isEmpty else { return "  no findings\n" }
        var out = ""
        for f in findings {
            out += "  \(f.severity.rawValue.uppercased()) \(f.id)"
            if let entity = f.entity { out += " [\(TextTable.sanitized(entity))]" }
            out += ": \(TextTable.sanitized(f.message))\n"
            if let store = f.store { out += "      store: \(TextTable.sanitized(store))\n" }
            for (key, value) in f.evidence.sorted(by: { $0.key < $1.key }) {
                out += "      \(key): \(TextTable.sanitized(value.text))\n"
            }
            if let s = f.suggestion { out += "      → \(TextTable.sanitized(s))\n" }
        }
        return out
    }

    public static func markdown(_ findings: [Finding]) -> String {
        guard !findings.isEmpty else { return "No findings.\n" }
        var out = "| severity | finding | entity | what |\n|---|---|---|---|\n"
        for f in findings {
            out += "| \(f.severity.rawValue) | `\(f.id)` | \(Markdown.escape(f.entity ?? "")) | \(Markdown.escape(f.message)) |\n"
        }
        out += "\n"
        for f in findings {
            out += "### \(f.severity.rawValue): `\(f.id)`\(f.entity.map { " — \(Markdown.escape($0))" } ?? "")\n\n"
            out += Markdown.escape(f.message) + "\n\n"
            if let store = f.store { out += "- store: `\(Markdown.code(store))`\n" }
            for (key, value) in f.evidence.sorted(by: { $0.key < $1.key }) {
                out += "- \(key): \(Markdown.escape(String(value.text.prefix(500))))\n"
            }
            out += "\n_\(Markdown.escape(f.explanation))_\n"
            if let s = f.suggestion { out += "\n**What to do:** \(Markdown.escape(s))\n" }
            out += "\n"
        }
        return out
    }
}
