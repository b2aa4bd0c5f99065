import Coexistence
import Foundation
import Testing

@Suite("The manifest")
struct ManifestTests {
    static let example = """
    {
      "manifestVersion": 1,
      "stacks": [
        {"name": "legacy", "kind": "coredata", "store": "Library/Application Support/Model.sqlite",
         "writers": {"authors": ["legacy"], "bundleIDs": [], "processNames": [], "contextNames": []}},
        {"name": "modern", "kind": "swiftdata", "store": "Library/Application Support/default.store",
         "writers": {"bundleIDs": ["com.example.todo"]}},
        {"name": "json", "kind": "json", "store": "Documents/todos.imported.json", "entity": "TodoItem"}
      ],
      "entities": [
        {"legacy": "CDTodo", "current": "TodoItem", "writer": "modern",
         "attributes": {"done": "isCompleted"}, "identity": ["id"],
         "cutover": "2026-03-01T00:00:00Z"}
      ]
    }
    """

    @Test("the example from the docs parses")
    func example() throws {
        let m = try Manifest.parse(Self.example, path: "storelens.json")
        #expect(m.stacks.map(\.name) == ["legacy", "modern", "json"])
        #expect(m.stack("legacy")?.writers.authors == ["legacy"])
        #expect(m.stack("json")?.entity == "TodoItem")
        let rule = try #require(m.rule(for: "CDTodo"))
        #expect(rule.current == "TodoItem")
        #expect(rule.legacyAttribute(for: "isCompleted") == "done")
        #expect(rule.identity == ["id"])
        #expect(rule.cutover == ISO8601DateFormatter().date(from: "2026-03-01T00:00:00Z"))
        #expect(rule.line == 11)
    }

    struct Bad: Sendable, CustomStringConvertible {
        let name: String
        let replace: (String, String)
        let line: Int
        let field: String
        let says: String
        var description: String { name }
    }

    static let bad: [Bad] = [
        Bad(name: "unknown stack", replace: (#""writer": "modern""#, #""writer": "moderne""#), line: 11, field: "entities[0].writer", says: "no stack is named \"moderne\""),
        Bad(name: "two legacy names to one current", replace: (#""cutover": "2026-03-01T00:00:00Z"}"#, #""cutover": "2026-03-01T00:00:00Z"}, {"legacy": "CDTodo", "current": "Task", "writer": "modern"}"#), line: 13, field: "entities[1].legacy", says: "already mapped to \"TodoItem\""),
        Bad(name: "unknown field", replace: (#""identity": ["id"]"#, #""identity": ["id"], "writers": "x""#), line: 12, field: "entities[0].writers", says: "unknown field"),
        Bad(name: "wrong type", replace: (#""identity": ["id"]"#, #""identity": "id""#), line: 12, field: "entities[0].identity", says: "must be an array of strings"),
        Bad(name: "bad date", replace: ("2026-03-01T00:00:00Z", "March 1st"), line: 13, field: "entities[0].cutover", says: "not an ISO 8601 date"),
        Bad(name: "unsupported version", replace: (#""manifestVersion": 1"#, #""manifestVersion": 7"#), line: 2, field: "manifestVersion", says: "version 7 is not supported"),
        Bad(name: "bad kind", replace: (#""kind": "swiftdata""#, #""kind": "realm""#), line: 6, field: "stacks[1].kind", says: "unknown kind \"realm\""),
        Bad(name: "syntax", replace: (#""stacks": ["#, #""stacks": [,"#), line: 3, field: "", says: "not valid JSON"),
        Bad(name: "json stack without a rule", replace: (#""entity": "TodoItem"}"#, #""entity": "Note"}"#), line: 8, field: "stacks[2].entity", says: "\"Note\" has no rule"),
    ]

    @Test("invalid manifests point at the line and field", arguments: bad)
    func invalid(_ bad: Bad) throws {
        let text = Self.example.replacingOccurrences(of: bad.replace.0, with: bad.replace.1)
        #expect(text != Self.example, "the replacement applied")
        let error = try #require(throws: ManifestError.self) { try Manifest.parse(text, path: "m.json") }
        #expect(error.line == bad.line, "\(error)")
        #expect(error.field == bad.field, "\(error)")
        #expect(error.problem.contains(bad.says), "\(error)")
        #expect(error.description.hasPrefix("m.json:\(bad.line):"))
    }

    @Test("hostile manifests fail cleanly", arguments: [
        String(repeating: "[", count: 10_000), "", "{", #"{"manifestVersion": 1e400}"#, "\u{0}", #"{"a": "\u{1}"}"#,
    ])
    func hostile(_ text: String) {
        #expect(throws: ManifestError.self) { try Manifest.parse(text, path: "m.json") }
    }
}
