import CoreDataStore
import Foundation
import SQLiteAccess

/// Column → property names of a Core Data store, from its model (the
/// cached model, else one inferred from the schema) through the schema map,
/// so `--diff` can say "name changed" rather than "ZNAME changed".
public enum AttributeNames {
    /// table → column → attribute or to-one relationship name; empty when
    /// the store is not Core Data or its model cannot be read.
    public static func read(_ connection: Connection) -> [String: [String: String]] {
        guard let store = try? CoreDataStore.read(connection),
              let model = try? ModelLoader.load(connection: connection, store: store),
              let map = try? SchemaMap.build(model: model, store: store, connection: connection)
        else { return [:] }
        return of(map)
    }

    /// table → column → attribute or to-one relationship name, from a schema map already built.
    public static func of(_ map: SchemaMap) -> [String: [String: String]] {
        var names: [String: [String: String]] = [:]
        func add(_ table: String, _ column: String?, _ name: String) {
            guard let column, names[table]?[column] == nil else { return }
            names[table, default: [:]][column] = name
        }
        for entity in map.entities {
            for attribute in entity.attributes {
                add(entity.table, attribute.column, attribute.attribute.name)
                for element in attribute.elements {
                    add(entity.table, element.column, "\(attribute.attribute.name).\(element.attribute.name)")
                }
            }
            for relationship in entity.relationships where relationship.kind == .toOne {
                add(entity.table, relationship.column, relationship.relationship.name)
                add(entity.table, relationship.entityKeyColumn, relationship.relationship.name)
                add(entity.table, relationship.orderColumn, relationship.relationship.name)
            }
        }
        return names
    }
}
