import Checks
import CoreDataStore
import Findings
import SQLiteAccess

/// Turns check findings into a plan of repairs, using the same SQL that found the rows.
///
/// Rules the plan never breaks: Z_ENT is never renumbered, history tables are never dropped,
/// every changed row's Z_OPT is bumped (so other contexts see the change), and Z_METADATA and
/// Z_MODELCACHE are kept as they are.
public struct RepairPlanner {
    public let opened: OpenedStore
    public var keep: KeepRule = .highestOpt
    public var limit = 20

    public init(opened: OpenedStore) { self.opened = opened }

    var connection: Connection { opened.connection }
    func q(_ s: String) -> String { Identifier.quoted(s) }

    /// Bumps Z_OPT (so other contexts see the change) without SQLite's overflow into a REAL: a
    /// version already at the largest integer, or not an integer at all, starts again at 1, which
    /// still differs from what any context holds.
    public static let bumpZOpt = "Z_OPT = CASE WHEN typeof(Z_OPT) = 'integer' AND Z_OPT < 9223372036854775807 THEN Z_OPT + 1 ELSE 1 END"

    /// `first + count - 1`, the last of `count` new keys from `first`, or nil when it does not fit.
    public static func lastKey(from first: Int64, count: Int) -> Int64? {
        guard count > 0, let n = Int64(exactly: count) else { return count == 0 ? first : nil }
        let (last, overflow) = first.addingReportingOverflow(n - 1)
        return overflow ? nil : last
    }

    /// `count` new primary keys above both the stored Z_MAX and the largest Z_PK in use (either can
    /// be anything a device wrote), or `noRoomForKeys` when they would reach SQLite's largest
    /// integer: the last one must stay below it, so the app's next insert still gets a key
    /// (a repaired store whose key space is used up would be `zmax-exhausted`).
    public static func allocateKeys(zMax: Int64, maxPK: Int64, count: Int, store: String, entity: String) throws(RepairError) -> ClosedRange<Int64> {
        let highest = max(zMax, maxPK, 0)
        guard count > 0, let first = nextKey(after: highest), let last = lastKey(from: first, count: count), last < Int64.max else {
            throw RepairError.noRoomForKeys(store: store, entity: entity, value: highest, needed: count)
        }
        return first...last
    }

    /// The first free key above `highest`, or nil when `highest` is already SQLite's largest integer.
    public static func nextKey(after highest: Int64) -> Int64? {
        let (next, overflow) = highest.addingReportingOverflow(1)
        return overflow ? nil : next
    }

    /// The plan for `findings`, restricted to `only` (finding ids) when given.
    public func plan(for findings: [Finding], only: Set<String>? = nil) throws -> RepairPlan {
        let wanted = findings.filter { only?.contains($0.id) ?? true }
        let ids = Set(wanted.map(\.id))
        var actions: [RepairPlan.Action] = []
        var notes: [String] = []
        // The cause first: targets that exist under a wrong Z_ENT get the right one when it is clear.
        if ids.contains(StoreChecker.Check.wrongEntityTarget.rawValue) { actions += try correctTargetEntities(notes: &notes) }
        if ids.contains(StoreChecker.Check.uniqueDuplicates.rawValue) { actions += try resolveDuplicates() }
        if ids.contains(StoreChecker.Check.danglingToOne.rawValue) { actions += try nullifyDangling() }
        if ids.contains(StoreChecker.Check.entityKeyMismatch.rawValue) { actions += try fixEntityKeys() }
        if ids.contains(StoreChecker.Check.oneToOneMismatch.rawValue) { actions += try alignOneToOne() }
        if ids.contains(StoreChecker.Check.orphanJoinRows.rawValue) { actions += try deleteOrphanJoinRows() }
        if ids.contains(StoreChecker.Check.badZOpt.rawValue) { actions += try setZOpt() }
        // Raising Z_MAX comes last: the other actions never insert, but it must see the final rows.
        if ids.contains(StoreChecker.Check.zMax.rawValue) { actions += try raiseZMax(notes: &notes) }
        let answered = Set(actions.map(\.answers))
        var plan = RepairPlan(actions: actions, unrepaired: wanted.filter { !answered.contains($0.id) }, notes: notes)
        // Z_DA_<TABLE>_<Entity>_<attribute>_…: a write to TABLE would fire it (ios17-derived-attributes).
        let touched = plan.touchedTables
        plan.derivedNotRecomputed = opened.map.derivedAttributeTriggers.filter { d in
            d.triggers.contains { t in touched.contains { t.hasPrefix("Z_DA_\($0)_") } }
        }.map { "\($0.entity).\($0.attribute) = \($0.derivation)" }
        return plan
    }

