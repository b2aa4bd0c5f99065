import Findings
import StoreFormats

// A finding as every JSON output holds it (docs/json-output.md, "Findings"): the one definition,
// here because a batch's results file (`Storelens.batch`) writes findings as well as the views
// in Reports (`FindingsReport.json` is this).

extension Finding {
    public func json() -> JSONValue {
        .object([
            ("id", .string(id)),
            ("severity", .string(severity.rawValue)),
            ("store", .optional(store)),
            ("entity", .optional(entity)),
            ("message", .string(message)),
            ("evidence", .object(evidence.sorted { $0.key < $1.key }.map { ($0.key, $0.value.json()) })),
            ("explanation", .string(explanation)),
            ("suggestion", .optional(suggestion)),
        ])
    }
}

extension EvidenceValue {
    public func json() -> JSONValue {
        switch self {
        case .int(let i): return .int(i)
        case .string(let s): return .string(s)
        case .list(let items): return .array(items.map { $0.json() })
        case .record(let members): return .object(members.map { ($0.0, $0.1.json()) })
        }
    }
}
