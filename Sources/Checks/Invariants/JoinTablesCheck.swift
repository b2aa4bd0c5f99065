import Acquisition
import CoreDataStore
import Findings
import Foundation
import SQLiteAccess
import StoreFormats

extension StoreChecker {
    /// Each join table of a many-to-many relationship, once, with the relationship's two sides.
    private func joins() throws -> [(join: String, source: EntityMapping, sourceColumn: String, dest: EntityMapping, destColumn: String, relationship: RelationshipMapping)] {
        var result: [(String, EntityMapping, String, EntityMapping, String, RelationshipMapping)] = []
        var seen = Set<String>()
        for (source, r) in declaredRelationships where r.kind == .manyToMany {
            guard let join = r.joinTable, let sc = r.joinSourceColumn, let dc = r.joinDestinationColumn,
                  seen.insert(join).inserted, let dest = mapping(r.relationship.destination),
                  try connection.tableExists(join) else { continue }
            result.append((join, source, sc, dest, dc, r))
        }
        return result
    }

    /// The orphan-row conditions a row screen can count: those whose two sides' Z_PK are their
    /// tables' rowids, so each join row meets the lookups once (see `toOneConditions`).
    func joinConditions() throws -> [InvariantQueries.RowCondition] {
        try joins().filter { keyIsRowid($0.source.table) && keyIsRowid($0.dest.table) }.map {
            InvariantQueries.orphanJoinCondition(join: $0.join, sourceColumn: $0.sourceColumn, source: $0.source, destColumn: $0.destColumn, dest: $0.dest)
        }
    }

    func joinTables() throws -> [Finding] {
        var result: [Finding] = []
        for (join, source, sc, dest, dc, r) in try joins() {
            let key = try connection.rowKey(of: join)
            let sql = InvariantQueries.orphanJoinRows(join: join, key: key, sourceColumn: sc, source: source, destColumn: dc, dest: dest)
            // Counted in the row screen's scan of the join table when it has the condition.
            let condition = InvariantQueries.orphanJoinCondition(join: join, sourceColumn: sc, source: source, destColumn: dc, dest: dest)
            let screened = try screen?.count(condition, on: connection)
            let count = try screened ?? keys(sql).count
            guard count > 0 else { continue }
            let pairs = try connection.rows("SELECT \(q(sc)), \(q(dc)) FROM \(q(join)) WHERE \(InvariantQueries.keyExpression(key)) IN (\(sql)) LIMIT \(limit)")
                .map { EvidenceValue.string("\($0[0].int.map(String.init) ?? "NULL")→\($0[1].int.map(String.init) ?? "NULL")") }
            result.append(finding(.orphanJoinRows, .error, entity: source.entity.name,
                                  "\(plural(count, "row")) of join table \(join) (\(source.entity.name).\(r.relationship.name)) point at rows that do not exist.",
                                  evidence: ["joinTable": .string(join), "pairs": .list(pairs), "count": .int(count)],
                                  explanation: "The relationship faults on the missing side when the app walks it.",
                                  suggestion: "`storelens repair --only orphan-join-rows` deletes these join rows."))
        }
        return result
    }
}