    // MARK: - Helpers

    func keys(_ sql: String, _ arguments: [DatabaseValue] = []) throws -> (keys: [String], count: Int) {
        let count = try connection.scalar("SELECT count(*) FROM (\(sql))", arguments).int ?? 0
        let keys = try connection.rows("SELECT * FROM (\(sql)) LIMIT \(limit)", arguments).map { $0[0].int.map(String.init) ?? "?" }
        return (keys, count)
    }

    func action(_ name: String, answers: StoreChecker.Check, entity: String?, tables: [String], _ summary: String,
                keys: (keys: [String], count: Int), _ statements: [RepairPlan.Statement],
                columns: [String] = [], deletesFrom: [String] = []) -> RepairPlan.Action {
        RepairPlan.Action(name: name, answers: answers.rawValue, entity: entity, tables: tables, summary: summary,
                          affected: keys.keys, count: keys.count, statements: statements, columns: columns, deletesFrom: deletesFrom)
    }

    func mapping(_ name: String) -> EntityMapping? { opened.map.entity(named: name) }

    // MARK: - Actions

    func raiseZMax(notes: inout [String]) throws -> [RepairPlan.Action] {
        var result: [RepairPlan.Action] = []
        for e in opened.store.entities where e.superNumber == 0 && e.tableExists {
            let zMax = e.zMax ?? 0
            let found = try keys(InvariantQueries.aboveZMax(table: e.table), [.integer(Int64(zMax))])
            guard found.count > 0 else { continue }
            // Keys stored as text (a table rebuilt by hand) sort above every integer: no Z_MAX covers
            // them, and a plan that claimed to would only fail its own verification.
            let textKeys = try connection.scalar("SELECT count(*) FROM \(q(e.table)) WHERE Z_PK IS NOT NULL AND typeof(Z_PK) != 'integer'").int ?? 0
            guard textKeys == 0 else {
                notes.append("zmax-below-max-pk: \(textKeys) Z_PK values of \(e.table) are not stored as integers, so no Z_MAX can be above them; Z_MAX of \(e.name) is left as it is.")
                continue
            }
            let maxPK = try connection.scalar("SELECT max(Z_PK) FROM \(q(e.table))").int ?? zMax
            result.append(action("raise-z-max", answers: .zMax, entity: e.name, tables: ["Z_PRIMARYKEY"],
                                 "Set Z_MAX of \(e.name) from \(zMax) to \(maxPK), so the next insert gets a free primary key.",
                                 keys: found, [.init(sql: "UPDATE Z_PRIMARYKEY SET Z_MAX = ? WHERE Z_ENT = ?", integers: [Int64(maxPK), Int64(e.number)])]))
        }
        return result
    }

