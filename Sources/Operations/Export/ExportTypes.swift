import CoreDataStore
import Foundation
import SQLiteAccess

/// The types and links of an export's columns, for the tools that read them (datasette facets and
/// links a column it knows is a foreign key; DB Browser and pandas read declared types): each
/// column declared by what its property holds (INTEGER, REAL, TEXT), each to-one relationship and
/// link-table side a `FOREIGN KEY … REFERENCES` the destination's table with an index, and
/// `_storelens_columns` saying what each column holds (a date is ISO 8601 UTC text, a UUID text).
///
/// A type is declared only where every value already has it: SQLite converts a value to its
/// column's type (a text "12" in an INTEGER column becomes 12), and an export never changes what
/// the store held. A column of a damaged store holding other values stays undeclared, as stored,
/// and `_storelens_columns` says so.
enum ExportTypes {
    static let table = "_storelens_columns"
    /// Where a table is rebuilt with its types before it takes its name back.
    static let building = "_storelens_typing"

    /// A link table's columns: the two sides' keys, and the order of an ordered relationship.
    static func linkColumns(left: String, source: String, right: String, destination: String, ordered: Bool) -> [Column] {
        [Column(name: left, property: nil, declared: "INTEGER", holds: "the _pk of the \(source) row", references: source),
         Column(name: right, property: nil, declared: "INTEGER", holds: "the _pk of the \(destination) row", references: destination)]
            + (ordered ? [Column(name: "order", property: nil, declared: "INTEGER", holds: "the position in the ordered relationship", references: nil)] : [])
    }

    /// What one column holds, as its property says.
    struct Column {
        let name: String
        /// The property it comes from (`Entity.property`), nil for `_pk` and link-table sides.
        let property: String?
        /// SQLite's declared type: INTEGER, REAL or TEXT ("" for a column holding anything).
        let declared: String
        /// In words, for `_storelens_columns`: "integer", "date as ISO 8601 UTC text", …
        let holds: String
        /// The entity whose table the column points into.
        let references: String?
    }

    /// The column of a property as `RowReader` reads it.
    static func column(_ name: String, for field: RowReader.Field) -> Column {
        let property = field.declaredBy + "." + field.name
        switch field.kind {
        case .attribute(let a):
            let (declared, holds) = attributeType(a.attribute.type)
            return Column(name: name, property: property, declared: declared, holds: holds, references: nil)
        case .toOne(let r):
            return Column(name: name, property: property, declared: "INTEGER", holds: "the _pk of the \(r.relationship.destination) row it points at", references: r.relationship.destination)
        case .owner(let source, _):
            return Column(name: name, property: property, declared: "INTEGER", holds: "the _pk of the \(source) row that owns this one", references: source)
        case .ownerOrder:
            return Column(name: name, property: property, declared: "INTEGER", holds: "the position in the owner's ordered relationship", references: nil)
        }
    }

    static func attributeType(_ type: ModelAttributeType) -> (declared: String, holds: String) {
        switch type {
        case .integer16, .integer32, .integer64: return ("INTEGER", "integer")
        case .boolean: return ("INTEGER", "Boolean as 0 or 1")
        case .double, .float: return ("REAL", "floating point")
        case .decimal: return ("TEXT", "decimal as text")
        case .date: return ("TEXT", "date as ISO 8601 UTC text")
        case .uuid: return ("TEXT", "UUID as text")
        case .string: return ("TEXT", "text")
        case .uri: return ("TEXT", "URI as text")
        case .binary, .transformable, .objectID, .composite: return ("TEXT", "JSON as storelens rows writes it")
        default: return ("", "as stored")
        }
    }

    /// SQLite's `typeof` of values a declared type holds as they are.
    static func storageClasses(_ declared: String) -> [String] {
        switch declared {
        case "INTEGER": return ["integer"]
        case "REAL": return ["real"]
        case "TEXT": return ["text"]
        default: return []
        }
    }

    /// Rebuilds `name` with its columns' types and foreign keys (each declared only where every
    /// value already has it), indexes each foreign key, and returns the rows for `_storelens_columns`.
    static func apply(table name: String, columns: [Column], entityTables: [String: String], names: inout DecodedExport.UniqueNames,
                      _ connection: Connection) throws -> [[DatabaseValue]] {
        let q = Identifier.quoted
        // An entity's table starts with its `_pk`; a link table has none.
        let hasKey = try connection.rows("SELECT name FROM pragma_table_info(?)", [.text(name)]).first?[0].string == "_pk"
        var definitions: [String] = hasKey ? ["\"_pk\" INTEGER PRIMARY KEY"] : []
        var rows: [[DatabaseValue]] = hasKey ? [[.text(name), .text("_pk"), .null, .text("INTEGER"), .text("the row's Z_PK in the store"), .null]] : []
        var foreignKeys: [String] = []
        for column in columns {
            var declared = column.declared
            var holds = column.holds
            let classes = storageClasses(declared)
            if !classes.isEmpty {
                let others = try connection.scalar("SELECT count(*) FROM \(q(name)) WHERE typeof(\(q(column.name))) NOT IN ('null', \(classes.map { "'\($0)'" }.joined(separator: ", ")))").int ?? 0
                if others > 0 {
                    declared = ""
                    holds += ", but \(others) value\(others == 1 ? "" : "s") of another type: kept as stored, the column undeclared"
                }
            }
            let target = column.references.flatMap { entityTables[$0] }
            var definition = q(column.name) + (declared.isEmpty ? "" : " " + declared)
            if let target, declared == "INTEGER" {
                definition += " REFERENCES \(q(target))(\"_pk\")"
                foreignKeys.append(column.name)
            }
            definitions.append(definition)
            rows.append([.text(name), .text(column.name), column.property.map(DatabaseValue.text) ?? .null, .text(declared), .text(holds),
                         target.map(DatabaseValue.text) ?? .null])
        }
        let building = Self.building
        try connection.execute("CREATE TABLE \(q(building)) (\(definitions.joined(separator: ", ")))")
        try connection.execute("INSERT INTO \(q(building)) SELECT * FROM \(q(name))")
        try connection.execute("DROP TABLE \(q(name))")
        try connection.execute("ALTER TABLE \(q(building)) RENAME TO \(q(name))")
        for column in foreignKeys {
            // Indexes share one namespace with tables: named through the same rule as every table
            // (a store may have an entity called `Item_owner_fk`, or `A.b_c` beside `A_b.c`).
            try connection.execute("CREATE INDEX \(q(names.take(name + "_" + column + "_fk"))) ON \(q(name))(\(q(column)))")
        }
        return rows
    }

    /// `_storelens_columns`: table, column, property, declared type, what it holds, referenced table.
    static func write(_ rows: [[DatabaseValue]], _ connection: Connection) throws {
        try connection.execute("CREATE TABLE \(table) (\"table\" TEXT NOT NULL, \"column\" TEXT NOT NULL, property TEXT, declared_type TEXT NOT NULL, holds TEXT NOT NULL, \"references\" TEXT)")
        let insert = try connection.prepare("INSERT INTO \(table) VALUES (?, ?, ?, ?, ?, ?)")
        for row in rows {
            try insert.bind(row)
            while try insert.step() != nil {}
        }
    }
}
