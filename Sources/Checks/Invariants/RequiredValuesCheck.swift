import Acquisition
import CoreDataStore
import Findings
import Foundation
import SQLiteAccess
import StoreFormats

extension StoreChecker {
    /// Required attributes and to-one relationships (at the entity that declares them), each with
    /// the condition its rows without a value meet.
    func requiredConditions() -> [(entity: EntityMapping, attribute: AttributeMapping?, relationship: RelationshipMapping?, condition: InvariantQueries.RowCondition)] {
        var result: [(EntityMapping, AttributeMapping?, RelationshipMapping?, InvariantQueries.RowCondition)] = []
        for e in opened.map.entities where e.tableExists {
            guard let owner = mapping(e.entity.name) else { continue }
            for a in e.attributes where a.declaredBy == e.entity.name && !a.attribute.isOptional && !a.attribute.isTransient {
                guard let column = a.column else { continue }
                result.append((e, a, nil, InvariantQueries.nullColumn(entity: owner, column: column)))
            }
            // Optional wins over a minimum count (Photos' GenericAlbum.keyAsset: NSIsOptional with
            // NSMinCount 1): the minimum applies only when a value is present.
            for r in e.relationships where r.declaredBy == e.entity.name && r.kind == .toOne && !r.relationship.isOptional {
                guard let column = r.column else { continue }
                result.append((e, nil, r, InvariantQueries.nullColumn(entity: owner, column: column)))
            }
        }
        return result
    }

    func requiredValues() throws -> [Finding] {
        var result: [Finding] = []
        for (e, attribute, relationship, condition) in requiredConditions() {
            let (keys, count) = try self.keys(condition)
            guard count > 0 else { continue }
            if let a = attribute {
                result.append(finding(.requiredNull, .warning, entity: e.entity.name,
                                      "\(plural(count, "row")) of \(e.entity.name) have no value for the required attribute \(a.attribute.name).",
                                      evidence: ["attribute": .string(a.attribute.name), "pks": .keys(keys), "count": .int(count)],
                                      explanation: "Core Data validates required attributes on save: the next save that touches these rows fails.",
                                      suggestion: "Give them a value in the app, or make the attribute optional in the model."))
            } else if let r = relationship {
                result.append(finding(.requiredNull, .warning, entity: e.entity.name,
                                      "\(plural(count, "row")) of \(e.entity.name) have no \(r.relationship.name), which the model requires.",
                                      evidence: ["relationship": .string(r.relationship.name), "pks": .keys(keys), "count": .int(count)],
                                      explanation: "Core Data validates required relationships on save: the next save that touches these rows fails.",
                                      suggestion: nil))
            }
        }
        return result
    }
}
