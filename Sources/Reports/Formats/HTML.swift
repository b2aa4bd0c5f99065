import Foundation
import StoreFormats

/// HTML for reports. Every string that did not come from this file — entity names, paths,
/// author strings, finding messages, anything read from a device — reaches the page through
/// `HTML.escape`, and only through it: element content, attribute values and SVG text alike.
public enum HTML {
    /// Escapes text for element content and for quoted attribute values: `& < > " '` become
    /// character references, and control characters (other than tab and newline) become U+FFFD,
    /// as on the terminal. The result cannot open a tag, end an attribute or start an entity.
    public static func escape(_ s: String) -> String {
        var out = ""
        out.reserveCapacity(s.utf8.count)
        for scalar in s.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            case "\t", "\n": out.unicodeScalars.append(scalar)
            case _ where scalar.value < 0x20 || scalar.value == 0x7f || (0x80...0x9f).contains(scalar.value):
                out += "\u{FFFD}"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// A number with thousands separators: 100000 → "100,000".
    public static func number(_ n: Int) -> String { ProgressReporter.Update.grouped(Int64(n)) }

    /// A visible note for a capped list: "showing first 500 of 100,000 …".
    public static func capNote(shown: Int, total: Int, what: String, hint: String) -> String {
        guard total > shown else { return "" }
        return "<p class=\"cap\">Showing first \(number(shown)) of \(number(total)) \(escape(what)); \(escape(hint))</p>\n"
    }
}

/// Builds HTML text. Untrusted strings go in through `text(_:)` or as attribute values, which
/// are escaped; `raw(_:)` is for markup written in this target.
struct HTMLWriter {
    private(set) var out = ""

    init() { out.reserveCapacity(64 * 1024) }

    mutating func raw(_ markup: String) { out += markup }
    mutating func text(_ s: String) { out += HTML.escape(s) }

    /// `<name a="v">escaped text</name>`.
    mutating func element(_ name: String, _ attributes: KeyValuePairs<String, String> = [:], text: String) {
        open(name, attributes)
        out += HTML.escape(text)
        out += "</\(name)>"
    }

    mutating func open(_ name: String, _ attributes: KeyValuePairs<String, String> = [:]) {
        out += "<\(name)"
        for (key, value) in attributes { out += " \(key)=\"\(HTML.escape(value))\"" }
        out += ">"
    }

    mutating func close(_ name: String) { out += "</\(name)>" }

    /// A table from header cells and rows of untrusted text; `numeric` columns are right-aligned.
    mutating func table(_ header: [String], _ rows: [[String]], numeric: Set<Int> = [], class cls: String? = nil) {
        open("table", cls.map { ["class": $0] } ?? [:])
        out += "<thead><tr>"
        for (i, h) in header.enumerated() { element("th", numeric.contains(i) ? ["class": "n"] : [:], text: h) }
        out += "</tr></thead><tbody>"
        for row in rows {
            out += "<tr>"
            for (i, cell) in row.enumerated() { element("td", numeric.contains(i) ? ["class": "n"] : [:], text: cell) }
            out += "</tr>"
        }
        out += "</tbody></table>\n"
    }
}
