import CoreDataStore
import SQLiteAccess

/// The SQL that selects the rows breaking each invariant. `check` counts and lists them;
/// `repair` updates or deletes exactly the same rows, so the two can never disagree.
///
/// Shaped for SQLite's planner on large stores (measured on the 1,000,000-row bench store):
/// - The scanned entity table is `NOT INDEXED`. Its `Z_ENT` index looks attractive for
///   `Z_ENT IN (…)`, but nearly every row matches, and an index walk plus a table lookup per row
///   costs about five times a plain scan (233 ms against 45 ms for 1,000,000 notes).
/// - Lookups are joins, not correlated `NOT EXISTS` subqueries: a LEFT JOIN on the target's
///   INTEGER PRIMARY KEY finds the same rows (the key is unique and never NULL in a match) at a
///   third of the cost. `CROSS JOIN` keeps the scanned table outermost.
public enum InvariantQueries {
    static func q(_ name: String) -> String { Identifier.quoted(name) }
    static func list(_ numbers: [Int]) -> String { numbers.isEmpty ? "NULL" : numbers.map(String.init).joined(separator: ", ") }

    /// Rows of `table` above `Z_MAX`.
    public static func aboveZMax(table: String) -> String {
        "SELECT Z_PK FROM \(q(table)) WHERE Z_PK > ? ORDER BY Z_PK"
    }

    /// A condition on single rows of one table (`s`), perhaps with the rows other tables hold under
    /// its keys (`lookups`), and the query listing the rows that meet it. `check` counts
    /// several of them in one scan of the table (`StoreChecker`'s row screen) and lists rows only
    /// for those that matched; `repair` selects the rows it changes with `rows`. All use this text,
    /// so they cannot disagree.
    public struct RowCondition: Hashable, Sendable {
        public let table: String
        /// The rows of other tables this condition reads, each joined by its Z_PK.
        public let lookups: [Lookup]
        /// SQL over the table's row as `s` and each looked-up row as its `alias`.
        public let condition: String

        public init(table: String, lookups: [Lookup] = [], condition: String) {
            self.table = table
            self.lookups = lookups
            self.condition = condition
        }

        /// The scanned table and the lookups' joins, as a FROM clause.
        public var from: String { Self.from(table, lookups) }

        static func from(_ table: String, _ lookups: [Lookup]) -> String {
            (["\(q(table)) AS s NOT INDEXED"] + lookups.map(\.join)).joined(separator: " ")
        }

        /// The matching rows' primary keys, in order (a table with Z_PK; a join table's rows are
        /// listed by `orphanJoinRows`).
        public var rows: String { "SELECT s.Z_PK FROM \(from) WHERE \(condition) ORDER BY s.Z_PK" }
    }

    /// The row of `table` whose Z_PK is the scanned row's `column` (a to-one key, a history
    /// change's transaction), NULL in every column when there is none. A LEFT JOIN on the
    /// target's INTEGER PRIMARY KEY finds the same rows as a correlated `NOT EXISTS` at a third of
    /// the cost.
    public struct Lookup: Hashable, Sendable {
        public let table: String
        public let column: String

        /// The joined row's name in the condition: quoted, with a space no table's alias `s` has.
        public var alias: String { q("\(table) by \(column)") }
        var join: String { "LEFT JOIN \(q(table)) AS \(alias) ON \(alias).Z_PK = s.\(q(column))" }
    }

    /// Rows of a root entity's table whose Z_ENT is NULL or outside the entity's tree.
    public static func unknownEntity(table: String, allowed: [Int]) -> RowCondition {
        RowCondition(table: table, condition: "s.Z_ENT IS NULL OR s.Z_ENT NOT IN (\(list(allowed)))")
    }

    /// Rows of `entity` (and its subentities) whose `column` is NULL.
    public static func nullColumn(entity: EntityMapping, column: String) -> RowCondition {
        RowCondition(table: entity.table, condition: "s.Z_ENT IN (\(list(entity.entityNumbers))) AND s.\(q(column)) IS NULL")
    }

