import Acquisition
import Checks
import CoreDataStore
import SQLiteAccess

/// The repair's own proof that it lost nothing, computed by SQLite from the store before and the
/// written output, not from the planner's counts: no table lost a row unless an action deletes
/// from it; relationship columns no action names kept every value; no to-one reference to a row
/// that exists (by Z_PK, whatever its Z_ENT) became NULL; no join row between two rows that both
/// exist disappeared.
enum RepairProof {
    static let schema = "storelens_before"

    /// The problems found (empty: proven). `db` is a connection to the output; `before` is the
    /// store the plan was made from, attached with its WAL applied (read where it lies, or its copy).
    static func problems(plan: RepairPlan, map: SchemaMap, db: Connection, before: WorkingCopy) throws -> [String] {
        try before.attachWALView(to: db, as: schema)
        defer { try? db.execute("DETACH DATABASE \(schema)") }
        func q(_ s: String) -> String { Identifier.quoted(s) }
        func count(_ sql: String) throws -> Int { try db.scalar(sql).int ?? 0 }
        let b = q(schema)
        var problems: [String] = []
        let deleting = Set(plan.actions.flatMap(\.deletesFrom))
        let named = Set(plan.actions.flatMap(\.columns))
        let outputTables = Set(try db.tableNames())

        // 1. Rows per table, before and after.
        for row in try db.rows("SELECT name FROM \(b).sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name") {
            guard let table = row[0].string else { continue }
            guard outputTables.contains(table) else { problems.append("table \(table) is missing from the output"); continue }
            let was = try count("SELECT count(*) FROM \(b).\(q(table))"), now = try count("SELECT count(*) FROM main.\(q(table))")
            if now < was && !deleting.contains(table) {
                problems.append("\(table) lost \(was - now) of its \(was) rows though no action deletes from it")
            }
        }

        // 2. To-one columns: unchanged unless named; never NULLed while the target row exists.
        for (source, r) in InvariantQueries.declaredRelationships(map) where r.kind == .toOne {
            guard let column = r.column, source.tableExists, outputTables.contains(source.table),
                  let dest = map.entity(named: r.relationship.destination), dest.tableExists, outputTables.contains(dest.table) else { continue }
            let s = q(source.table), c = q(column)
            let pairs = "\(b).\(s) o JOIN main.\(s) n ON n.Z_PK = o.Z_PK"
            if !named.contains("\(source.table).\(column)") {
                let changed = try count("SELECT count(*) FROM \(pairs) WHERE n.\(c) IS NOT o.\(c)")
                if changed > 0 { problems.append("\(changed) values of \(source.entity.name).\(r.relationship.name) changed though no action names \(source.table).\(column)") }
            }
            let nulled = try count("""
                SELECT count(*) FROM \(pairs) WHERE o.\(c) IS NOT NULL AND n.\(c) IS NULL
                AND EXISTS (SELECT 1 FROM main.\(q(dest.table)) t WHERE t.Z_PK = o.\(c))
                """)
            if nulled > 0 { problems.append("\(nulled) references of \(source.entity.name).\(r.relationship.name) to rows that exist were set to NULL") }
        }

        // 3. Join rows: none removed between two rows that both still exist.
        var seen = Set<String>()
        for (source, r) in InvariantQueries.declaredRelationships(map) where r.kind == .manyToMany {
            guard let join = r.joinTable, let sc = r.joinSourceColumn, let dc = r.joinDestinationColumn, seen.insert(join).inserted,
                  let dest = map.entity(named: r.relationship.destination), outputTables.contains(join),
                  outputTables.contains(source.table), outputTables.contains(dest.table) else { continue }
            let removed = try count("""
                SELECT count(*) FROM \(b).\(q(join)) o
                WHERE NOT EXISTS (SELECT 1 FROM main.\(q(join)) n WHERE n.\(q(sc)) IS o.\(q(sc)) AND n.\(q(dc)) IS o.\(q(dc)))
                AND EXISTS (SELECT 1 FROM main.\(q(source.table)) s WHERE s.Z_PK = o.\(q(sc)))
                AND EXISTS (SELECT 1 FROM main.\(q(dest.table)) t WHERE t.Z_PK = o.\(q(dc)))
                """)
            if removed > 0 { problems.append("\(removed) rows of \(join) between rows that both exist were removed") }
        }
        return problems
    }
}
