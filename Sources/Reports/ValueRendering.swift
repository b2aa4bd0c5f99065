import CoreDataStore
import Foundation
import StoreFormats

/// How decoded values print: JSON for machines, one short cell for tables and CSV.
public enum ValueRendering {
    /// A decoded value as JSON (documented in docs/json-output.md, `rows`). A text over
    /// `LongValue.window` is its summary here (`longText(_:)`): `rows` and `export` write it
    /// whole, in pieces (`LongTextOutput`).
    public static func json(_ value: FieldValue) -> JSONValue {
        switch value {
        case .null: return .null
        case .integer(let i): return Int(exactly: i).map(JSONValue.int) ?? .string(String(i))
        case .real(let d): return .double(d)
        case .bool(let b): return .bool(b)
        case .text(let s): return .string(s)
        case .longText(let t): return longText(t)
        case .date(let iso, _): return .string(iso)
        case .uuid(let s): return .string(s)
        case .decimal(let s): return .string(s)
        case .binary(let b): return json(b)
        case .archived(let tree): return json(tree)
        case .composite(let elements): return .object(elements.map { ($0.name, json($0.value)) })
        case .object(let entity, let pk): return .string("\(entity)#\(pk)")
        }
    }

    /// A text over `LongValue.window` where it is not written whole (`recover`, a composite in
    /// `export`): its UTF-8 length, SHA-256, and first 1000 characters.
    public static func longText(_ t: LongText) -> JSONValue {
        let print = t.fingerprint
        return .object([("size", .optional(print?.count)), ("sha256", print.map { .string($0.sha256) } ?? .null),
                        ("textPrefix", .string(String(t.prefix.prefix(1000))))])
    }

    public static func json(_ b: BinaryValue) -> JSONValue {
        var members: [(String, JSONValue)] = [("size", .optional(b.size)), ("hexPrefix", .string(b.prefixHex))]
        switch b.storage {
        case .plain:
            members.append(("storage", .string("column")))
        case .inline:
            members.append(("storage", .string("inline")))
        case .external(let file):
            members.append(("storage", .string("external")))
            members.append(("externalFile", .object([("path", .string(file.relativePath)), ("exists", .bool(file.exists)),
                                                    ("kind", .string(file.kind.name)), ("size", .optional(file.size)),
                                                    ("sha256", .optional(file.sha256))])))
        }
        return .object(members)
    }

    /// A keyed-archive tree (transformable values) as JSON: dictionaries by key, data as size and hex.
    public static func json(_ value: PlistValue) -> JSONValue {
        switch value {
        case .string(let s): return .string(s)
        case .integer(let i): return Int(exactly: i).map(JSONValue.int) ?? .string(String(i))
        case .unsignedInteger(let u): return Int(exactly: u).map(JSONValue.int) ?? .string(String(u))
        case .real(let d): return .double(d)
        case .bool(let b): return .bool(b)
        case .date(let seconds): return .string(ValueDecoder.iso8601(referenceSeconds: seconds))
        case .data(let d): return .object([("size", .int(d.count)), ("hexPrefix", .string(ValueDecoder.hex(d.prefix(32))))])
        case .uid(let u): return .string("<UID \(u)>")
        case .array(let items): return .array(items.map(json))
        case .dictionary(let entries): return .object(entries.sorted { $0.key < $1.key }.map { ($0.key, json($0.value)) })
        }
    }

    /// A transaction's time for people: in the `--tz` zone (`DisplayZone.current`).
    public static func time(_ iso: String?, referenceSeconds: Double?) -> String? {
        guard let iso else { return nil }
        guard !DisplayZone.current.isUTC, let referenceSeconds else { return iso }
        return DisplayZone.current.iso8601(referenceSeconds: referenceSeconds)
    }

    /// One line of text for a table cell or a CSV field (NULL prints as `nullText`); dates in
    /// the `--tz` zone.
    public static func cell(_ value: FieldValue, nullText: String = "") -> String {
        switch value {
        case .null: return nullText
        case .integer(let i): return String(i)
        case .real(let d): return String(d)
        case .bool(let b): return b ? "true" : "false"
        case .text(let s): return s
        case .longText(let t): return t.prefix + "…"
        case .date(let iso, let seconds): return DisplayZone.current.isUTC ? iso : DisplayZone.current.iso8601(referenceSeconds: seconds)
        case .uuid(let s): return s
        case .decimal(let s): return s
        case .binary(let b):
            switch b.storage {
            case .external(let file):
                switch file.kind {
                case .file: return "<external \(file.size ?? 0) bytes sha256 \(file.sha256 ?? "?"): \(file.relativePath)>"
                case .missing: return "<external file MISSING: \(file.relativePath)>"
                case .notChecked: return "<external file: \(file.relativePath)>"
                default: return "<external data is a \(file.kind.name), not followed or read: \(file.relativePath)>"
                }
            case .inline:
                return "<\(b.size ?? 0) bytes inline \(b.prefixHex)\((b.size ?? 0) > BinaryValue.prefixLength ? "…" : "")>"
            case .plain:
                return "<\(b.size ?? 0) bytes \(b.prefixHex)\((b.size ?? 0) > BinaryValue.prefixLength ? "…" : "")>"
            }
        case .archived, .composite:
            return json(value).rendered(pretty: false)
        case .object(let entity, let pk): return "\(entity)#\(pk)"
        }
    }

    /// A value inside a line of text (`name "Stone"`, `kept uuid=…`): text quoted and cut at 80
    /// characters, NULL spelled out, anything else as its cell cut at 120. Not sanitised: the
    /// caller sanitises the whole line.
    public static func inline(_ value: FieldValue) -> String {
        if case .text(let s) = value { return "\"" + String(s.prefix(80)) + (s.count > 80 ? "…" : "") + "\"" }
        if case .longText(let t) = value { return "\"" + String(t.prefix.prefix(80)) + "…\"" }
        let text = cell(value, nullText: "NULL")
        return text.count > 120 ? String(text.prefix(119)) + "…" : text
    }

    /// Pretty-printed JSON indented by `spaces`, for streaming members of a larger document.
    static func indented(_ value: JSONValue, by spaces: Int) -> String {
        let pad = String(repeating: " ", count: spaces)
        return value.rendered(pretty: true).split(separator: "\n", omittingEmptySubsequences: false)
            .map { pad + $0 }.joined(separator: "\n")
    }
}
