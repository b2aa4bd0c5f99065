import Findings
import Foundation
import Operations
import StoreFormats

/// Views of a list of findings: every command that finds things renders them through here, so
/// text, JSON, Markdown and HTML always say the same.
public enum FindingsReport {
    public static func json(_ f: Finding) -> JSONValue { f.json() }

    static func json(_ value: EvidenceValue) -> JSONValue { value.json() }

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
