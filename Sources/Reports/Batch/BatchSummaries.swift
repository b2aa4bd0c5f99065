import Acquisition
import Coexistence
import CoreDataStore
import Findings
import Foundation
import Operations
import StoreFormats

// The `summary` object of each command's batch line (docs/json-output.md, "Batch results"):
// the few numbers that let a batch be sorted and grepped; the full picture is the command's
// own --format json for that input. (The report batch's is the library's: `Storelens.reportBatch`
// writes the report and its line.)

/// Stores listed in one line's summary before the list is cut (`storeCount` is always complete).
let batchStoreLimit = BatchLine.summaryStoreLimit

extension ScanReport {
    public static func batchSummary(inventories: [Inventory], stores: [ScannedStore]) -> JSONValue {
        .object([
            ("kind", .optional(inventories.first?.kind.rawValue)),
            ("storeCount", .int(stores.count)),
            ("coreDataStores", .int(stores.filter { $0.format == .coreData }.count)),
            ("stores", .array(stores.prefix(batchStoreLimit).map { s in
                .object([("path", .string(s.found.path)), ("format", .optional(s.formatName)), ("stack", .optional(s.stack?.rawValue)),
                         ("size", .int(s.found.size)), ("wal", .bool(s.found.sidecars.wal != nil)), ("problem", .optional(s.problem))])
            })),
            ("orphans", .int(inventories.reduce(0) { $0 + $1.orphans.count })),
            ("skipped", .int(inventories.reduce(0) { $0 + $1.skipped.count })),
            ("warnings", .array(inventories.flatMap(\.warnings).prefix(20).map(JSONValue.string))),
            ("damage", .optional(inventories.compactMap(\.damage).first)),
        ])
    }
}

extension CheckReport {
    /// The findings per severity, the stores.
    public static func batchSummary(_ result: Storelens.CheckResult) -> JSONValue {
        .object(Finding.Severity.allCases.reversed().map { severity in
            (severity.rawValue, JSONValue.int(result.findings.filter { $0.severity == severity }.count))
        } + [("stores", .array(result.stores.map(JSONValue.string)))])
    }
}

extension InspectionReport {
    public static func batchSummary(_ inspections: [StoreInspection], atomic: [AtomicStoreInspection] = []) -> JSONValue {
        let atomicSummaries: [JSONValue] = atomic.map { a in
            .object([("path", .string(a.path)), ("format", .string(a.contents.format.rawValue)), ("stack", .null),
                     ("entities", .int(a.contents.objectCounts.count)), ("records", .int(a.contents.objects.count)),
                     ("anomalies", .int(a.contents.anomalyCount))])
        }
        let summaries: [JSONValue] = inspections.prefix(batchStoreLimit).map { s in
            let user = s.entities.filter { $0.entity.kind == .user }
            return .object([
                ("path", .string(s.path)),
                ("format", .string(s.format.rawValue)),
                ("stack", .string(s.stack.stack.rawValue)),
                ("entities", .int(user.count)),
                ("records", .int(s.format == .coreData ? user.reduce(0) { $0 + $1.counts.rows } : s.tables.reduce(0) { $0 + $1.rows })),
                ("recordsMainFileOnly", .int(s.format == .coreData ? user.reduce(0) { $0 + ($1.counts.rowsMainFileOnly ?? 0) }
                                                                  : s.tables.reduce(0) { $0 + ($1.rowsMainFileOnly ?? 0) })),
                ("walCommits", .int(s.wal.commits)),
                ("historyTransactions", .int(s.history?.transactions ?? 0)),
                ("notes", .array(s.notes.map(JSONValue.string))),
            ])
        }
        return .object([
            ("storeCount", .int(inspections.count + atomic.count)),
            ("stores", .array(Array((summaries + atomicSummaries).prefix(batchStoreLimit)))),
        ])
    }
}

extension AuditReport {
    public static func batchSummary(_ r: AuditResult) -> JSONValue {
        var members: [(String, JSONValue)] = Finding.Severity.allCases.reversed().map { s in
            (s.rawValue, .int(r.findings.filter { $0.severity == s }.count))
        }
        members.append(("entities", .int(r.entities.count)))
        members.append(("stacks", .array(r.bindings.map { .object([("name", .string($0.stack)), ("store", .optional($0.store))]) })))
        return .object(members)
    }
}
