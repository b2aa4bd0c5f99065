import Foundation

/// A command's JSON output read back by the tests, with Foundation's parser (not storelens' own).
public enum CommandJSON {
    /// The text was not JSON, or was JSON but not an object.
    public struct NotAnObject: Error, CustomStringConvertible {
        public let problem: String
        /// The text's start, escaped (it may hold control bytes from a hostile store).
        public let preview: String
        public var description: String { "the command's output is not a JSON object (\(problem)); it begins \(preview)" }
    }

    /// `text` (a whole stdout, or one line of JSON Lines) as a JSON object.
    public static func object<Text: StringProtocol>(_ text: Text) throws -> [String: Any] {
        let parsed: Any
        do {
            parsed = try JSONSerialization.jsonObject(with: Data(text.utf8))
        } catch {
            throw NotAnObject(problem: "not JSON: \(error.localizedDescription)", preview: preview(text))
        }
        guard let object = parsed as? [String: Any] else {
            throw NotAnObject(problem: "JSON, but a \(type(of: parsed)) rather than an object", preview: preview(text))
        }
        return object
    }

    /// Every line of the JSON Lines file at `url`, each an object.
    public static func lines(of url: URL) throws -> [[String: Any]] {
        try String(contentsOf: url, encoding: .utf8).split(separator: "\n").map { try object($0) }
    }

    private static func preview<Text: StringProtocol>(_ text: Text) -> String {
        String(text.prefix(200)).debugDescription + (text.count > 200 ? "…" : "")
    }
}
