import Foundation

/// A JSON value whose objects keep their keys in the order they were written, so machine
/// output reads in the same order as the documentation describes it.
///
/// The encoding is part of storelens' stable interface: do not change how values print.
public indirect enum JSONValue: Equatable, Sendable {
    case null
    case bool(Bool)
    case int(Int)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([(String, JSONValue)])

    public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        lhs.rendered(pretty: false) == rhs.rendered(pretty: false)
    }

    /// `value` or `null`.
    public static func optional(_ value: String?) -> JSONValue { value.map(JSONValue.string) ?? .null }
    public static func optional(_ value: Int?) -> JSONValue { value.map(JSONValue.int) ?? .null }

    /// The JSON text. `pretty` indents by two spaces; otherwise one line (for JSON Lines).
    public func rendered(pretty: Bool = true) -> String {
        var out = ""
        // Most documents are a line or a few: grown from empty, the string was copied again and again.
        out.reserveCapacity(1024)
        write(to: &out, pretty: pretty, indent: 0)
        return out
    }

    public func write(to out: inout String, pretty: Bool, indent: Int) {
        switch self {
        case .null: out += "null"
        case .bool(let b): out += b ? "true" : "false"
        case .int(let i): out += String(i)
        case .double(let d):
            if d.isFinite {
                out += d == d.rounded() && abs(d) < 1e15 ? String(format: "%.1f", d) : "\(d)"
            } else {
                out += "null"
            }
        case .string(let s): JSONValue.escape(s, into: &out)
        case .array(let items):
            if items.isEmpty { out += "[]"; return }
            out += "["
            for (i, item) in items.enumerated() {
                if i > 0 { out += "," }
                if pretty { out += "\n" + String(repeating: "  ", count: indent + 1) }
                item.write(to: &out, pretty: pretty, indent: indent + 1)
            }
            if pretty { out += "\n" + String(repeating: "  ", count: indent) }
            out += "]"
        case .object(let members):
            if members.isEmpty { out += "{}"; return }
            out += "{"
            for (i, (key, value)) in members.enumerated() {
                if i > 0 { out += "," }
                if pretty { out += "\n" + String(repeating: "  ", count: indent + 1) }
                JSONValue.escape(key, into: &out)
                out += pretty ? ": " : ":"
                value.write(to: &out, pretty: pretty, indent: indent + 1)
            }
            if pretty { out += "\n" + String(repeating: "  ", count: indent) }
            out += "}"
        }
    }

    /// Escapes per RFC 8259; control characters (and NUL bytes from a device) become \u escapes,
    /// and so does every other character `HostileText.isHostile` finds — DEL, the C1 controls, the
    /// bidi and line-separator characters — which JSON allows raw but a terminal showing the file
    /// (`cat`, `less -r`) may act on or reorder by.
    public static func escape(_ s: String, into out: inout String) {
        out += "\""
        // Most strings need no escape: one scan of the UTF-8, then one append (appending scalar by
        // scalar was most of the time `recover` spent writing JSON). U+2028/2029 and the bidi
        // characters start with 0xE2, the C1 controls with 0xC2, U+061C with 0xD8.
        func special(_ b: UInt8) -> Bool { b < 0x20 || b == 0x22 || b == 0x5C || b == 0x7F || b == 0xC2 || b == 0xD8 || b == 0xE2 }
        let plain = s.utf8.withContiguousStorageIfAvailable { bytes in
            !bytes.contains(where: special)
        } ?? !s.utf8.contains(where: special)
        if plain {
            out += s
            out += "\""
            return
        }
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where HostileText.isHostile(scalar):
                out += String(format: "\\u%04x", scalar.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }
}

extension JSONValue {

    /// Pretty-printed JSON indented by `spaces`, for streaming members of a larger document.
    public func rendered(indentedBy spaces: Int) -> String {
        let pad = String(repeating: " ", count: spaces)
        return rendered(pretty: true).split(separator: "\n", omittingEmptySubsequences: false)
            .map { pad + $0 }.joined(separator: "\n")
    }
}
