import CoreDataStore
import SQLiteAccess

/// The SQL that selects the rows breaking each invariant. `check` counts and lists them;
/// `repair` updates or deletes exactly the same rows, so the two can never disagree.
public enum InvariantQueries {
    static func q(_ name: String) -> String { Identifier.quoted(name) }
    static func list(_ numbers: [Int]) -> String { numbers.isEmpty ? "NULL" : numbers.map(String.init).joined(separator: ", ") }

    /// Rows of `table` above `Z_MAX`.
    public static func aboveZMax(table: String) -> String {
        "SELECT Z_PK FROM \(q(table)) WHERE Z_PK > ? ORDER BY Z_PK"
    }

    /// Rows of `source` whose to-one key points at no row of `dest`.
    public static func danglingToOne(source: EntityMapping, column: String, dest: EntityMapping) -> String {
        """
        SELECT s.Z_PK FROM \(q(source.table)) s WHERE s.Z_ENT IN (\(list(source.entityNumbers))) AND s.\(q(column)) IS NOT NULL
        AND NOT EXISTS (SELECT 1 FROM \(q(dest.table)) t WHERE t.Z_PK = s.\(q(column)) AND t.Z_ENT IN (\(list(dest.entityNumbers)))) ORDER BY s.Z_PK
        """
    }

    /// Rows of `source` whose entity key disagrees with the target row's Z_ENT.
    public static func entityKeyMismatch(source: EntityMapping, column: String, entityKey: String, dest: EntityMapping) -> String {
        """
        SELECT s.Z_PK FROM \(q(source.table)) s JOIN \(q(dest.table)) t ON t.Z_PK = s.\(q(column))
        WHERE s.Z_ENT IN (\(list(source.entityNumbers))) AND (s.\(q(entityKey)) IS NULL OR s.\(q(entityKey)) != t.Z_ENT) ORDER BY s.Z_PK
        """
    }

    /// Rows of `source` pointing at a `dest` row whose inverse key does not point back.
    public static func oneToOneMismatch(source: EntityMapping, column: String, dest: EntityMapping, inverseColumn: String) -> String {
        """
        SELECT s.Z_PK FROM \(q(source.table)) s JOIN \(q(dest.table)) t ON t.Z_PK = s.\(q(column))
        WHERE s.Z_ENT IN (\(list(source.entityNumbers))) AND (t.\(q(inverseColumn)) IS NULL OR t.\(q(inverseColumn)) != s.Z_PK)
        ORDER BY s.Z_PK
        """
    }

    /// Join-table rows (by rowid) whose either side is missing.
    public static func orphanJoinRows(join: String, sourceColumn: String, source: EntityMapping, destColumn: String, dest: EntityMapping) -> String {
        """
        SELECT j.rowid FROM \(q(join)) j
        WHERE NOT EXISTS (SELECT 1 FROM \(q(source.table)) s WHERE s.Z_PK = j.\(q(sourceColumn)) AND s.Z_ENT IN (\(list(source.entityNumbers))))
           OR NOT EXISTS (SELECT 1 FROM \(q(dest.table)) t WHERE t.Z_PK = j.\(q(destColumn)) AND t.Z_ENT IN (\(list(dest.entityNumbers))))
        ORDER BY j.rowid
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

    /// Rows with a NULL or non-positive Z_OPT.
    public static func badZOpt(table: String) -> String {
        "SELECT Z_PK FROM \(q(table)) WHERE Z_OPT IS NULL OR Z_OPT <= 0 ORDER BY Z_PK"
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
