/// How a model change fares in a migration: Core Data (and SwiftData's lightweight stages) can
/// infer it, it needs a custom stage, or it goes through but drops stored values.
public enum MigrationClass: String, Sendable, CaseIterable {
    case lightweight
    case custom = "needs-custom-stage"
    case lossy = "loses-data"
}

/// One row of the rules table in docs/migration.md: the kind of change, how it is classified,
/// and where that classification comes from. The id is the finding id of the change.
public struct MigrationRule: Sendable, Equatable {
    public let id: String
    public let change: String
    public let classification: MigrationClass
    /// What the old store's data is checked for, when the change depends on it.
    public let dataCheck: String?
    /// Apple's documentation the rule follows, or "inferred" with the reason when not stated there.
    public let source: String

    static let lightweightDoc = "Apple, \"Using Lightweight Migration\" (Core Data)"
    static let swiftDataDoc = "Apple, SwiftData \"SchemaMigrationPlan\" / \"MigrationStage\" (WWDC23 \"Model your schema with SwiftData\")"
}

extension MigrationRule {
    public static let entityAdded = MigrationRule(id: "entity-added", change: "an entity is added", classification: .lightweight,
        dataCheck: nil, source: lightweightDoc + ": adding an entity")
    public static let entityRemoved = MigrationRule(id: "entity-removed", change: "an entity is removed", classification: .lossy,
        dataCheck: "its rows in the old store (they are dropped)", source: lightweightDoc + ": removing an entity is inferred; its rows are not carried over")
    public static let entityRenamed = MigrationRule(id: "entity-renamed", change: "an entity is renamed with a renaming identifier (`@Model` class renamed with `originalName`)", classification: .lightweight,
        dataCheck: nil, source: lightweightDoc + ": renaming an entity with the renaming identifier")
    public static let probableEntityRename = MigrationRule(id: "probable-entity-rename-without-identifier", change: "an entity is removed and one with the same attributes is added, without a renaming identifier", classification: .lossy,
        dataCheck: "rows of the removed entity", source: "inferred: without the renaming identifier Core Data sees a removal and an addition, so the rows are dropped")
    public static let entityParentChanged = MigrationRule(id: "entity-parent-changed", change: "an entity's parent entity changes", classification: .custom,
        dataCheck: nil, source: "inferred: " + lightweightDoc + " lists creating a new parent or child entity, not moving an entity between hierarchies; the rows change table")

    public static let attributeAddedOptional = MigrationRule(id: "attribute-added-optional", change: "an optional attribute is added", classification: .lightweight,
        dataCheck: nil, source: lightweightDoc + ": adding an attribute; " + swiftDataDoc + ": adding an optional property is lightweight")
    public static let attributeAddedDefault = MigrationRule(id: "attribute-added-with-default", change: "a non-optional attribute with a default value is added", classification: .lightweight,
        dataCheck: nil, source: lightweightDoc + ": adding a non-optional attribute with a default value; " + swiftDataDoc)
    public static let attributeAddedRequired = MigrationRule(id: "attribute-added-required-no-default", change: "a non-optional attribute without a default value is added", classification: .custom,
        dataCheck: "existing rows of the entity (each would have no value)", source: swiftDataDoc + ": a non-optional property without a default needs a custom stage; Core Data's validation rejects the rows (inferred from the missing-mandatory-property error)")
    public static let attributeRemoved = MigrationRule(id: "attribute-removed", change: "an attribute is removed", classification: .lossy,
        dataCheck: "rows holding a value (they are dropped)", source: lightweightDoc + ": removing an attribute is inferred; its values are not carried over")
    public static let attributeRenamed = MigrationRule(id: "attribute-renamed", change: "an attribute is renamed with a renaming identifier (`@Attribute(originalName:)`)", classification: .lightweight,
        dataCheck: nil, source: lightweightDoc + ": renaming with the renaming identifier; " + swiftDataDoc + ": `originalName`")
    public static let probableRename = MigrationRule(id: "probable-rename-without-original-name", change: "an attribute is removed and one of the same type is added in the same entity, without a renaming identifier", classification: .lossy,
        dataCheck: "rows holding a value in the removed attribute (they are lost)", source: "inferred: without `originalName` / the renaming identifier the migration sees a removal and an addition")
    public static let attributeTypeChanged = MigrationRule(id: "attribute-type-changed", change: "an attribute's type changes", classification: .custom,
        dataCheck: "stored values the new type cannot hold", source: swiftDataDoc + ": changing a property's type needs a custom stage; " + lightweightDoc + " does not list type changes (inferred)")
    public static let attributeMadeOptional = MigrationRule(id: "attribute-made-optional", change: "a non-optional attribute becomes optional", classification: .lightweight,
        dataCheck: nil, source: lightweightDoc + ": making a non-optional attribute optional")
    public static let attributeMadeRequiredDefault = MigrationRule(id: "attribute-made-required-with-default", change: "an optional attribute becomes non-optional with a default value", classification: .lightweight,
        dataCheck: "rows holding NULL (they are expected to take the default: inferred)", source: lightweightDoc + ": making an optional attribute non-optional with a default value")
    public static let attributeMadeRequired = MigrationRule(id: "attribute-made-required-no-default", change: "an optional attribute becomes non-optional without a default value", classification: .custom,
        dataCheck: "rows holding NULL (each would fail validation)", source: "inferred: " + lightweightDoc + " allows it only with a default value")
    public static let defaultChanged = MigrationRule(id: "attribute-default-changed", change: "an attribute's default value changes", classification: .lightweight,
        dataCheck: nil, source: "inferred: a default applies to new objects only; stored values are kept")
    public static let externalStorageChanged = MigrationRule(id: "attribute-external-storage-changed", change: "external binary storage is turned on or off (`.externalStorage`)", classification: .lightweight,
        dataCheck: nil, source: "inferred: the store moves the values between the row and files; no value is lost")
    public static let transientChanged = MigrationRule(id: "attribute-transient-changed", change: "an attribute becomes transient or stored", classification: .lossy,
        dataCheck: "rows holding a value (a transient attribute keeps none)", source: "inferred: a transient attribute has no column")

