@testable import Reports
import StoreFormats
import Testing

/// A document streamed piece by piece is the document `JSONValue.rendered()` writes whole: the
/// whole-document renderer is the reference for every shape the writers stream.
@Suite("JSONStream: streamed documents are laid out as whole ones")
struct JSONStreamTests {
    static let record: JSONValue = .object([("entity", .string("Item")), ("pk", .int(3)),
                                            ("values", .object([("name", .string("a \"quoted\"\nline")), ("tags", .array([])), ("empty", .object([]))]))])

    /// `{ header…, "items": [elements], "count": n }`, as rows and history stream it.
    @Test("header members, an array of records, a member after it", arguments: [0, 1, 3])
    func documentWithTrailingMember(records: Int) {
        let header: [(String, JSONValue)] = [("schemaVersion", .int(1)), ("path", .string("/a/b.store")), ("fields", .array([.string("x")]))]
        let items = Array(repeating: Self.record, count: records)
        var json = JSONStream()
        var streamed = json.beginObject(header) + json.beginArray(key: "items")
        for item in items { streamed += json.element(item) }
        streamed += json.end() + json.member("count", .int(records)) + json.end()
        let whole = JSONValue.object(header + [("items", .array(items)), ("count", .int(records))]).rendered() + "\n"
        #expect(streamed == whole)
    }

    /// `{ "schemaVersion", "stores": [ { "path", "versions": [ … ] } … ] }`, as recover and
    /// wal --diff --each stream it, with stores that hold nothing between ones that do.
    @Test("arrays of objects holding arrays, some empty", arguments: [[], [0], [2, 0, 1]])
    func nestedGroups(sizes: [Int]) {
        var json = JSONStream()
        var streamed = json.beginObject([("schemaVersion", .int(3))]) + json.beginArray(key: "stores")
        var stores: [JSONValue] = []
        for (n, size) in sizes.enumerated() {
            let lead: [(String, JSONValue)] = [("path", .string("store \(n)")), ("commits", .int(size))]
            streamed += json.beginObject(lead) + json.beginArray(key: "versions")
            for _ in 0 ..< size { streamed += json.element(Self.record) }
            streamed += json.end() + json.end()
            stores.append(.object(lead + [("versions", .array(Array(repeating: Self.record, count: size)))]))
        }
        streamed += json.end() + json.end()
        #expect(streamed == JSONValue.object([("schemaVersion", .int(3)), ("stores", .array(stores))]).rendered() + "\n")
    }
}
