import StoreFormats

/// Why a repair did not produce its output. The input is never changed, and no output exists
/// under the requested name afterwards.
public enum RepairError: Error, Equatable, CustomStringConvertible, Sendable {
    case outputExists(path: String)
    case outputFolderMissing(path: String)
    case verificationFailed(path: String, detail: String)
    case failed(path: String, detail: String)
    case backupFailed(path: String, detail: String)
    /// A stored key leaves no room for the rows a repair must add (a device can hold any value,
    /// up to SQLite's largest integer).
    case noRoomForKeys(store: String, entity: String, value: Int64, needed: Int)

    public var description: String {
        switch self {
        case .outputExists(let path):
            return "\(path) already exists; give --out a new file name (repair never overwrites)."
        case .outputFolderMissing(let path):
            return "the folder for \(path) does not exist; create it or choose another --out."
        case .verificationFailed(let path, let detail):
            return "the repaired copy failed verification (\(detail)); nothing was written to \(path) — please report this."
        case .failed(let path, let detail):
            return "the repair of \(path) failed (\(detail)); the input is unchanged and no output was written."
        case .noRoomForKeys(let store, let entity, let value, let needed):
            return "cannot add \(plural(needed, "\(entity) row")) to \(store): its highest key (Z_MAX or Z_PK) is \(value), which leaves no room for them and the app's next insert below SQLite's largest integer (\(Int64.max)); nothing was written — check the key with `storelens rows`."
        case .backupFailed(let path, let detail):
            return "cannot back up the store into \(path) (\(detail)); nothing was changed."
        }
    }
}

extension RepairError: DescribedError {
    /// A repair that could not be verified is ours; every other refusal is about the input or the output asked for.
    public var errorClass: ErrorClass {
        if case .verificationFailed = self { return .ours }
        return .input
    }
}
