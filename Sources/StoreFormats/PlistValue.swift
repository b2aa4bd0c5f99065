import Foundation

/// One value of a property list, decoded without Foundation's class bridging.
///
/// Foundation on Linux hides keyed-archive UIDs behind an internal class, and
/// its number bridging loses the difference between booleans and integers, so
/// storelens reads plists into this enum instead.
///
/// - Dictionary keys are strings. The binary plist reader rejects any other
///   key type (`BinaryPlistError.nonStringKey`) rather than guessing a
///   string form for it; every plist Apple writes uses string keys.
/// - Swift compares strings by canonical equivalence, so two keys that differ
///   only in Unicode normalisation collapse into one entry (the later wins).
public enum PlistValue: Sendable, Hashable {
    case string(String)
    /// Any integer that fits in `Int64`, whatever width the file used.
    case integer(Int64)
    /// An integer above `Int64.max` (up to `UInt64.max`). CoreFoundation
    /// writes unsigned 64-bit numbers this large as 16-byte integers; the
    /// reader produces this case only for them, so every smaller value is
    /// always `.integer`.
    case unsignedInteger(UInt64)
    case real(Double)
    case bool(Bool)
    /// Seconds since 2001-01-01 00:00:00 UTC, as stored in the file.
    case date(Double)
    case data(Data)
    case array([PlistValue])
    case dictionary([String: PlistValue])
    /// A keyed-archive object reference (`CF$UID`).
    case uid(UInt64)
}

extension PlistValue {
    /// The string, when this is a string.
    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    /// The integer, when this is an integer that fits in `Int64`.
    public var intValue: Int64? {
        switch self {
        case .integer(let value): return value
        case .unsignedInteger(let value): return Int64(exactly: value)
        default: return nil
        }
    }

    /// The integer, when this is a non-negative integer.
    public var uint64Value: UInt64? {
        switch self {
        case .integer(let value): return UInt64(exactly: value)
        case .unsignedInteger(let value): return value
        default: return nil
        }
    }

    /// The number as a `Double`, for integers and reals alike.
    public var doubleValue: Double? {
        switch self {
        case .real(let value): return value
        case .integer(let value): return Double(value)
        case .unsignedInteger(let value): return Double(value)
        default: return nil
        }
    }

    /// The boolean, when this is a boolean (integers are not booleans here).
    public var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    /// The bytes, when this is data.
    public var dataValue: Data? {
        if case .data(let value) = self { return value }
        return nil
    }

    /// The date, when this is a date.
    public var dateValue: Date? {
        if case .date(let seconds) = self { return Date(timeIntervalSinceReferenceDate: seconds) }
        return nil
    }

    /// The elements, when this is an array (binary plist sets decode as arrays).
    public var arrayValue: [PlistValue]? {
        if case .array(let value) = self { return value }
        return nil
    }

    /// The entries, when this is a dictionary.
    public var dictionaryValue: [String: PlistValue]? {
        if case .dictionary(let value) = self { return value }
        return nil
    }

    /// The object number, when this is a keyed-archive UID.
    public var uidValue: UInt64? {
        if case .uid(let value) = self { return value }
        return nil
    }

    /// The value under `key` when this is a dictionary; nil otherwise.
    public subscript(key: String) -> PlistValue? {
        dictionaryValue?[key]
    }

    /// The element at `index` when this is an array and the index is in range; nil otherwise.
    public subscript(index: Int) -> PlistValue? {
        guard case .array(let elements) = self, elements.indices.contains(index) else { return nil }
        return elements[index]
    }

    /// A short name of the case, for error messages and reports.
    public var typeName: String {
        switch self {
        case .string: return "string"
        case .integer, .unsignedInteger: return "integer"
        case .real: return "real"
        case .bool: return "bool"
        case .date: return "date"
        case .data: return "data"
        case .array: return "array"
        case .dictionary: return "dictionary"
        case .uid: return "uid"
        }
    }
}
