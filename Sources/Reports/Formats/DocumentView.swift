import StoreFormats

/// The formats of the commands that print one document (`--format text|json|markdown`).
public enum DocumentFormat: String, Sendable, CaseIterable {
    case text, json, markdown
}

/// A result's three views, each in its own function: text for people, JSON for machines
/// (docs/json-output.md), Markdown for a ticket. A command picks the view by the format's name
/// here, in one place, instead of in a switch of its own.
public protocol DocumentView {
    associatedtype Subject
    static func json(_ subject: Subject) -> JSONValue
    static func text(_ subject: Subject) -> String
    static func markdown(_ subject: Subject) -> String
}

extension DocumentView {
    /// `subject` in `format`: JSON pretty-printed with its final newline; a name that is not a
    /// document format (the command's option list allows only those) gives the text view.
    public static func rendered(_ subject: Subject, as format: String) -> String {
        switch DocumentFormat(rawValue: format) {
        case .json: return json(subject).rendered() + "\n"
        case .markdown: return markdown(subject)
        case .text, nil: return text(subject)
        }
    }
}
