import CoreDataStore
import Foundation
import StoreFormats

/// A value reduced to a canonical text so that the same fact compares equal on both sides of a
/// migration: dates as instants, UUIDs in one case, Booleans from 0/1 or true/false.
enum RecordValue {
    /// The canonical text of a value read through the model, or nil for NULL.
    static func canonical(_ value: FieldValue) -> String? {
        switch value {
        case .null: return nil
        case .integer(let i): return String(i)
        case .real(let d): return number(d)
        case .bool(let b): return b ? "true" : "false"
        case .text(let s): return s
        case .longText(let t):
            // Over a megabyte: compared by length and hash, never held whole.
            let print = t.fingerprint
            return "<text of \(print?.count ?? -1) bytes, SHA-256 \(print?.sha256 ?? "unreadable")>"
        case .date(_, let seconds): return date(seconds)
        case .uuid(let s): return s.uppercased()
        case .decimal(let s): return s
        case .binary(let b): return "\(b)"
        case .archived(let p): return "\(p)"
        case .composite(let elements): return elements.map { "\($0.name)=\(canonical($0.value) ?? "null")" }.joined(separator: ",")
        case .object(let entity, let pk): return "\(entity)#\(pk)"
        }
    }

    /// The canonical text of a JSON value from a legacy Codable file, read as `type`
    /// (Codable's default date encoding is seconds since 2001; ISO 8601 strings are accepted too).
    static func canonical(json value: PositionedJSON, as type: ModelAttributeType?) -> String? {
        switch value {
        case .null: return nil
        case .bool(let b, _):
            // Compared by the model's type, not the JSON spelling: a stored 1/0 under a numeric
            // attribute equals JSON true/false.
            if let type, type.isInteger || type == .double || type == .float || type == .decimal { return b ? "1" : "0" }
            return b ? "true" : "false"
        case .number(let n, _):
            switch type {
            case .date?: return date(n)
            case .boolean?: return n != 0 ? "true" : "false"
            default: return number(n)
            }
        case .string(let s, _):
            switch type {
            case .date?: return ValueDecoder.parseDate(s).map(date) ?? s
            case .uuid?: return s.uppercased()
            case .boolean?: return ["true", "1", "yes"].contains(s.lowercased()) ? "true" : "false"
            case let t? where t.isInteger || t == .double || t == .float:
                return Double(s.trimmingCharacters(in: .whitespaces)).map(number) ?? s
            default: return s
            }
        case .array(let items, _): return "[" + items.map { canonical(json: $0, as: nil) ?? "null" }.joined(separator: ",") + "]"
        case .object(let members, _): return "{" + members.map { "\($0.key)=\(canonical(json: $0.value, as: nil) ?? "null")" }.joined(separator: ",") + "}"
        }
    }

    static func date(_ seconds: Double) -> String {
        // Millisecond precision: Core Data stores doubles, JSON round-trips may lose the last digits.
        ValueDecoder.iso8601(referenceSeconds: (seconds * 1000).rounded() / 1000)
    }

    static func number(_ d: Double) -> String {
        d == d.rounded() && abs(d) < 1e15 ? String(Int64(d)) : String(format: "%.9g", d)
    }
}
