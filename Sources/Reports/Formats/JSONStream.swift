import StoreFormats

/// A JSON document written a piece at a time, laid out exactly as `JSONValue.rendered()` lays
/// out the whole (two spaces a level, `[]` and `{}` when empty), so a writer can stream a million
/// records into a document without holding it. Each call returns the text to write next; the
/// stream keeps which containers are open and how many items each holds.
///
/// ```
/// var json = JSONStream()
/// out += json.beginObject([("schemaVersion", .int(1))])
/// out += json.beginArray(key: "stores")
/// out += json.element(store)          // as many as arrive
/// out += json.end() + json.end()      // closes "stores", then the document (with its newline)
/// ```
public struct JSONStream: Sendable {
    private struct Container: Sendable {
        let isArray: Bool
        var count = 0
    }

    private var open: [Container] = []

    public init() {}

    /// Opens an object (the document, or an element of the open array) with its first members.
    public mutating func beginObject(_ members: [(String, JSONValue)] = []) -> String {
        var out = open.isEmpty ? "{" : nextElement() + pad(open.count) + "{"
        open.append(Container(isArray: false))
        for (key, value) in members { out += member(key, value) }
        return out
    }

    /// Opens an array: the document, or the member `key` of the open object.
    public mutating func beginArray(key: String? = nil) -> String {
        var out = "["
        if let key { out = nextMember(key) + out } else if !open.isEmpty { out = nextElement() + pad(open.count) + out }
        open.append(Container(isArray: true))
        return out
    }

    /// A member of the open object.
    public mutating func member(_ key: String, _ value: JSONValue) -> String {
        let lead = nextMember(key)
        return lead + value.rendered(indentedBy: open.count * 2).dropFirst(open.count * 2)
    }

    /// An element of the open array, pretty at its level.
    public mutating func element(_ value: JSONValue) -> String {
        let indent = open.count * 2
        return nextElement() + value.rendered(indentedBy: indent)
    }

    /// Closes the innermost open container; closing the document ends it with a newline.
    public mutating func end() -> String {
        guard let closing = open.popLast() else { return "" }
        let bracket = closing.isArray ? "]" : "}"
        let out = closing.count == 0 ? bracket : "\n" + pad(open.count) + bracket
        return open.isEmpty ? out + "\n" : out
    }

    private mutating func nextElement() -> String {
        guard !open.isEmpty else { return "" }
        open[open.count - 1].count += 1
        return open[open.count - 1].count == 1 ? "\n" : ",\n"
    }

    private mutating func nextMember(_ key: String) -> String {
        var name = ""
        JSONValue.escape(key, into: &name)
        return nextElement() + pad(open.count) + name + ": "
    }

    private func pad(_ level: Int) -> String {
        String(repeating: " ", count: level * 2)
    }
}
