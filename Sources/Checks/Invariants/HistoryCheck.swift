import Acquisition
import CoreDataStore
import Findings
import Foundation
import SQLiteAccess
import StoreFormats

extension StoreChecker {
    /// The history conditions a row screen can count, when ACHANGE has the columns they need (and
    /// ATRANSACTION's Z_PK is its rowid, for the lookup of a change's transaction).
    func historyConditions() throws -> [InvariantQueries.RowCondition] {
        guard try connection.tableExists("ACHANGE") else { return [] }
        let columns = Set(try connection.columns(of: "ACHANGE").map(\.name))
        var result: [InvariantQueries.RowCondition] = []
        if columns.contains("ZENTITY") { result.append(InvariantQueries.historyUnknownEntity) }
        if columns.contains("ZTRANSACTIONID"), try connection.tableExists("ATRANSACTION"), keyIsRowid("ATRANSACTION") {
            result.append(InvariantQueries.historyMissingTransaction)
        }
        return result
    }

    func history() throws -> [Finding] {
        guard try connection.tableExists("ACHANGE") else { return [] }
        var result: [Finding] = []
        let changeColumns = Set(try connection.columns(of: "ACHANGE").map(\.name))
        if changeColumns.contains("ZENTITY") {
            let (keys, count) = try self.keys(InvariantQueries.historyUnknownEntity)
            if count > 0 {
                result.append(finding(.historyUnknownEntity, .warning, entity: nil, "\(plural(count, "history change")) name an entity that Z_PRIMARYKEY does not have.",
                                      evidence: ["changes": .keys(keys), "count": .int(count)],
                                      explanation: "History consumers (other processes, CloudKit export) cannot map these changes to objects.",
                                      suggestion: nil))
            }
        }
        if changeColumns.contains("ZTRANSACTIONID"), try connection.tableExists("ATRANSACTION") {
            let (keys, count) = try self.keys(InvariantQueries.historyMissingTransaction)
            if count > 0 {
                result.append(finding(.historyMissingTransaction, .warning, entity: nil, "\(plural(count, "history change")) belong to transactions that do not exist.",
                                      evidence: ["changes": .keys(keys), "count": .int(count)],
                                      explanation: "History was trimmed by hand or partially; consumers fetching by transaction miss these changes.",
                                      suggestion: nil))
            }
        }
        return result
    }
}
