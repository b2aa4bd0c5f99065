import Acquisition
import CoreDataStore
import Foundation
import SQLiteAccess
import StoreFormats

/// `storelens export`: a store's records decoded into a plain SQLite file that datasette, DB
/// Browser, sqlite-utils or pandas open without knowing Core Data (docs/export.md).
///
/// - One table per concrete entity, named by the entity, holding the rows whose `Z_ENT` is that
///   entity (a subentity's rows are in the subentity's table, with its inherited columns), `_pk`
///   first, then one column per property as `rows` names it. Values are stored decoded: integers
///   and doubles natively, Booleans 0/1, dates ISO 8601 UTC text, UUIDs and decimals as text,
///   to-one relationships as the target's `Z_PK` (with a `<name>_entity` column naming the
///   target's entity when the destination has subentities), bytes, composites and transformable
///   trees as the JSON `rows` writes for them. Columns are declared with those types, and to-one
///   relationships as foreign keys with an index, where every value already has the type
///   (`ExportTypes`; `_storelens_columns` says what each column holds).
/// - One link table per many-to-many relationship (named `<Entity>_<relationship>`) with the two
///   sides' keys, as foreign keys.
/// - `_storelens`: what was exported, from which files (SHA-256 of each as read), by which
///   version, and one line per table with its entity and row count.
///
/// The file must exist and be empty (the caller creates it where it may go); it is written in
/// one transaction without a journal, and a failure is `DecodedExportError.outputFailed`: ours,
/// never a finding about the store.
public enum DecodedExport {
    public struct Table: Sendable, Equatable {
        /// The table's name in the export.
        public let name: String
        /// The entity whose rows it holds; nil for a link table.
        public let entity: String?
        /// For a link table: the relationship (`Entity.relationship`).
        public let relationship: String?
        public let rows: Int
    }

    public struct Summary: Sendable {
        public let tables: [Table]
        public var rows: Int { tables.reduce(0) { $0 + $1.rows } }
    }

