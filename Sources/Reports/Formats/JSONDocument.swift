import Acquisition
import StoreFormats

/// Every JSON document a command prints starts the same way: `schemaVersion` first (its number
/// says which shape the rest has, docs/json-output.md), then the document's own members.
public enum JSONDocument {
    public static func make(schemaVersion: Int, _ members: [(String, JSONValue)]) -> JSONValue {
        .object([version(schemaVersion)] + members)
    }

    /// The first member of a document that is written piece by piece (rows, history).
    public static func version(_ schemaVersion: Int) -> (String, JSONValue) {
        ("schemaVersion", .int(schemaVersion))
    }

    /// `refused`: the stores an input held that could not be read (absent when none was).
    public static func refused(_ refused: [RefusedStore]) -> [(String, JSONValue)] {
        refused.isEmpty ? [] : [("refused", .array(refused.map { .object([("path", .string($0.path)), ("reason", .string($0.reason))]) }))]
    }
}

/// For machines: the view's JSON document (`schemaVersion` first), pretty-printed, with its final newline.
public enum JSONFormat: DocumentFormat, FindingsFormat {
    public static let name = "json"

    public static func render<View: DocumentView>(_ subject: View.Subject, by view: View.Type) -> String {
        view.json(subject).rendered() + "\n"
    }
}
