import StoreFormats

/// Why a model could not be read, or a request against it (an entity, a filter) cannot be met.
/// Each description is one sentence naming the file and the thing at fault.
public enum ModelError: Error, Equatable, CustomStringConvertible, Sendable {
    /// `Z_MODELCACHE` exists but cannot be decoded (bad DEFLATE, not a keyed archive, damaged graph).
    case cacheUnreadable(path: String, detail: String)
    /// The file given with `--model` cannot be used.
    case xcodeModelUnreadable(path: String, detail: String)
    /// The store has no `Z_PRIMARYKEY`/`Z_METADATA`: it is plain SQLite, not Core Data.
    case notCoreData(path: String)
    /// No entity has this name, legacy name or class name.
    case unknownEntity(name: String, path: String, suggestion: String?)
    /// The entity has no attribute or to-one relationship with this name.
    case unknownProperty(entity: String, property: String, suggestion: String?)
    /// A `--where`, `--since` or similar value cannot be used as given.
    case invalidFilter(String)
    /// The store has no persistent history tables.
    case noHistory(path: String)
    /// The entity's table is missing from the store.
    case missingTable(entity: String, table: String, path: String)
    /// The entity's table lacks a column every Core Data table has (`Z_PK`, `Z_ENT`).
    case damagedTable(table: String, path: String, detail: String)

    public var description: String {
        switch self {
        case .cacheUnreadable(let path, let detail):
            return "\(path): the cached model in Z_MODELCACHE cannot be read (\(detail))."
        case .xcodeModelUnreadable(let path, let detail):
            return "\(path): the Xcode model cannot be read (\(detail))."
        case .notCoreData(let path):
            return "\(path) is a plain SQLite database, not a Core Data store (it has no Z_PRIMARYKEY and Z_METADATA tables)."
        case .unknownEntity(let name, let path, let suggestion):
            return "\(path) has no entity named '\(name)' (by entity, legacy or class name)"
                + (suggestion.map { "; did you mean '\($0)'?" } ?? "; run `storelens schema` to list them.")
        case .unknownProperty(let entity, let property, let suggestion):
            return "Entity \(entity) has no attribute or to-one relationship named '\(property)'"
                + (suggestion.map { "; did you mean '\($0)'?" } ?? ".")
        case .invalidFilter(let text):
            return text
        case .noHistory(let path):
            return "\(path) has no persistent history (no ATRANSACTION and ACHANGE tables)."
        case .missingTable(let entity, let table, let path):
            return "\(path): the table \(table) of entity \(entity) does not exist in the store."
        case .damagedTable(let table, let path, let detail):
            return "\(path): the table \(table) is not laid out as Core Data makes it (\(detail)); it may have been rebuilt by hand."
        }
    }
}

extension ModelError: DescribedError {
    public var errorClass: ErrorClass { .input }
}
