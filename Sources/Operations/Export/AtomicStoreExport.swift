import CoreDataStore
import Foundation
import SQLiteAccess

/// `storelens export` of a Core Data XML store: one table per entity, `_pk` (from the object
/// id) first, then each property as `rows` names it, values stored as `DecodedExport` stores a
/// SQLite store's (to-one relationships as the target's key, to-many as the `Entity#pk` list);
/// `_storelens` with the provenance. Written in one transaction, like `DecodedExport`.
public enum AtomicStoreExport {
    public static func write(_ contents: AtomicStoreContents, displayPath: String, to path: String,
                             provenance: [(String, String)]) throws -> DecodedExport.Summary {
        let connection = try DecodedExport.output(path) { () throws -> Connection in
            let connection = try Connection.open(path: path, mode: .readWrite)
            try connection.execute("PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; BEGIN")
            return connection
        }
        var names = DecodedExport.UniqueNames(reserved: ["_storelens"])
        var tables: [DecodedExport.Table] = []
        let index = AtomicStoreIndex(contents)
        for entity in index.entities {
            let rows = try AtomicStoreRows(index, entity: entity, displayPath: displayPath)
            let table = names.take(entity)
            var columns = DecodedExport.UniqueNames(reserved: ["_pk"])
            let columnNames = rows.fields.map { columns.take($0) }
            try DecodedExport.output(path) {
                let list = (["\"_pk\" INTEGER"] + columnNames.map(Identifier.quoted)).joined(separator: ", ")
                try connection.execute("CREATE TABLE \(Identifier.quoted(table)) (\(list))")
                let insert = try connection.prepare("INSERT INTO \(Identifier.quoted(table)) VALUES (\(Array(repeating: "?", count: columnNames.count + 1).joined(separator: ", ")))")
                for row in rows.rows {
                    var values = [DatabaseValue](repeating: .null, count: columnNames.count)
                    for (index, value) in zip(row.fieldIndexes, row.values) where index < values.count {
                        values[index] = DecodedExport.stored(value.value)
                    }
                    try insert.bind([.integer(row.pk)] + values)
                    while try insert.step() != nil {}
                }
            }
            tables.append(DecodedExport.Table(name: table, entity: entity, relationship: nil, rows: rows.rows.count))
        }
        try DecodedExport.output(path) {
            try connection.execute("CREATE TABLE _storelens (key TEXT NOT NULL, value TEXT)")
            let insert = try connection.prepare("INSERT INTO _storelens VALUES (?, ?)")
            var facts = provenance
            facts.append(("storeFormat", contents.format.rawValue))
            facts.append(("storeUUID", contents.storeUUID ?? contents.databaseUUID ?? ""))
            if contents.anomalyCount > 0 { facts.append(("anomalies", String(contents.anomalyCount))) }
            for t in tables { facts.append(("table " + t.name, "entity \(t.entity ?? "?"), \(t.rows) rows")) }
            for (key, value) in facts {
                try insert.bind([.text(key), .text(value)])
                while try insert.step() != nil {}
            }
            try connection.execute("COMMIT")
        }
        return DecodedExport.Summary(tables: tables)
    }
}
