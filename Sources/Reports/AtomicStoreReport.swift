import Acquisition
import CoreDataStore
import Foundation
import StoreFormats

public enum AtomicStoreReport {
    /// The members `inspect --format json` lists under `atomicStores`.
    public static func json(_ s: AtomicStoreInspection) -> JSONValue {
        let c = s.contents
        return .object([
            ("path", .string(s.path)),
            ("format", .string(c.format.rawValue)),
            ("sizeBytes", .int(s.sizeBytes)),
            ("storeType", .optional(c.storeType)),
            ("frameworkVersion", c.frameworkVersion.map { .int(Int($0)) } ?? .null),
            ("storeUUID", .optional(c.storeUUID)),
            ("databaseVersion", .optional(c.databaseVersion)),
            ("databaseUUID", .optional(c.databaseUUID)),
            ("nextObjectID", .optional(c.nextObjectID)),
            ("modelVersionHashes", .object(c.modelVersionHashes.map { ($0.entity, .string($0.hash)) })),
            ("entities", .array(c.objectCounts.map { .object([("name", .string($0.entity)), ("objects", .int($0.objects))]) })),
            ("objects", .int(c.objects.count)),
            ("anomalyCount", .int(c.anomalyCount)),
            ("anomalies", .array(c.anomalies.map(JSONValue.string))),
        ])
    }

    public static func text(_ s: AtomicStoreInspection) -> String {
        let c = s.contents
        var out = TextTable.sanitized(s.path) + "\n"
        out += "  format      \(c.format.title) (\(s.sizeBytes) bytes; one file, no -wal or history)\n"
        out += "  store type  \(TextTable.sanitized(c.storeType ?? "-")), framework version \(c.frameworkVersion.map(String.init) ?? "-")\n"
        out += "  store UUID  \(TextTable.sanitized(c.storeUUID ?? c.databaseUUID ?? "-"))\n"
        if let next = c.nextObjectID { out += "  next id     \(TextTable.sanitized(next))\n" }
        let hashes = Dictionary(c.modelVersionHashes.map { ($0.entity, $0.hash) }, uniquingKeysWith: { a, _ in a })
        var table: [[String]] = [["ENTITY", "OBJECTS", "VERSION HASH"]]
        for (entity, count) in c.objectCounts { table.append([entity, String(count), hashes[entity].map { String($0.prefix(16)) + "…" } ?? "- (not in the model's hashes)"]) }
        out += "\n" + TextTable.render(table, rightAligned: [1], indent: 2)
        if c.anomalyCount > 0 {
            out += "\n  \(c.anomalyCount) anomal\(c.anomalyCount == 1 ? "y" : "ies")\(c.anomalyCount > c.anomalies.count ? " (the first \(c.anomalies.count))" : ""):\n"
            for a in c.anomalies { out += "    \(TextTable.sanitized(a))\n" }
        }
        return out
    }
}
