import Acquisition
import CoreDataStore
import Findings
import Foundation
import SQLiteAccess
import StoreFormats

extension StoreChecker {
    func uniqueness() throws -> [Finding] {
        var result: [Finding] = []
        for e in opened.map.entities where e.tableExists {
            for constraint in e.entity.uniqueConstraints {
                guard let columns = InvariantQueries.uniqueColumns(e, constraint) else { continue }
                let groupCount = try connection.scalar("SELECT count(*) FROM (\(InvariantQueries.duplicateGroups(entity: e, columns: columns)))").int ?? 0
                guard groupCount > 0 else { continue }
                let (keys, count) = try self.keys(InvariantQueries.duplicateRows(entity: e, columns: columns))
                result.append(finding(.uniqueDuplicates, .error, entity: e.entity.name,
                                      "\(plural(groupCount, "value")) of \(constraint.joined(separator: ", ")) appear more than once in \(e.entity.name) (\(count) rows).",
                                      evidence: ["constraint": .list(constraint.map(EvidenceValue.string)), "pks": .keys(keys), "count": .int(count), "groups": .int(groupCount)],
                                      explanation: "The model promises these values are unique; Core Data merges or fails saves on such rows, and SwiftData's upserts pick one at random.",
                                      suggestion: "`storelens repair --only unique-duplicates` keeps one row per value (highest Z_OPT, then highest Z_PK; --keep to choose)."))
            }
        }
        return result
    }
}
