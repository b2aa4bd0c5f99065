/// One thing a check or an audit found. Every check produces this same shape, so text, JSON,
/// Markdown and HTML are four views of one list.
public struct Finding: Sendable, Equatable {
    public enum Severity: String, Sendable, Comparable, CaseIterable {
        case info, warning, error

        var rank: Int { self == .info ? 0 : self == .warning ? 1 : 2 }
        public static func < (lhs: Severity, rhs: Severity) -> Bool { lhs.rank < rhs.rank }
    }

    /// A stable identifier of the kind of finding, e.g. `writer-violation`, `zmax-below-max-pk`.
    public let id: String
    public let severity: Severity
    /// The store it is about (its display path), if any.
    public let store: String?
    /// The entity it is about (current name), if any.
    public let entity: String?
    /// One sentence: what is wrong.
    public let message: String
    /// The facts behind it: primary keys, transaction ids, counts, values.
    public let evidence: [String: EvidenceValue]
    /// Why it matters.
    public let explanation: String
    /// What to do about it, including the `storelens repair` action when one exists.
    public let suggestion: String?

    public init(id: String, severity: Severity, store: String? = nil, entity: String? = nil, message: String,
                evidence: [String: EvidenceValue] = [:], explanation: String, suggestion: String? = nil) {
        self.id = id
        self.severity = severity
        self.store = store
        self.entity = entity
        self.message = message
        self.evidence = evidence
        self.explanation = explanation
        self.suggestion = suggestion
    }
}

extension Finding {
    /// The same finding, about `store` (a finding made before its store was known).
    public func about(store: String) -> Finding {
        Finding(id: id, severity: severity, store: store, entity: entity, message: message, evidence: evidence,
                explanation: explanation, suggestion: suggestion)
    }
}

/// A value in a finding's evidence: kept typed so JSON shows numbers as numbers.
public indirect enum EvidenceValue: Sendable, Equatable {
    case int(Int)
    case string(String)
    case list([EvidenceValue])
    case record([(String, EvidenceValue)])

    public static func == (lhs: EvidenceValue, rhs: EvidenceValue) -> Bool {
        switch (lhs, rhs) {
        case (.int(let a), .int(let b)): return a == b
        case (.string(let a), .string(let b)): return a == b
        case (.list(let a), .list(let b)): return a == b
        case (.record(let a), .record(let b)): return a.count == b.count && zip(a, b).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        default: return false
        }
    }

    /// A list of primary keys, capped at `limit` with the total kept beside it by the caller.
    public static func keys(_ values: [Int], limit: Int = 20) -> EvidenceValue {
        .list(values.prefix(limit).map(EvidenceValue.int))
    }

    /// Short text for terminals and Markdown.
    public var text: String {
        switch self {
        case .int(let i): return String(i)
        case .string(let s): return s
        // A long list (every missing file's name) shows its first 20 and how many more; JSON has all.
        case .list(let items):
            return items.prefix(20).map(\.text).joined(separator: ", ") + (items.count > 20 ? " (+\(items.count - 20) more)" : "")
        case .record(let members): return members.map { "\($0.0)=\($0.1.text)" }.joined(separator: " ")
        }
    }
}

extension Array where Element == Finding {
    /// The exit decision: whether any finding is at or above `threshold`.
    public func any(atOrAbove threshold: Finding.Severity) -> Bool {
        contains { $0.severity >= threshold }
    }

    /// Errors first, then warnings, then information; stable within a severity.
    public var bySeverity: [Finding] {
        enumerated().sorted { ($1.element.severity, $0.offset) < ($0.element.severity, $1.offset) }.map(\.element)
    }
}
