import Acquisition
import CoreDataStore
import Findings
import Foundation
import SQLiteAccess
import StoreFormats

extension StoreChecker {
    /// Each root entity's table with a Z_ENT column, and the condition its stray rows meet.
    func unknownEntityConditions() throws -> [(StoreEntity, InvariantQueries.RowCondition)] {
        try opened.store.entities.filter { $0.superNumber == 0 && $0.tableExists }.compactMap { e in
            try connection.columns(of: e.table).contains(where: { $0.name == "Z_ENT" })
                ? (e, InvariantQueries.unknownEntity(table: e.table, allowed: e.subtreeNumbers)) : nil
        }
    }

    func unknownEntityRows() throws -> [Finding] {
        var result: [Finding] = []
        for (e, condition) in try unknownEntityConditions() {
            let (keys, count) = try self.keys(condition)
            guard count > 0 else { continue }
            let values = try connection.rows("SELECT DISTINCT s.Z_ENT FROM \(condition.from) WHERE \(condition.condition) LIMIT 10")
                .map { Self.spelled($0[0]) }
            result.append(finding(.unknownEntityRows, .error, entity: e.name,
                                  "\(plural(count, "row")) of \(e.table) carry a Z_ENT outside \(e.name)'s entity tree (\(values.joined(separator: ", "))).",
                                  evidence: ["pks": .keys(keys), "count": .int(count), "zEnt": .list(values.map(EvidenceValue.string)),
                                             "allowed": .list(e.subtreeNumbers.map(EvidenceValue.int))],
                                  explanation: "Core Data cannot say which entity such a row is; fetches skip it or fail.",
                                  suggestion: "Inspect the rows with `storelens rows`; they were written by something other than Core Data."))
        }
        return result
    }
}