    /// Writes `opened` into the empty SQLite file at `path`.
    /// - Parameter provenance: key/value facts for `_storelens` (input, tool version, hashes …), in order.
    /// - Parameter withExternalData: copy each `_EXTERNAL_DATA` file's bytes into
    ///   `_storelens_external_data` (always listed there with its size and SHA-256).
    public static func write(_ opened: OpenedStore, to path: String, provenance: [(String, String)],
                             withExternalData: Bool = false) throws -> Summary {
        let connection = try output(path) { () throws -> Connection in
            let connection = try Connection.open(path: path, mode: .readWrite)
            try connection.execute("PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; BEGIN")
            return connection
        }
        var names = UniqueNames(reserved: ["_storelens", LongTexts.table, ExternalDataTable.table, ExportTypes.table, ExportTypes.building])
        let longTexts = LongTexts()
        var tables: [Table] = []
        let map = opened.map
        // Each hierarchy is read once, from its root; each row goes to its own entity's table.
        let entities = map.entities.filter { $0.tableExists && $0.number != nil }
        var targets: [String: EntityTable] = [:]
        for mapping in entities {
            let table = try EntityTable(mapping, map: map, decoder: opened.decoder, name: names.take(mapping.entity.name), output: path)
            try output(path) { try table.create(connection) }
            targets[mapping.entity.name] = table
        }
        let exported = Set(entities.map(\.entity.name))
        for root in entities where root.lineage.first.map({ $0 == root.entity.name || !exported.contains($0) }) ?? true {
            let reader = RowReader(map: map, entity: root, decoder: opened.decoder)
            try StoreReading.named(opened.displayPath) {
                try reader.forEach(opened.connection) { row in
                    guard let table = targets[row.entity] else { return }
                    try output(path) { try table.insert(row, fields: reader.fields, connection, longTexts: longTexts, storePath: opened.displayPath) }
                }
            }
        }
        for mapping in entities { if let t = targets[mapping.entity.name] { tables.append(Table(name: t.name, entity: mapping.entity.name, relationship: nil, rows: t.rows)) } }
        // Foreign keys only into an entity whose rows are all in one table (no subentities).
        let entityTables = targets.filter { map.model.subtree(of: $0.key).count == 1 }.mapValues(\.name)
        var typing = entities.compactMap { targets[$0.entity.name] }.map { ($0.name, $0.columnTypes) }

        // Many-to-many: one link table per join table (the two sides share one).
        var linked = Set<String>()
        for mapping in entities {
            for r in mapping.relationships where r.kind == .manyToMany && r.declaredBy == mapping.entity.name {
                guard let join = r.joinTable, r.joinSourceColumn != nil, r.joinDestinationColumn != nil, linked.insert(join.lowercased()).inserted,
                      let link = try writeLinkTable(r, of: mapping, join: join, names: &names, opened, connection, output: path) else { continue }
                tables.append(link.table)
                typing.append((link.table.name, link.columns))
            }
        }

        try output(path) {
            let described = try typing.flatMap { try ExportTypes.apply(table: $0.0, columns: $0.1, entityTables: entityTables, names: &names, connection) }
            try ExportTypes.write(described, connection)
        }
        let externalRows = try opened.decoder.externalData.flatMap {
            try ExternalDataTable.write($0, withData: withExternalData, connection, output: path)
        }
        try output(path) {
            try connection.execute("CREATE TABLE _storelens (key TEXT NOT NULL, value TEXT)")
            let insert = try connection.prepare("INSERT INTO _storelens VALUES (?, ?)")
            var facts = provenance
            facts.append(("modelSource", opened.model.source.rawValue))
            facts.append(("modelOrigin", opened.model.origin))
            if longTexts.rows > 0 {
                facts.append(("table " + LongTexts.table, "texts over 1 MiB, as UTF-8 BLOBs, \(longTexts.rows) rows"))
            }
            if let externalRows {
                facts.append(("table " + ExternalDataTable.table,
                              "the store's _EXTERNAL_DATA entries, \(externalRows) rows, " + (withExternalData ? "with their bytes" : "without their bytes (--with-external-data)")))
            }
            for t in tables {
                facts.append(("table " + t.name, (t.entity.map { "entity \($0)" } ?? "link table of \(t.relationship ?? "?")") + ", \(t.rows) rows"))
            }
            for (key, value) in facts {
                try insert.bind([.text(key), .text(value)])
                while try insert.step() != nil {}
            }
            try connection.execute("COMMIT")
        }
        return Summary(tables: tables)
    }


    /// The link table of a many-to-many relationship (`<Entity>_<relationship>`): the join
    /// table's pairs as stored, and the columns' types (`ExportTypes`). Nil when the mapping
    /// names no join columns.
    static func writeLinkTable(_ r: RelationshipMapping, of mapping: EntityMapping, join: String, names: inout UniqueNames,
                               _ opened: OpenedStore, _ connection: Connection, output path: String) throws -> (table: Table, columns: [ExportTypes.Column])? {
        guard let source = r.joinSourceColumn, let destination = r.joinDestinationColumn else { return nil }
        let name = names.take("\(mapping.entity.name)_\(r.relationship.name)")
        var left = mapping.entity.name + "_pk", right = r.relationship.destination + "_pk"
        // SQLite's column names ignore case: `Tag` and its subentity `tag` would both be `tag_pk`.
        if left.lowercased() == right.lowercased() { left = "source_pk"; right = "destination_pk" }
        let order = r.orderColumn
        try output(path) {
            try connection.execute("CREATE TABLE \(Identifier.quoted(name)) (\(Identifier.quoted(left)) INTEGER, \(Identifier.quoted(right)) INTEGER"
                                   + (order != nil ? ", \"order\" INTEGER" : "") + ")")
        }
        var count = 0
        let insert = try output(path) { try connection.prepare("INSERT INTO \(Identifier.quoted(name)) VALUES (?, ?\(order != nil ? ", ?" : ""))") }
        let select = "SELECT \(Identifier.quoted(source)), \(Identifier.quoted(destination))\(order.map { ", " + Identifier.quoted($0) } ?? "") FROM \(Identifier.quoted(join)) ORDER BY 1, 2"
        try StoreReading.named(opened.displayPath) {
            try opened.connection.prepare(select).forEach { row in
                try output(path) {
                    try insert.bind(row.values)
                    while try insert.step() != nil {}
                }
                count += 1
            }
        }
        return (Table(name: name, entity: nil, relationship: "\(mapping.entity.name).\(r.relationship.name)", rows: count),
                ExportTypes.linkColumns(left: left, source: mapping.entity.name, right: right, destination: r.relationship.destination, ordered: order != nil))
    }

