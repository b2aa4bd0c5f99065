import Acquisition
import CoreDataStore
import Findings
import Foundation
import SQLiteAccess
import StoreFormats

extension StoreChecker {
    func zMax() throws -> [Finding] {
        var result: [Finding] = []
        for e in opened.store.entities where e.superNumber == 0 && e.tableExists {
            let zMax = e.zMax ?? 0
            // A device can store any value; at the top of the range no key is left to allocate.
            let highest = max(Int64(zMax), try connection.scalar("SELECT max(Z_PK) FROM \(q(e.table))").int64 ?? 0)
            if highest == Int64.max {
                result.append(finding(.zMaxExhausted, .error, entity: e.name,
                                      "Z_MAX or a Z_PK of \(e.name) is \(highest), SQLite's largest integer: no primary key is left for the next \(e.name) insert.",
                                      evidence: ["zMax": .int(zMax), "highest": .int(Int(highest)), "table": .string(e.table)],
                                      explanation: "Core Data allocates new primary keys above Z_MAX; above the largest integer there are none, so inserting into this entity cannot succeed.",
                                      suggestion: "No automatic repair: renumbering primary keys would break every reference to them. Look at the row with `storelens rows`."))
            }
            let (keys, count) = try self.keys(InvariantQueries.aboveZMax(table: e.table), [.integer(Int64(zMax))])
            guard count > 0 else { continue }
            let integerMax = try connection.scalar("SELECT max(Z_PK) FROM \(q(e.table)) WHERE typeof(Z_PK) = 'integer'").int ?? 0
            // Keys stored as text compare above every integer in SQLite: describe them as they are.
            let text = try connection.rows("SELECT count(*), max(CAST(Z_PK AS INTEGER)) FROM \(q(e.table)) WHERE typeof(Z_PK) = 'text'").first
            let textKeys = text?[0].int ?? 0
            let textMax = text?[1].int ?? 0
            let maxPK = max(integerMax, textMax)
            var evidence: [String: EvidenceValue] = ["zMax": .int(zMax), "maxPK": .int(maxPK), "pks": .keys(keys), "count": .int(count), "table": .string(e.table)]
            var detail = "max Z_PK \(maxPK)"
            if textKeys > 0 {
                evidence["textKeys"] = .int(textKeys)
                detail = textKeys == count
                    ? "their Z_PK is stored as text, keys up to '\(textMax)'"
                    : "\(plural(textKeys, "row")) with Z_PK stored as text, up to '\(textMax)'; max integer Z_PK \(integerMax)"
            }
            result.append(finding(.zMax, .error, entity: e.name,
                                  "Z_MAX of \(e.name) is \(zMax) but \(e.table) holds \(plural(count, "row")) above it (\(detail)).",
                                  evidence: evidence,
                                  explanation: "Core Data allocates the next primary key from Z_MAX: the next insert collides with an existing row and the save fails or the app crashes.",
                                  suggestion: "`storelens repair --only zmax-below-max-pk` raises Z_MAX to \(maxPK)."))
        }
        return result
    }
}
