import Findings
import Operations
import StoreFormats

/// `storelens check` in every format: the stores checked, the checks run, the findings.
public enum CheckReport: FindingsView {
    public typealias Subject = Storelens.CheckResult

    /// At the store each finding is about.
    public static func located(_ result: Storelens.CheckResult) -> [SARIF.Located] {
        result.findings.map { SARIF.Located($0, at: $0.store.map(SARIF.Location.store)) }
    }

    public static let schemaVersion = 1

    public static func json(_ result: Storelens.CheckResult) -> JSONValue {
        JSONDocument.make(schemaVersion: schemaVersion, [
            ("stores", .array(result.stores.map(JSONValue.string))),
            ("checks", .array(result.checks.map { .string($0.rawValue) })),
            ("findings", .array(result.findings.map(FindingsReport.json))),
        ] + JSONDocument.refused(result.refused))
    }

    public static func markdown(_ result: Storelens.CheckResult) -> String {
        "## storelens check of \(result.stores.map { "`\(Markdown.code($0))`" }.joined(separator: ", "))\n\n" + FindingsReport.markdown(result.findings)
    }

    public static func text(_ result: Storelens.CheckResult) -> String {
        result.stores.map { "\(TextTable.sanitized($0))\n" }.joined() + FindingsReport.text(result.findings)
    }
}