    /// Targets that exist by Z_PK under a Z_ENT outside their table's entity tree get the entity
    /// the relationships pointing at them name, when that is unambiguous: every reference agrees
    /// (through its entity key, or a destination without subentities), and the stray value is no
    /// entity's number. Anything else is left alone with a note; it is never nulled.
    func correctTargetEntities(notes: inout [String]) throws -> [RepairPlan.Action] {
        var result: [RepairPlan.Action] = []
        let relationships = InvariantQueries.declaredRelationships(opened.map).filter { $0.1.kind == .toOne }
        let known = opened.store.entities.map(\.number)
        for root in opened.store.entities where root.superNumber == 0 && root.tableExists {
            let t = q(root.table)
            var candidates: [String] = []
            var names: [String] = []
            for (source, r) in relationships {
                guard let column = r.column, source.tableExists, let dest = mapping(r.relationship.destination), dest.table == root.table,
                      try connection.scalar("SELECT count(*) FROM (\(InvariantQueries.wrongEntityTarget(source: source, column: column, dest: dest).rows))").int ?? 0 > 0
                else { continue }
                let numbers = dest.entityNumbers.map(String.init).joined(separator: ", ")
                let candidate: String
                if dest.entityNumbers.count == 1 {
                    candidate = String(dest.entityNumbers[0])
                } else if let fek = r.entityKeyColumn {
                    candidate = "CASE WHEN s.\(q(fek)) IN (\(numbers)) THEN s.\(q(fek)) END"
                } else {
                    candidate = "NULL"
                }
                candidates.append("""
                    SELECT s.\(q(column)) AS pk, \(candidate) AS ent FROM \(q(source.table)) s CROSS JOIN \(t) t ON t.Z_PK = s.\(q(column))
                    WHERE s.Z_ENT IN (\(source.entityNumbers.map(String.init).joined(separator: ", "))) AND (t.Z_ENT IS NULL OR t.Z_ENT NOT IN (\(numbers)))
                    """)
                names.append("\(source.entity.name).\(r.relationship.name)")
            }
            guard !candidates.isEmpty else { continue }
            let union = candidates.joined(separator: " UNION ALL ")
            let knownList = known.map(String.init).joined(separator: ", ")
            // One entity per target, agreed by every reference, replacing a value no entity has.
            let decided = """
                SELECT c.pk, min(c.ent) AS ent, count(c.ent) = count(*) AND count(DISTINCT c.ent) = 1
                    AND (t.Z_ENT IS NULL OR t.Z_ENT NOT IN (\(knownList))) AS clear
                FROM (\(union)) c JOIN \(t) t ON t.Z_PK = c.pk GROUP BY c.pk
                """
            let targets = try connection.scalar("SELECT count(*) FROM (\(decided))").int ?? 0
            let unclear = try connection.scalar("SELECT count(*) FROM (\(decided)) WHERE NOT clear").int ?? 0
            let rows = try connection.scalar("SELECT count(*) FROM \(t)").int ?? 0
            let stray = try connection.scalar("SELECT count(*) FROM \(t) WHERE Z_ENT IS NULL OR Z_ENT NOT IN (\(root.subtreeNumbers.map(String.init).joined(separator: ", ")))").int ?? 0
            guard unclear == 0, stray < rows else {
                notes.append(unclear > 0
                    ? "target-wrong-entity: \(unclear) of the \(targets) \(root.table) rows that \(names.joined(separator: ", ")) point at carry another entity's Z_ENT, or the references disagree on which entity they are; their Z_ENT is left as it is and the references are kept."
                    : "target-wrong-entity: every row of \(root.table) carries a Z_ENT outside \(root.name)'s entity tree, so the numbering (Z_PRIMARYKEY or the model), not the rows, is likely wrong; nothing is changed and the references are kept.")
                continue
            }
            let found = try keys("SELECT pk FROM (\(decided)) ORDER BY pk")
            result.append(action("correct-target-entity", answers: .wrongEntityTarget, entity: root.name, tables: [root.table],
                                 "Give the \(root.table) rows that \(names.joined(separator: ", ")) point at the Z_ENT those references name (their own is no entity's number); the references are kept.",
                                 keys: found, [
                                    .init(sql: "CREATE TEMP TABLE IF NOT EXISTS storelens_ent (pk INTEGER PRIMARY KEY, ent INTEGER)", arguments: []),
                                    .init(sql: "DELETE FROM storelens_ent", arguments: []),
                                    .init(sql: "INSERT INTO storelens_ent SELECT pk, ent FROM (\(decided)) WHERE clear", arguments: []),
                                    .init(sql: """
                                        UPDATE \(t) SET Z_ENT = (SELECT ent FROM storelens_ent e WHERE e.pk = \(t).Z_PK), \(Self.bumpZOpt)
                                        WHERE Z_PK IN (SELECT pk FROM storelens_ent)
                                        """, arguments: []),
                                 ]))
        }
        return result
    }

