import Foundation
import StoreFormats

/// Decoded values as JSON (documented in docs/json-output.md, `rows`): what every JSON view
/// prints, and what `export` stores for values a SQLite column cannot hold as they are.
public enum ValueJSON {
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
}
