import Acquisition
import CoreDataStore
import Findings
import Foundation
import SQLiteAccess
import StoreFormats

extension StoreChecker {
    /// The to-one conditions a row screen can count: those whose target table's Z_PK is its rowid,
    /// so the lookup's join gives each scanned row once (a hand-made table with repeated Z_PK
    /// values would count the scan's other conditions twice; its checks run their own queries).
    func toOneConditions() -> [InvariantQueries.RowCondition] {
        var result: [InvariantQueries.RowCondition] = []
        for (source, r) in declaredRelationships where r.kind == .toOne {
            guard let column = r.column, source.tableExists, let dest = mapping(r.relationship.destination), dest.tableExists,
                  keyIsRowid(dest.table) else { continue }
            result += [InvariantQueries.danglingToOne(source: source, column: column, dest: dest),
                       InvariantQueries.wrongEntityTarget(source: source, column: column, dest: dest)]
        }
        return result
    }

    /// Whether `table`'s Z_PK is its INTEGER PRIMARY KEY (the rowid), as SQLite's plan for a
    /// lookup by it says. A name that could write plan words of its own is not trusted.
    func keyIsRowid(_ table: String) -> Bool {
        guard !table.contains(where: { $0.isWhitespace || $0 == "(" || $0 == ")" }),
              let plan = try? connection.rows("EXPLAIN QUERY PLAN SELECT 1 FROM \(q(table)) WHERE Z_PK = 1") else { return false }
        return plan.count == 1 && (plan[0][3].string ?? "").hasSuffix("USING INTEGER PRIMARY KEY (rowid=?)")
    }

    func toOneRelationships() throws -> [Finding] {
        var result: [Finding] = []
        for (source, r) in declaredRelationships where r.kind == .toOne {
            guard let column = r.column, source.tableExists, let dest = mapping(r.relationship.destination), dest.tableExists else { continue }
            let (keys, count) = try self.keys(InvariantQueries.danglingToOne(source: source, column: column, dest: dest))
            if count > 0 {
                result.append(finding(.danglingToOne, .error, entity: source.entity.name,
                                      "\(plural(count, "row")) of \(source.entity.name) point through \(r.relationship.name) at \(dest.entity.name) rows that do not exist.",
                                      evidence: ["relationship": .string(r.relationship.name), "column": .string(column), "pks": .keys(keys), "count": .int(count)],
                                      explanation: "Core Data declares no foreign keys, so SQLite accepts them; the app faults on the missing object (\"CoreData could not fulfill a fault\").",
                                      suggestion: "`storelens repair --only dangling-to-one` sets these relationships to nil."))
            }
            let wrong = InvariantQueries.wrongEntityTarget(source: source, column: column, dest: dest)
            let (wrongKeys, wrongCount) = try self.keys(wrong)
            if wrongCount > 0 {
                let targetsSQL = "SELECT s.\(q(column)) FROM \(q(source.table)) s WHERE s.Z_PK IN (\(wrong.rows))"
                let values = try connection.rows("SELECT DISTINCT t.Z_ENT FROM \(q(dest.table)) t WHERE t.Z_PK IN (\(targetsSQL)) LIMIT 10")
                    .map { $0[0].int.map(String.init) ?? "NULL" }
                let targets = try connection.scalar("SELECT count(DISTINCT s.\(q(column))) FROM \(q(source.table)) s WHERE s.Z_PK IN (\(wrong.rows))").int ?? 0
                result.append(finding(.wrongEntityTarget, .error, entity: source.entity.name,
                                      "\(plural(wrongCount, "row")) of \(source.entity.name) point through \(r.relationship.name) at \(plural(targets, "row")) of \(dest.table) that exist but carry Z_ENT \(values.joined(separator: ", ")), not \(dest.entity.name)'s (\(dest.entityNumbers.map(String.init).joined(separator: ", "))).",
                                      evidence: ["relationship": .string(r.relationship.name), "column": .string(column), "pks": .keys(wrongKeys), "count": .int(wrongCount),
                                                 "targets": .int(targets), "targetZEnt": .list(values.map(EvidenceValue.string)),
                                                 "expected": .list(dest.entityNumbers.map(EvidenceValue.int))],
                                      explanation: "The target rows are there, but Core Data reads them as another entity (or none) and the relationship faults; the references themselves are valid, so setting them to nil would lose data.",
                                      suggestion: "`storelens repair --only target-wrong-entity` corrects the targets' Z_ENT when the relationships pointing at them agree on it; otherwise inspect them with `storelens rows`."))
            }
            if let fek = r.entityKeyColumn {
                let (keys, count) = try self.keys(InvariantQueries.entityKeyMismatch(source: source, column: column, entityKey: fek, dest: dest))
                if count > 0 {
                    result.append(finding(.entityKeyMismatch, .error, entity: source.entity.name,
                                          "\(plural(count, "row")) of \(source.entity.name) record the wrong entity of their \(r.relationship.name) target in \(fek).",
                                          evidence: ["relationship": .string(r.relationship.name), "column": .string(fek), "pks": .keys(keys), "count": .int(count)],
                                          explanation: "Core Data builds the target's object ID from this column; a wrong value points at another entity's row.",
                                          suggestion: "`storelens repair --only fek-mismatch` copies the target row's Z_ENT into \(fek)."))
                }
            }
        }
        return result
    }
}