    func nullifyDangling() throws -> [RepairPlan.Action] {
        var result: [RepairPlan.Action] = []
        for (source, r) in InvariantQueries.declaredRelationships(opened.map) where r.kind == .toOne {
            guard let column = r.column, source.tableExists, let dest = mapping(r.relationship.destination), dest.tableExists else { continue }
            let select = InvariantQueries.danglingToOne(source: source, column: column, dest: dest).rows
            let found = try keys(select)
            guard found.count > 0 else { continue }
            let cleared = [column, r.entityKeyColumn, r.orderColumn].compactMap { $0 }
            let sets = cleared.map { "\(q($0)) = NULL" }.joined(separator: ", ")
            result.append(action("nullify-dangling-to-one", answers: .danglingToOne, entity: source.entity.name, tables: [source.table],
                                 "Set \(source.entity.name).\(r.relationship.name) to nil where its target row is missing (\(cleared.joined(separator: ", "))).",
                                 keys: found, [.init(sql: "UPDATE \(q(source.table)) SET \(sets), \(Self.bumpZOpt) WHERE Z_PK IN (\(select))", arguments: [])],
                                 columns: cleared.map { "\(source.table).\($0)" }))
        }
        return result
    }

    func fixEntityKeys() throws -> [RepairPlan.Action] {
        var result: [RepairPlan.Action] = []
        for (source, r) in InvariantQueries.declaredRelationships(opened.map) where r.kind == .toOne {
            guard let column = r.column, let fek = r.entityKeyColumn, source.tableExists, let dest = mapping(r.relationship.destination), dest.tableExists else { continue }
            let select = InvariantQueries.entityKeyMismatch(source: source, column: column, entityKey: fek, dest: dest)
            let found = try keys(select)
            guard found.count > 0 else { continue }
            let t = q(source.table)
            result.append(action("fix-entity-key", answers: .entityKeyMismatch, entity: source.entity.name, tables: [source.table],
                                 "Copy the target row's Z_ENT into \(source.entity.name).\(fek).",
                                 keys: found, [.init(sql: """
                                    UPDATE \(t) SET \(q(fek)) = (SELECT d.Z_ENT FROM \(q(dest.table)) d WHERE d.Z_PK = \(t).\(q(column))),
                                    \(Self.bumpZOpt) WHERE Z_PK IN (\(select))
                                    """, arguments: [])], columns: ["\(source.table).\(fek)"]))
        }
        return result
    }

    func alignOneToOne() throws -> [RepairPlan.Action] {
        var result: [RepairPlan.Action] = []
        for (source, r) in InvariantQueries.declaredRelationships(opened.map) where r.kind == .toOne {
            guard let inverseName = r.relationship.inverse, let column = r.column, let dest = mapping(r.relationship.destination),
                  let inverse = dest.relationships.first(where: { $0.relationship.name == inverseName }), inverse.kind == .toOne,
                  let inverseColumn = inverse.column, source.tableExists, dest.tableExists,
                  (source.entity.name, r.relationship.name) < (dest.entity.name, inverseName) else { continue }
            let select = InvariantQueries.oneToOneMismatch(source: source, column: column, dest: dest, inverseColumn: inverseColumn)
            let found = try keys(select)
            guard found.count > 0 else { continue }
            let d = q(dest.table), s = q(source.table)
            // The side that holds a pointer wins; when several rows point at one target, the newest does.
            result.append(action("align-one-to-one", answers: .oneToOneMismatch, entity: dest.entity.name, tables: [dest.table],
                                 "Make \(dest.entity.name).\(inverseName) point back at the \(source.entity.name) row whose \(r.relationship.name) points at it.",
                                 keys: found, [.init(sql: """
                                    UPDATE \(d) SET \(q(inverseColumn)) = (SELECT max(s.Z_PK) FROM \(s) s WHERE s.Z_PK IN (\(select)) AND s.\(q(column)) = \(d).Z_PK),
                                    \(Self.bumpZOpt)
                                    WHERE Z_PK IN (SELECT s.\(q(column)) FROM \(s) s WHERE s.Z_PK IN (\(select)))
                                    """, arguments: [])], columns: ["\(dest.table).\(inverseColumn)"]))
        }
        return result
    }