    /// Rows with a NULL or non-positive Z_OPT.
    public static func badZOpt(table: String) -> RowCondition {
        RowCondition(table: table, condition: "s.Z_OPT IS NULL OR s.Z_OPT <= 0")
    }

    /// History changes naming no entity of Z_PRIMARYKEY.
    public static let historyUnknownEntity =
        RowCondition(table: "ACHANGE", condition: "s.ZENTITY IS NULL OR s.ZENTITY NOT IN (SELECT Z_ENT FROM Z_PRIMARYKEY)")

    /// History changes whose transaction does not exist.
    public static let historyMissingTransaction =
        RowCondition(table: "ACHANGE", lookups: [Lookup(table: "ATRANSACTION", column: "ZTRANSACTIONID")],
                     condition: "\(Lookup(table: "ATRANSACTION", column: "ZTRANSACTIONID").alias).Z_PK IS NULL")

    /// Rows of `source` whose to-one key points at no row of `dest`'s table at all. A row that is
    /// there under another Z_ENT is not missing (see `wrongEntityTarget`): a repair that treated it
    /// as missing would drop a reference to a row that exists.
    public static func danglingToOne(source: EntityMapping, column: String, dest: EntityMapping) -> RowCondition {
        let target = Lookup(table: dest.table, column: column)
        return RowCondition(table: source.table, lookups: [target],
                            condition: "s.Z_ENT IN (\(list(source.entityNumbers))) AND s.\(q(column)) IS NOT NULL AND \(target.alias).Z_PK IS NULL")
    }

    /// Rows of `source` whose to-one key points at a row of `dest`'s table that exists but whose
    /// Z_ENT is not `dest` or one of its subentities (a stray value, or another entity's number).
    public static func wrongEntityTarget(source: EntityMapping, column: String, dest: EntityMapping) -> RowCondition {
        let target = Lookup(table: dest.table, column: column)
        let t = target.alias
        return RowCondition(table: source.table, lookups: [target],
                            condition: "s.Z_ENT IN (\(list(source.entityNumbers))) AND \(t).Z_PK IS NOT NULL AND (\(t).Z_ENT IS NULL OR \(t).Z_ENT NOT IN (\(list(dest.entityNumbers))))")
    }

    /// Rows of `source` whose entity key disagrees with the target row's Z_ENT (targets whose own
    /// Z_ENT is wrong are `wrongEntityTarget`'s: copying their value would spread the damage).
    public static func entityKeyMismatch(source: EntityMapping, column: String, entityKey: String, dest: EntityMapping) -> String {
        """
        SELECT s.Z_PK FROM \(q(source.table)) s NOT INDEXED CROSS JOIN \(q(dest.table)) t ON t.Z_PK = s.\(q(column))
        WHERE s.Z_ENT IN (\(list(source.entityNumbers))) AND t.Z_ENT IN (\(list(dest.entityNumbers)))
        AND (s.\(q(entityKey)) IS NULL OR s.\(q(entityKey)) != t.Z_ENT) ORDER BY s.Z_PK
        """
    }

    /// Rows of `source` pointing at a `dest` row whose inverse key does not point back.
    public static func oneToOneMismatch(source: EntityMapping, column: String, dest: EntityMapping, inverseColumn: String) -> String {
        """
        SELECT s.Z_PK FROM \(q(source.table)) s NOT INDEXED CROSS JOIN \(q(dest.table)) t ON t.Z_PK = s.\(q(column))
        WHERE s.Z_ENT IN (\(list(source.entityNumbers))) AND (t.\(q(inverseColumn)) IS NULL OR t.\(q(inverseColumn)) != s.Z_PK)
        ORDER BY s.Z_PK
        """
    }

