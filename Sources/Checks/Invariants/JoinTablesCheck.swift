import Acquisition
import CoreDataStore
import Findings
import Foundation
import SQLiteAccess
import StoreFormats

extension StoreChecker {
    func joinTables() throws -> [Finding] {
        var result: [Finding] = []
        var seen = Set<String>()
        for (source, r) in declaredRelationships where r.kind == .manyToMany {
            guard let join = r.joinTable, let sc = r.joinSourceColumn, let dc = r.joinDestinationColumn,
                  seen.insert(join).inserted, let dest = mapping(r.relationship.destination),
                  try connection.tableExists(join) else { continue }
            let key = try connection.rowKey(of: join)
            let sql = InvariantQueries.orphanJoinRows(join: join, key: key, sourceColumn: sc, source: source, destColumn: dc, dest: dest)
            let (_, count) = try keys(sql)
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
