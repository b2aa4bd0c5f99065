import Acquisition
import CoreDataStore
import Findings
import Foundation
import SQLiteAccess
import StoreFormats

extension StoreChecker {
    func tablesAndEntries() throws -> [Finding] {
        var result: [Finding] = []
        for e in userEntities where e.superNumber == 0 && !e.tableExists {
            result.append(finding(.missingEntityTable, .warning, entity: e.name, "Z_PRIMARYKEY lists \(e.name) but its table \(e.table) does not exist.",
                                  evidence: ["table": .string(e.table), "zEnt": .int(e.number)],
                                  explanation: "A migration was cut short or the table was dropped by hand; fetching the entity fails.",
                                  suggestion: "Compare with a fresh store made by the app; do not hand-create the table."))
        }
        let known = Set(opened.store.entities.map(\.table))
        let joins = Set(opened.map.entities.flatMap { $0.relationships.compactMap(\.joinTable) })
        for table in try connection.tableNames() where table.hasPrefix("Z") && !table.hasPrefix("Z_") && !known.contains(table) {
            result.append(finding(.tableWithoutEntity, .warning, entity: nil, "Table \(table) looks like an entity table but no Z_PRIMARYKEY entry names it.",
                                  evidence: ["table": .string(table), "rows": .int(try connection.scalar("SELECT count(*) FROM \(q(table))").int ?? 0)],
                                  explanation: "Left over from a removed entity, or made by hand; Core Data ignores it.",
                                  suggestion: nil))
        }
        for table in try connection.tableNames() where table.hasPrefix("Z_") && table.dropFirst(2).first?.isNumber == true && !joins.contains(table) {
            result.append(finding(.tableWithoutEntity, .info, entity: nil, "Join table \(table) matches no many-to-many relationship of the model.",
                                  evidence: ["table": .string(table)], explanation: "Left over from a removed relationship; Core Data ignores it.", suggestion: nil))
        }
        return result
    }

    /// Declared relationships of each entity (inherited ones are checked at their declaring entity).
    var declaredRelationships: [(EntityMapping, RelationshipMapping)] { InvariantQueries.declaredRelationships(opened.map) }

    func mapping(_ name: String) -> EntityMapping? { opened.map.entity(named: name) }
}
