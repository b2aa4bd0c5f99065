import Foundation
import SQLiteAccess
import StoreFormats

extension DatabaseValue {
    /// A value read from a record's bytes as SQLite would return it: text decoded in the
    /// database's text encoding (header offset 56), blobs as they are.
    public init(_ value: RecordValue, textEncoding: UInt32) {
        switch value {
        case .null: self = .null
        case .integer(let v): self = .integer(v)
        case .real(let d): self = .real(d)
        case .text(let bytes): self = .text(SQLiteRecord.text(bytes, encoding: textEncoding))
        case .blob(let bytes): self = .blob(Data(bytes))
        }
    }

    /// Equal as SQLite compares two values: an integer and a real are one value when they are
    /// the same number (an index may hold either form of a REAL column's integral value).
    public func equalsAsSQLite(_ other: DatabaseValue) -> Bool {
        switch (self, other) {
        case (.integer(let x), .real(let y)), (.real(let y), .integer(let x)): return Double(x) == y
        default: return self == other
        }
    }
}