    func deleteOrphanJoinRows() throws -> [RepairPlan.Action] {
        var result: [RepairPlan.Action] = []
        var seen = Set<String>()
        for (source, r) in InvariantQueries.declaredRelationships(opened.map) where r.kind == .manyToMany {
            guard let join = r.joinTable, let sc = r.joinSourceColumn, let dc = r.joinDestinationColumn, seen.insert(join).inserted,
                  let dest = mapping(r.relationship.destination), try connection.tableExists(join) else { continue }
            let key = try connection.rowKey(of: join)
            let select = InvariantQueries.orphanJoinRows(join: join, key: key, sourceColumn: sc, source: source, destColumn: dc, dest: dest)
            let found = try keys(select)
            guard found.count > 0 else { continue }
            result.append(action("delete-orphan-join-rows", answers: .orphanJoinRows, entity: source.entity.name, tables: [join],
                                 "Delete the rows of \(join) (\(source.entity.name).\(r.relationship.name)) whose other side is missing.",
                                 keys: found, [.init(sql: "DELETE FROM \(q(join)) WHERE \(InvariantQueries.keyExpression(key)) IN (\(select))", arguments: [])],
                                 deletesFrom: [join]))
        }
        return result
    }

    func setZOpt() throws -> [RepairPlan.Action] {
        var result: [RepairPlan.Action] = []
        for e in opened.store.entities where e.kind == .user && e.superNumber == 0 && e.tableExists {
            let select = InvariantQueries.badZOpt(table: e.table).rows
            guard try connection.columns(of: e.table).contains(where: { $0.name == "Z_OPT" }) else { continue }
            let found = try keys(select)
            guard found.count > 0 else { continue }
            result.append(action("set-z-opt", answers: .badZOpt, entity: e.name, tables: [e.table],
                                 "Set Z_OPT to 1 where it is NULL or not positive.",
                                 keys: found, [.init(sql: "UPDATE \(q(e.table)) SET Z_OPT = 1 WHERE Z_PK IN (\(select))", arguments: [])]))
        }
        return result
    }

    /// Keeps one row per duplicate value (by the keep rule), re-points to-one keys and join rows
    /// that referenced the removed rows at the kept one, then deletes the removed rows.
    func resolveDuplicates() throws -> [RepairPlan.Action] {
        var result: [RepairPlan.Action] = []
        let order: String
        switch keep {
        case .highestOpt: order = "coalesce(Z_OPT, 0) DESC, Z_PK DESC"
        case .newest: order = "Z_PK DESC"
        case .oldest: order = "Z_PK ASC"
        }
        for e in opened.map.entities where e.tableExists {
            for constraint in e.entity.uniqueConstraints {
                guard let columns = InvariantQueries.uniqueColumns(e, constraint) else { continue }
                let dupRows = InvariantQueries.duplicateRows(entity: e, columns: columns)
                guard try connection.scalar("SELECT count(*) FROM (\(dupRows))").int ?? 0 > 0 else { continue }
                // loser → winner pairs, computed once into a temporary table inside the transaction.
                let partition = columns.map(q).joined(separator: ", ")
                let pairs = """
                    SELECT Z_PK AS loser, first_value(Z_PK) OVER (PARTITION BY \(partition) ORDER BY \(order)) AS winner
                    FROM \(q(e.table)) WHERE Z_PK IN (\(dupRows))
                    """
                let losers = try keys("SELECT loser FROM (\(pairs)) WHERE loser != winner ORDER BY loser")
                var statements: [RepairPlan.Statement] = [
                    .init(sql: "CREATE TEMP TABLE IF NOT EXISTS storelens_dup (loser INTEGER PRIMARY KEY, winner INTEGER)", arguments: []),
                    .init(sql: "DELETE FROM storelens_dup", arguments: []),
                    .init(sql: "INSERT INTO storelens_dup SELECT loser, winner FROM (\(pairs)) WHERE loser != winner", arguments: []),
                ]
                let (more, tables) = try Self.repointAndDelete(entity: e, map: opened.map, connection: connection)
                statements += more
                result.append(action("resolve-duplicates", answers: .uniqueDuplicates, entity: e.entity.name, tables: tables,
                                     "Keep one \(e.entity.name) per \(constraint.joined(separator: ", ")) (\(keep.rawValue)); point references to it and delete the others.",
                                     keys: losers, statements, columns: Self.repointedColumns(entity: e, map: opened.map), deletesFrom: tables))
            }
        }
        return result
    }

