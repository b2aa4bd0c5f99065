import StoreFormats

/// A result shown as text or JSON only (a schema, an export's summary, a merge): the one-document
/// views without a Markdown one.
public protocol PlainView {
    associatedtype Subject
    static func json(_ subject: Subject) -> JSONValue
    static func text(_ subject: Subject) -> String
}

/// One way to show a `PlainView`'s result, listed once in `PlainFormats.all`.
public protocol PlainFormat {
    static var name: String { get }
    static func render<View: PlainView>(_ subject: View.Subject, by view: View.Type) -> String
}

/// The formats of the commands whose result is a `PlainView`'s.
public enum PlainFormats {
    public static let all: [any PlainFormat.Type] = [TextFormat.self, JSONFormat.self]
    public static var names: [String] { all.map { $0.name } }

    public static func named(_ name: String) -> (any PlainFormat.Type)? {
        all.first { $0.name == name }
    }
}

extension PlainView {
    /// `subject` in the format named `format` (the text view for a name that is none).
    public static func rendered(_ subject: Subject, as format: String) -> String {
        (PlainFormats.named(format) ?? TextFormat.self).render(subject, by: Self.self)
    }
}

extension TextFormat: PlainFormat {
    public static func render<View: PlainView>(_ subject: View.Subject, by view: View.Type) -> String { view.text(subject) }
}

extension JSONFormat: PlainFormat {
    public static func render<View: PlainView>(_ subject: View.Subject, by view: View.Type) -> String { view.json(subject).rendered() + "\n" }
}
