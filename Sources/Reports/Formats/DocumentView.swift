import StoreFormats

/// A result's views, each in its own function: text for people, JSON for machines
/// (docs/json-output.md), Markdown for a ticket.
public protocol DocumentView {
    associatedtype Subject
    static func json(_ subject: Subject) -> JSONValue
    static func text(_ subject: Subject) -> String
    static func markdown(_ subject: Subject) -> String
}

/// One way to show a one-document result: a type per format, listed once in
/// `DocumentFormats.all`, which is what `--format` offers every command that prints one
/// document (GRDB's `DumpFormat` is the model). A format made from the JSON view, as most new
/// ones would be, needs nothing of the views.
public protocol DocumentFormat {
    /// What `--format` takes.
    static var name: String { get }
    static func render<View: DocumentView>(_ subject: View.Subject, by view: View.Type) -> String
}

/// The formats of the commands that print one document.
public enum DocumentFormats {
    public static let all: [any DocumentFormat.Type] = [TextFormat.self, JSONFormat.self, MarkdownFormat.self]
    public static var names: [String] { all.map { $0.name } }

    /// The format `--format` named; nil for a name that is not one (the option's list allows only these).
    public static func named(_ name: String) -> (any DocumentFormat.Type)? {
        all.first { $0.name == name }
    }
}

extension DocumentView {
    /// `subject` in the format named `format` (the text view for a name that is none).
    public static func rendered(_ subject: Subject, as format: String) -> String {
        (DocumentFormats.named(format) ?? TextFormat.self).render(subject, by: Self.self)
    }
}
