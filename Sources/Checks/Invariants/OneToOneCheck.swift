import Acquisition
import CoreDataStore
import Findings
import Foundation
import SQLiteAccess
import StoreFormats

extension StoreChecker {
    func oneToOnePairs() throws -> [Finding] {
        var result: [Finding] = []
        for (source, r) in declaredRelationships where r.kind == .toOne {
            guard let inverseName = r.relationship.inverse, let column = r.column, let dest = mapping(r.relationship.destination),
                  let inverse = dest.relationships.first(where: { $0.relationship.name == inverseName }), inverse.kind == .toOne,
                  let inverseColumn = inverse.column, source.tableExists, dest.tableExists,
                  // Check each pair once, from the side whose name sorts first.
                  (source.entity.name, r.relationship.name) < (dest.entity.name, inverseName) else { continue }
            let (keys, count) = try self.keys(InvariantQueries.oneToOneMismatch(source: source, column: column, dest: dest, inverseColumn: inverseColumn))
            guard count > 0 else { continue }
            result.append(finding(.oneToOneMismatch, .warning, entity: source.entity.name,
                                  "\(plural(count, "row")) of \(source.entity.name) point at \(dest.entity.name) through \(r.relationship.name), but \(inverseName) does not point back.",
                                  evidence: ["relationship": .string(r.relationship.name), "inverse": .string(inverseName), "pks": .keys(keys), "count": .int(count)],
                                  explanation: "Both sides of a one-to-one relationship hold a foreign key; when they disagree, what the app sees depends on which side it asks.",
                                  suggestion: "`storelens repair --only one-to-one-mismatch` makes \(inverseName) point back."))
        }
        return result
    }
}
