import Foundation
import StoreFormats
import Testing

@Suite("JSON rendering")
struct JSONValueTests {
    @Test("keys keep their order and strings from a device are escaped")
    func escaping() throws {
        let value: JSONValue = .object([
            ("z", .string("quote \" backslash \\ newline \n nul \u{0} bell \u{7} line-sep \u{2028}")),
            ("a", .array([.int(1), .double(2.5), .double(3), .bool(true), .null])),
            ("<script>", .object([])),
        ])
        let text = value.rendered(pretty: false)
        #expect(text.hasPrefix(#"{"z":"#))
        #expect(text.contains(#"\u0000"#))
        #expect(text.contains(#"\u0007"#))
        #expect(text.contains(#"\u2028"#))
        // Whatever we print, a standard parser reads back the same strings.
        let parsed = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        #expect(parsed["z"] as? String == "quote \" backslash \\ newline \n nul \u{0} bell \u{7} line-sep \u{2028}")
        #expect((parsed["a"] as? [Any])?.count == 5)
        #expect(parsed["<script>"] != nil)
    }

    @Test("pretty and compact renderings parse to the same value")
    func prettyAndCompact() throws {
        let value: JSONValue = .object([("a", .array([.object([("b", .int(-3))])])), ("c", .string("é"))])
        let pretty = try JSONSerialization.jsonObject(with: Data(value.rendered(pretty: true).utf8)) as? NSDictionary
        let compact = try JSONSerialization.jsonObject(with: Data(value.rendered(pretty: false).utf8)) as? NSDictionary
        #expect(pretty == compact)
        #expect(!value.rendered(pretty: false).contains("\n"))
    }
}
