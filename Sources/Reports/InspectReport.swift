import Operations
import StoreFormats

/// `storelens inspect` in every format: the SQLite stores, then the Core Data XML and binary
/// stores, and in JSON the stores that were refused.
extension InspectionReport {
    public static func json(_ result: Storelens.InspectResult) -> JSONValue {
        var members: [(String, JSONValue)] = [("stores", .array(result.inspections.map(json(store:))))]
        if !result.atomicStores.isEmpty { members.append(("atomicStores", .array(result.atomicStores.map(AtomicStoreReport.json)))) }
        return JSONDocument.make(schemaVersion: schemaVersion, members + JSONDocument.refused(result.refused))
    }

    public static func markdown(_ result: Storelens.InspectResult) -> String {
        markdown(result.inspections) + result.atomicStores.map { "\n```\n" + AtomicStoreReport.text($0) + "```\n" }.joined()
    }

    public static func text(_ result: Storelens.InspectResult) -> String {
        ([text(result.inspections)].filter { !$0.isEmpty } + result.atomicStores.map(AtomicStoreReport.text)).joined(separator: "\n")
    }
}
