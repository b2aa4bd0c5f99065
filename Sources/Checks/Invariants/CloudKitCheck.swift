import Acquisition
import CoreDataStore
import Findings
import Foundation
import SQLiteAccess
import StoreFormats

extension StoreChecker {
    func cloudKit() throws -> [Finding] {
        guard try connection.tableExists("ANSCKRECORDMETADATA") else { return [] }
        let columns = Set(try connection.columns(of: "ANSCKRECORDMETADATA").map(\.name))
        guard columns.contains("ZENTITYID"), columns.contains("ZENTITYPK") else { return [] }
        var parts: [String] = []
        for e in userEntities where e.tableExists {
            parts.append("(m.ZENTITYID = \(e.number) AND NOT EXISTS (SELECT 1 FROM \(q(e.table)) t WHERE t.Z_PK = m.ZENTITYPK AND t.Z_ENT = \(e.number)))")
        }
        let known = inList(userEntities.filter(\.tableExists).map(\.number))
        parts.append("(m.ZENTITYID NOT IN (\(known)))")
        let (keys, count) = try self.keys("SELECT m.Z_PK FROM ANSCKRECORDMETADATA m WHERE \(parts.joined(separator: " OR ")) ORDER BY m.Z_PK")
        guard count > 0 else { return [] }
        return [finding(.cloudKitOrphan, .warning, entity: nil, "\(plural(count, "CloudKit record metadata row")) point at rows that no longer exist.",
                        evidence: ["pks": .keys(keys), "count": .int(count)],
                        explanation: "Orphaned mirroring metadata breaks later migrations (UNIQUE constraint failed: ANSCKRECORDMETADATA.ZENTITYID, ZENTITYPK).",
                        suggestion: nil)]
    }
}
