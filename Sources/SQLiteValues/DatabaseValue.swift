import Foundation

/// One SQLite value, as stored: SQLite has five storage classes and so does this enum.
public enum DatabaseValue: Equatable, Hashable, Sendable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob(Data)

    public var int64: Int64? {
        switch self {
        case .integer(let v): return v
        case .real(let d): return d.isFinite && d == d.rounded() && abs(d) < 9.2e18 ? Int64(d) : nil
        default: return nil
        }
    }
    public var int: Int? { int64.flatMap { Int(exactly: $0) } }
    public var double: Double? {
        switch self {
        case .integer(let v): return Double(v)
        case .real(let d): return d
        default: return nil
        }
    }
    public var string: String? {
        if case .text(let s) = self { return s }
        return nil
    }
    public var data: Data? {
        if case .blob(let d) = self { return d }
        return nil
    }
    public var isNull: Bool { self == .null }
}

/// A row read from a statement: values by column index, with names alongside.
public struct Row: Sendable {
    public let columnNames: [String]
    public let values: [DatabaseValue]

    public init(columnNames: [String], values: [DatabaseValue]) {
        self.columnNames = columnNames
        self.values = values
    }

    public subscript(_ index: Int) -> DatabaseValue {
        index >= 0 && index < values.count ? values[index] : .null
    }
    public subscript(_ name: String) -> DatabaseValue {
        guard let i = columnNames.firstIndex(of: name) else { return .null }
        return values[i]
    }
}