    /// `key` (from `Connection.rowKey`) as one SQL value: `rowid`, a column, or a row value `(a, b)`.
    public static func keyExpression(_ key: [String], alias: String? = nil) -> String {
        let prefix = alias.map { "\($0)." } ?? ""
        let columns = key.map { $0 == "rowid" ? prefix + "rowid" : prefix + q($0) }
        return columns.count == 1 ? columns[0] : "(\(columns.joined(separator: ", ")))"
    }

    /// Join-table rows either side of which is missing from its table, as a condition a row screen
    /// counts in its scan of the join table (by Z_PK: a row there under a wrong Z_ENT still exists);
    /// `orphanJoinRows` lists the same rows.
    public static func orphanJoinCondition(join: String, sourceColumn: String, source: EntityMapping,
                                           destColumn: String, dest: EntityMapping) -> RowCondition {
        let from = Lookup(table: source.table, column: sourceColumn), to = Lookup(table: dest.table, column: destColumn)
        return RowCondition(table: join, lookups: [from, to], condition: "\(from.alias).Z_PK IS NULL OR \(to.alias).Z_PK IS NULL")
    }

    /// Join-table rows (by `key`: rowid, or the primary key of a WITHOUT ROWID table) whose either
    /// side is missing from its table (by Z_PK: a row there under a wrong Z_ENT still exists). DISTINCT: a hand-made table whose Z_PK is not unique must not list a join row twice.
    public static func orphanJoinRows(join: String, key: [String] = ["rowid"], sourceColumn: String, source: EntityMapping,
                                      destColumn: String, dest: EntityMapping) -> String {
        let selected = key.map { $0 == "rowid" ? "j.rowid" : "j.\(q($0))" }.joined(separator: ", ")
        return """
        SELECT DISTINCT \(selected) FROM \(q(join)) j NOT INDEXED
        LEFT JOIN \(q(source.table)) s ON s.Z_PK = j.\(q(sourceColumn))
        LEFT JOIN \(q(dest.table)) t ON t.Z_PK = j.\(q(destColumn))
        WHERE s.Z_PK IS NULL OR t.Z_PK IS NULL
        ORDER BY \(selected)
        """
    }

    /// Groups of rows sharing the values of a uniqueness constraint (NULLs never collide).
    public static func duplicateGroups(entity: EntityMapping, columns: [String]) -> String {
        let cols = columns.map(q).joined(separator: ", ")
        let notNull = columns.map { "\(q($0)) IS NOT NULL" }.joined(separator: " AND ")
        return """
            SELECT \(cols), count(*) AS n FROM \(q(entity.table))
            WHERE Z_ENT IN (\(list(entity.entityNumbers))) AND \(notNull) GROUP BY \(cols) HAVING count(*) > 1
            """
    }

    /// Every row that belongs to a duplicate group.
    public static func duplicateRows(entity: EntityMapping, columns: [String]) -> String {
        """
        SELECT t.Z_PK FROM \(q(entity.table)) t JOIN (\(duplicateGroups(entity: entity, columns: columns))) g
        ON \(columns.map { "t.\(q($0)) = g.\(q($0))" }.joined(separator: " AND "))
        WHERE t.Z_ENT IN (\(list(entity.entityNumbers))) ORDER BY t.Z_PK
        """
    }

}

extension InvariantQueries {
    /// The columns of a uniqueness constraint, or nil when a property has no column.
    public static func uniqueColumns(_ entity: EntityMapping, _ constraint: [String]) -> [String]? {
        let columns = constraint.compactMap { entity.attribute(named: $0)?.column ?? entity.relationship(named: $0)?.column }
        return columns.count == constraint.count && !columns.isEmpty ? columns : nil
    }

    /// Each relationship at the entity that declares it (inherited ones are not repeated).
    public static func declaredRelationships(_ map: SchemaMap) -> [(EntityMapping, RelationshipMapping)] {
        map.entities.flatMap { e in e.relationships.filter { $0.declaredBy == e.entity.name }.map { (e, $0) } }
    }
}
