import Acquisition
import CoreDataStore
import Findings
import Foundation
import SQLiteAccess
import StoreFormats

extension StoreChecker {
    /// Each user root entity's table with a Z_OPT column, and the condition its bad rows meet.
    func zOptConditions() throws -> [(StoreEntity, InvariantQueries.RowCondition)] {
        try userEntities.filter { $0.superNumber == 0 && $0.tableExists }.compactMap { e in
            try connection.columns(of: e.table).contains(where: { $0.name == "Z_OPT" }) ? (e, InvariantQueries.badZOpt(table: e.table)) : nil
        }
    }

    func zOpt() throws -> [Finding] {
        var result: [Finding] = []
        for (e, condition) in try zOptConditions() {
            let (keys, count) = try self.keys(condition)
            guard count > 0 else { continue }
            result.append(finding(.badZOpt, .warning, entity: e.name, "\(plural(count, "row")) of \(e.table) have a NULL or non-positive Z_OPT.",
                                  evidence: ["pks": .keys(keys), "count": .int(count)],
                                  explanation: "Z_OPT is Core Data's optimistic-lock version; rows written by hand without it can make saves fail with merge conflicts.",
                                  suggestion: nil))
        }
        return result
    }
}
