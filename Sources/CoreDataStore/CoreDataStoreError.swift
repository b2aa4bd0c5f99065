import StoreFormats

/// Why a store's Core Data structures could not be read.
public enum CoreDataStoreError: Error, Equatable, CustomStringConvertible, Sendable {
    /// `Z_METADATA` is missing its row or its plist is damaged.
    case metadata(path: String, detail: String)
    /// `Z_PRIMARYKEY` is inconsistent in a way that stops reading (for example a Z_SUPER cycle).
    case primaryKeys(path: String, detail: String)

    public var description: String {
        switch self {
        case .metadata(let path, let detail):
            return "\(path): the Core Data metadata is damaged (\(detail)); the store may have been edited by hand or cut off in transfer — copy it off the device again."
        case .primaryKeys(let path, let detail):
            return "\(path): Z_PRIMARYKEY is inconsistent (\(detail)); run `storelens check` for details."
        }
    }
}

extension CoreDataStoreError: DescribedError {
    public var errorClass: ErrorClass { .input }
}