    /// The to-one columns `repointAndDelete` rewrites (`TABLE.COLUMN`), for verification.
    public static func repointedColumns(entity e: EntityMapping, map: SchemaMap) -> [String] {
        InvariantQueries.declaredRelationships(map).compactMap { source, r in
            guard r.kind == .toOne, let column = r.column, source.tableExists, map.entity(named: r.relationship.destination)?.table == e.table else { return nil }
            return "\(source.table).\(column)"
        }
    }

    /// With `storelens_dup (loser, winner)` filled: points to-one keys and join rows that reference a
    /// loser at its winner, bumps the winners' Z_OPT and deletes the losers. Shared by the uniqueness
    /// repair and the manifest's removal of double imports.
    public static func repointAndDelete(entity e: EntityMapping, map: SchemaMap, connection: Connection) throws -> ([RepairPlan.Statement], [String]) {
        func q(_ s: String) -> String { Identifier.quoted(s) }
        var statements: [RepairPlan.Statement] = []
        var tables = [e.table]
        // To-one keys anywhere that point at a removed row now point at the kept one.
        for (source, r) in InvariantQueries.declaredRelationships(map) where r.kind == .toOne {
            guard let column = r.column, source.tableExists, let dest = map.entity(named: r.relationship.destination), dest.table == e.table else { continue }
            let s = q(source.table), c = q(column)
            statements.append(.init(sql: """
                UPDATE \(s) SET \(c) = (SELECT winner FROM storelens_dup WHERE loser = \(s).\(c)), \(Self.bumpZOpt)
                WHERE \(c) IN (SELECT loser FROM storelens_dup) AND Z_PK NOT IN (SELECT loser FROM storelens_dup)
                """, arguments: []))
            tables.append(source.table)
        }
        // Join rows move to the kept row (dropping pairs the kept row already has).
        for (source, r) in InvariantQueries.declaredRelationships(map) where r.kind == .manyToMany {
            guard let join = r.joinTable, let sc = r.joinSourceColumn, let dc = r.joinDestinationColumn, try connection.tableExists(join) else { continue }
            for (column, entityTable) in [(sc, source.table), (dc, map.entity(named: r.relationship.destination)?.table)] where entityTable == e.table {
                let other = column == sc ? dc : sc
                statements.append(.init(sql: """
                    INSERT OR IGNORE INTO \(q(join)) (\(q(column)), \(q(other)))
                    SELECT d.winner, j.\(q(other)) FROM \(q(join)) j JOIN storelens_dup d ON d.loser = j.\(q(column))
                    """, arguments: []))
                statements.append(.init(sql: "DELETE FROM \(q(join)) WHERE \(q(column)) IN (SELECT loser FROM storelens_dup)", arguments: []))
                tables.append(join)
            }
        }
        statements.append(.init(sql: "UPDATE \(q(e.table)) SET \(Self.bumpZOpt) WHERE Z_PK IN (SELECT winner FROM storelens_dup)", arguments: []))
        statements.append(.init(sql: "DELETE FROM \(q(e.table)) WHERE Z_PK IN (SELECT loser FROM storelens_dup)", arguments: []))
        return (statements, Array(Set(tables)).sorted())
    }
}