    /// Runs an output write: an SQLite failure there is the output's (a full disk, no
    /// permission), never the store's; any other (a statement SQLite refused) is storelens' own
    /// mistake, and is said so rather than blamed on the disk.
    static func output<T>(_ path: String, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as SQLiteError {
            guard error.isStorageFailure else { throw DecodedExportError.statementRefused(path: path, reason: error.message) }
            throw DecodedExportError.outputFailed(path: path, reason: error.message)
        }
    }

    /// Table and column names as SQLite takes them: a NUL (SQL text ends there) becomes U+FFFD,
    /// names SQLite reserves get a prefix, and names equal but for case get `_2`, `_3`.
    struct UniqueNames {
        var used: Set<String>
        init(reserved: [String]) { used = Set(reserved.map { $0.lowercased() }) }
        mutating func take(_ wanted: String) -> String {
            var base = wanted.replacingOccurrences(of: "\u{0}", with: "\u{FFFD}")
            if base.isEmpty { base = "column" }
            if base.lowercased().hasPrefix("sqlite_") { base = "entity_" + base }
            var name = base
            var n = 2
            while used.contains(name.lowercased()) {
                name = "\(base)_\(n)"
                n += 1
            }
            used.insert(name.lowercased())
            return name
        }
    }

    /// One concrete entity's table: its columns, and the insert statement for them.
    final class EntityTable {
        let name: String
        let output: String
        /// Per property (`declaredBy` + name): the column's index, and the `_entity` column's when the
        /// relationship's destination has subentities.
        var columns: [String: (index: Int, entityIndex: Int?)] = [:]
        var columnNames: [String] = ["_pk"]
        /// What each column after `_pk` holds, in order (`ExportTypes`).
        var columnTypes: [ExportTypes.Column] = []
        var statement: Statement?
        private(set) var rows = 0

        init(_ mapping: EntityMapping, map: SchemaMap, decoder: ValueDecoder, name: String, output: String) throws {
            self.name = name
            self.output = output
            let lineage = Set(mapping.lineage + [mapping.entity.name])
            var names = UniqueNames(reserved: ["_pk"])
            for field in RowReader(map: map, entity: mapping, decoder: decoder).fields where lineage.contains(field.declaredBy) {
                let index = columnNames.count
                columnNames.append(names.take(field.name))
                columnTypes.append(ExportTypes.column(columnNames[index], for: field))
                var entityIndex: Int?
                let destination: String? = {
                    switch field.kind {
                    case .toOne(let r): return r.relationship.destination
                    case .owner(let source, _): return source
                    default: return nil
                    }
                }()
                if let destination, map.model.subtree(of: destination).count > 1 {
                    entityIndex = columnNames.count
                    columnNames.append(names.take(field.name + "_entity"))
                    columnTypes.append(ExportTypes.Column(name: columnNames[entityIndex!], property: nil, declared: "TEXT",
                                                          holds: "the entity of the \(destination) row it points at", references: nil))
                }
                columns[Self.key(field.declaredBy, field.name)] = (index, entityIndex)
            }
        }

        static func key(_ owner: String, _ name: String) -> String { owner + "\u{0}" + name }

        func create(_ connection: Connection) throws {
            let definitions = ["\"_pk\" INTEGER PRIMARY KEY"] + columnNames.dropFirst().map(Identifier.quoted)
            try connection.execute("CREATE TABLE \(Identifier.quoted(name)) (\(definitions.joined(separator: ", ")))")
            statement = try connection.prepare("INSERT INTO \(Identifier.quoted(name)) (\(columnNames.map(Identifier.quoted).joined(separator: ", "))) VALUES ("
                                               + columnNames.map { _ in "?" }.joined(separator: ", ") + ")")
        }