    public static let uniqueAdded = MigrationRule(id: "unique-constraint-added", change: "a uniqueness constraint is added (`@Attribute(.unique)`, `#Unique`)", classification: .custom,
        dataCheck: "rows whose values repeat (with their keys)", source: swiftDataDoc + ": adding a unique constraint to existing data needs a custom stage that removes duplicates")
    public static let uniqueRemoved = MigrationRule(id: "unique-constraint-removed", change: "a uniqueness constraint is removed", classification: .lightweight,
        dataCheck: nil, source: "inferred: dropping the unique index keeps every row")
    public static let indexChanged = MigrationRule(id: "fetch-index-changed", change: "a fetch index (`#Index`) is added or removed", classification: .lightweight,
        dataCheck: nil, source: "inferred: an index holds no data of its own; SQLite builds or drops it")

    public static let relationshipAddedOptional = MigrationRule(id: "relationship-added", change: "an optional or to-many relationship is added", classification: .lightweight,
        dataCheck: nil, source: lightweightDoc + ": adding a relationship")
    public static let relationshipAddedRequired = MigrationRule(id: "relationship-added-required", change: "a non-optional to-one relationship is added", classification: .custom,
        dataCheck: "existing rows of the entity (each would have no destination)", source: "inferred: as a non-optional attribute without default, each existing row fails validation")
    public static let relationshipRemoved = MigrationRule(id: "relationship-removed", change: "a relationship is removed", classification: .lossy,
        dataCheck: "rows linked through it (the links are dropped)", source: lightweightDoc + ": removing a relationship is inferred; its links are not carried over")
    public static let relationshipRenamed = MigrationRule(id: "relationship-renamed", change: "a relationship is renamed with a renaming identifier", classification: .lightweight,
        dataCheck: nil, source: lightweightDoc + ": renaming with the renaming identifier")
    public static let probableRelationshipRename = MigrationRule(id: "probable-relationship-rename-without-original-name", change: "a relationship is removed and one to the same entity is added, without a renaming identifier", classification: .lossy,
        dataCheck: "rows linked through the removed relationship", source: "inferred: without the renaming identifier the links are dropped")
    public static let deleteRuleChanged = MigrationRule(id: "delete-rule-changed", change: "a relationship's delete rule changes", classification: .lightweight,
        dataCheck: nil, source: "inferred: the delete rule is behaviour, not stored data (" + swiftDataDoc + " lists it among lightweight changes)")
    public static let relationshipToMany = MigrationRule(id: "relationship-to-one-became-to-many", change: "a to-one relationship becomes to-many", classification: .lightweight,
        dataCheck: nil, source: lightweightDoc + ": changing a relationship from to-one to to-many")
    public static let relationshipToOne = MigrationRule(id: "relationship-to-many-became-to-one", change: "a to-many relationship becomes to-one", classification: .custom,
        dataCheck: nil, source: "inferred: " + lightweightDoc + " lists only the other direction; rows with several destinations would keep one")
    public static let orderingChanged = MigrationRule(id: "relationship-ordering-changed", change: "a to-many relationship becomes ordered or unordered", classification: .lightweight,
        dataCheck: nil, source: lightweightDoc + ": changing a non-ordered to-many relationship to ordered and back")
    public static let destinationChanged = MigrationRule(id: "relationship-destination-changed", change: "a relationship points at another entity", classification: .custom,
        dataCheck: nil, source: "inferred: the stored keys name rows of the old destination")
    public static let relationshipMadeOptional = MigrationRule(id: "relationship-made-optional", change: "a non-optional relationship becomes optional", classification: .lightweight,
        dataCheck: nil, source: "inferred: as for attributes, " + lightweightDoc)
    public static let relationshipMadeRequired = MigrationRule(id: "relationship-made-required", change: "an optional to-one relationship becomes non-optional", classification: .custom,
        dataCheck: "rows without a destination (each would fail validation)", source: "inferred: as an attribute made non-optional without default")

    /// Every rule, in the order docs/migration.md lists them.
    public static let all: [MigrationRule] = [
        entityAdded, entityRemoved, entityRenamed, probableEntityRename, entityParentChanged,
        attributeAddedOptional, attributeAddedDefault, attributeAddedRequired, attributeRemoved, attributeRenamed, probableRename,
        attributeTypeChanged, attributeMadeOptional, attributeMadeRequiredDefault, attributeMadeRequired, defaultChanged,
        externalStorageChanged, transientChanged,
        uniqueAdded, uniqueRemoved, indexChanged,
        relationshipAddedOptional, relationshipAddedRequired, relationshipRemoved, relationshipRenamed, probableRelationshipRename,
        deleteRuleChanged, relationshipToMany, relationshipToOne, orderingChanged, destinationChanged,
        relationshipMadeOptional, relationshipMadeRequired,
    ]
}
