import Foundation
import SQLiteAccess
import StoreFormats

/// Where a model lives in SQLite: entity → table and `Z_ENT` set; attribute → column (digit
/// suffixes resolved against `PRAGMA table_info`, never predicted); to-one → FK (+ FEK, + FOK);
/// to-many → the FK on the destination; many-to-many → join table and its two columns (found by
/// their names); constraints and fetch indexes → index names. Every column of every entity table
/// is accounted for: columns no property claims are listed in `unknownColumns`.
public struct SchemaMap: Sendable {
    public let path: String
    public let model: StoreModel
    /// Mapped entities: those in `Z_PRIMARYKEY` by `Z_ENT`, then model entities the store lacks.
    public let entities: [EntityMapping]
    /// Join tables that belong to a many-to-many relationship.
    public let joinTables: [String]
    /// Columns of entity tables that no property of the model claims.
    public let unknownColumns: [UnknownColumn]
    /// Tables that are neither entity, join, metadata, history nor CloudKit tables.
    public let unknownTables: [String]
    /// Tables of Core Data's ubiquitous (legacy iCloud, before iOS 10) stores: `Y_UBMETA`,
    /// `Y_UBRANGE`, `Y_UBKVS`. Core Data's own, so not unknown.
    public var ubiquityTables: [String] = []
    public static let ubiquityTableNames: Set<String> = ["Y_UBMETA", "Y_UBRANGE", "Y_UBKVS"]
    /// Where the model and the store do not fit together (one sentence each).
    public let problems: [String]
    /// For each derived attribute: the `Z_DA_` triggers that keep its column current. They call
    /// `NSCoreDataDATrigger…` functions only Core Data registers, so any write that fires them
    /// fails in plain SQLite.
    public var derivedAttributeTriggers: [DerivedTriggers] = []

    public struct DerivedTriggers: Sendable, Equatable {
        public let entity: String
        public let attribute: String
        public let derivation: String
        public let triggers: [String]
    }

    /// Every `Z_DA_` trigger of the store, whatever attribute it serves.
    public var allDerivedTriggers: [String] { derivedAttributeTriggers.flatMap(\.triggers) }

    public struct UnknownColumn: Sendable, Equatable {
        public let table: String
        public let column: String
        public let declaredType: String
    }

    public func entity(named name: String) -> EntityMapping? { entities.first { $0.entity.name == name } }

    /// The entity whose `Z_ENT` is `number`.
    public func entity(number: Int) -> EntityMapping? { entities.first { $0.number == number } }

    /// Looks an entity up by its current name, its legacy name (renaming identifier), or its class
    /// name (with or without a module prefix), then by name ignoring case.
    public func resolveEntity(_ query: String) -> EntityMapping? {
        if let e = entity(named: query) { return e }
        if let e = entities.first(where: { $0.entity.legacyName == query }) { return e }
        if let e = entities.first(where: { $0.entity.className == query }) { return e }
        if let e = entities.first(where: { ($0.entity.className?.split(separator: ".").last).map(String.init) == query }) { return e }
        let lower = query.lowercased()
        return entities.first { $0.entity.name.lowercased() == lower }
    }

    /// The closest entity name, for "did you mean".
    public func suggestion(for query: String) -> String? {
        let names = entities.map(\.entity.name)
        return EditDistance.closest(to: query, in: names) { $0.lowercased() }
    }
}

/// One entity in SQL.
public struct EntityMapping: Sendable {
    public let entity: ModelEntity
    /// `Z_ENT`, when `Z_PRIMARYKEY` lists the entity.
    public let number: Int?
    /// The root entity's table, shared by the whole hierarchy.
    public let table: String
    public let tableExists: Bool
    /// `Z_ENT` values of this entity and its subentities (from `Z_SUPER`): what selects its rows.
    public let entityNumbers: [Int]
    /// Ancestors first, ending with this entity.
    public let lineage: [String]
    /// Attributes, inherited ones first (root level first, each level by name).
    public let attributes: [AttributeMapping]
    public let relationships: [RelationshipMapping]
    public let uniqueConstraints: [IndexMapping]
    public let fetchIndexes: [IndexMapping]

    /// An attribute by name, then by legacy name, then ignoring case.
    public func attribute(named name: String) -> AttributeMapping? {
        attributes.first { $0.attribute.name == name }
            ?? attributes.first { $0.attribute.legacyName == name }
            ?? attributes.first { $0.attribute.name.lowercased() == name.lowercased() }
    }

    public func relationship(named name: String) -> RelationshipMapping? {
        relationships.first { $0.relationship.name == name }
            ?? relationships.first { $0.relationship.legacyName == name }
            ?? relationships.first { $0.relationship.name.lowercased() == name.lowercased() }
    }
}

public struct AttributeMapping: Sendable {
    public let attribute: ModelAttribute
    /// The entity that declares it (this one or an ancestor).
    public let declaredBy: String
    /// The column; nil when the table has none for it (a problem is reported).
    public let column: String?
    /// The column's declared SQL type.
    public let declaredType: String?
    /// For a composite attribute: one mapping per element.
    public let elements: [AttributeMapping]
}

public struct RelationshipMapping: Sendable {
    public enum Kind: String, Sendable {
        case toOne = "to-one"
        case toMany = "to-many"
        case manyToMany = "many-to-many"
    }

    public let relationship: ModelRelationship
    public let declaredBy: String
    public let kind: Kind
    /// To-one: the foreign key column in this entity's table.
    public let column: String?
    /// To-one to a destination with subentities: the column holding the destination row's `Z_ENT`.
    public let entityKeyColumn: String?
    /// To-one whose inverse is an ordered to-many: `Z_FOK_…` in this table. Ordered many-to-many:
    /// the `Z_FOK_…` column of the join table.
    public let orderColumn: String?
    /// To-many: the destination's table and the foreign key column there pointing back here.
    public let foreignTable: String?
    public let foreignColumn: String?
    /// Many-to-many: the join table, the column holding this entity's keys, the column holding the destination's.
    public let joinTable: String?
    public let joinSourceColumn: String?
    public let joinDestinationColumn: String?
}

/// A uniqueness constraint or fetch index and the index Core Data names for it.
public struct IndexMapping: Sendable, Equatable {
    public let properties: [String]
    /// `Z_<Entity>_UNIQUE_<p1>_<p2>` or `Z_<Entity>_<IndexName>`.
    public let name: String
    /// Whether `sqlite_master` has an index (or R-tree table) of that name.
    public let present: Bool
    /// Why an absent index is not missing (a fetch index on a relationship), or how it is kept
    /// (an R-tree virtual table); nil for an ordinary index.
    public let note: String?

    public init(properties: [String], name: String, present: Bool, note: String? = nil) {
        self.properties = properties
        self.name = name
        self.present = present
        self.note = note
    }
}

extension SchemaMap {
    /// Maps `model` onto the store behind `connection`.
    /// - Parameter path: how errors name the store (defaults to the connection's file).
    public static func build(model: StoreModel, store: CoreDataStore, connection: Connection, path: String? = nil) throws -> SchemaMap {
        var builder = SchemaMapBuilder(model: model, store: store, connection: connection)
        return try builder.build(path: path ?? connection.path)
    }
}