        func insert(_ row: DecodedRow, fields: [RowReader.Field], _ connection: Connection, longTexts: LongTexts, storePath: String) throws {
            guard let statement else { return }
            var values = [DatabaseValue](repeating: .null, count: columnNames.count)
            values[0] = .integer(row.pk)
            var long: [(column: String, text: LongText)] = []
            for (offset, value) in row.values.enumerated() where offset < row.fieldIndexes.count {
                let field = fields[row.fieldIndexes[offset]]
                guard let column = columns[Self.key(field.declaredBy, field.name)] else { continue }
                values[column.index] = DecodedExport.stored(value.value)
                if let entityIndex = column.entityIndex, case .object(let entity, _) = value.value { values[entityIndex] = .text(entity) }
                if case .longText(let text) = value.value {
                    long.append((columnNames[column.index], text))
                    values[column.index] = .text(LongTexts.note(text))
                }
            }
            try statement.bind(values)
            while try statement.step() != nil {}
            for (column, text) in long { try longTexts.insert(text, table: name, column: column, pk: row.pk, connection, output: output, storePath: storePath) }
            rows += 1
        }
    }

    /// Texts over `LongValue.window`, each in its own row of `_storelens_long_text` (entity
    /// table, column, `_pk`, value): SQLite writes a value without holding it only when nothing
    /// but empty columns follow it in the row, so it is the table's last column, sized first
    /// (`zeroblob`) then filled in pieces through `sqlite3_blob_write`. The value is the text's
    /// UTF-8 as a BLOB (`CAST(value AS TEXT)` reads it); the entity's cell names where it is.
    final class LongTexts {
        static let table = "_storelens_long_text"
        private(set) var rows = 0

        static func note(_ text: LongText) -> String {
            "<text of \(text.byteCount) bytes in \(table)>"
        }

        func insert(_ text: LongText, table: String, column: String, pk: Int64, _ connection: Connection,
                    output: String, storePath: String) throws {
            if rows == 0 {
                try connection.execute("CREATE TABLE \(Self.table) (entity_table TEXT NOT NULL, \"column\" TEXT NOT NULL, _pk INTEGER NOT NULL, value BLOB)")
            }
            var count = 0
            try StoreReading.named(storePath) { try text.forEachPiece { count += $0.utf8.count } }
            try connection.run("INSERT INTO \(Self.table) VALUES (?, ?, ?, zeroblob(?))", [.text(table), .text(column), .integer(pk), .integer(Int64(count))])
            let writer = try connection.storedValue(table: Self.table, column: "value", rowid: connection.lastInsertedRowID, writable: true)
            var offset = 0
            try StoreReading.named(storePath) {
                try text.forEachPiece { piece in
                    let bytes = Array(piece.utf8)
                    try DecodedExport.output(output) { try writer.write(bytes, at: offset) }
                    offset += bytes.count
                }
            }
            rows += 1
        }
    }

    /// A decoded value as it is stored in the export (UTC whatever `--tz` says: the file is data).
    public static func stored(_ value: FieldValue) -> DatabaseValue {
        if let scalar = value.sqliteScalar { return scalar }
        switch value {
        // Written after the row, in pieces (`EntityTable.insert`).
        case .longText: return .null
        case .uuid(let s), .decimal(let s): return .text(s)
        case .object(_, let pk): return .integer(pk)
        // Binary, archived and composite values, as JSON.
        default: return .text(ValueJSON.json(value).rendered(pretty: false))
        }
    }
}

/// The export file could not be written: storelens' own failure (the disk, the folder), never
/// the store's.
public enum DecodedExportError: Error, Equatable, CustomStringConvertible, Sendable {
    case outputFailed(path: String, reason: String)
    /// SQLite refused a statement storelens made for the export (a name, a type): a storelens bug.
    case statementRefused(path: String, reason: String)

    public var description: String {
        switch self {
        case .outputFailed(let path, let reason):
            return "the export \(path) cannot be written (\(reason)); give --out a path in a folder with free space (this is storelens' own failure, not a finding about the evidence)."
        case .statementRefused(let path, let reason):
            return "the export \(path) was not written: SQLite refused a statement storelens made for it (\(reason)); this is a storelens bug, not a problem of the disk or the evidence: please report it with the store's model (`storelens schema`)."
        }
    }
}

extension DecodedExportError: DescribedError {
    public var errorClass: ErrorClass { .ours }
}
