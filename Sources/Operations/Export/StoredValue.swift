import CoreDataStore
import SQLiteAccess

extension FieldValue {
    /// The values a SQLite file the user asked for holds as they are: NULL, integers, reals,
    /// booleans as 0 and 1, text, and dates as ISO 8601 UTC whatever `--tz` says (the file is
    /// data, as JSON is). Nil for the rest, which the export and the recovered-versions
    /// database each write their own way.
    var sqliteScalar: DatabaseValue? {
        switch self {
        case .null: return .null
        case .integer(let i): return .integer(i)
        case .real(let d): return .real(d)
        case .bool(let b): return .integer(b ? 1 : 0)
        case .text(let s): return .text(s)
        case .date(let iso, _): return .text(iso)
        default: return nil
        }
    }
}
