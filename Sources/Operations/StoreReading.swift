import Acquisition
import SQLiteAccess

/// SQLite errors met while reading a store, named by the store: a damaged one is bad input
/// (exit 2 in the command), anything else stays an internal error.
public enum StoreReading {
    public static func named<T>(_ displayPath: String, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as SQLiteError {
            throw error.isCorrupt || error.isNotADatabase
                ? AcquisitionError.corrupt(path: displayPath, detail: "SQLite: \(error.message)")
                : AcquisitionError.sqlite(error.with(path: displayPath))
        }
    }
}
