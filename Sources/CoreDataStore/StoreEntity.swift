/// One row of `Z_PRIMARYKEY`: an entity as the store knows it, placed in its hierarchy.
public struct StoreEntity: Equatable, Sendable {
    /// What kind of entity this is. Apple numbers its own ancillary models far above user
    /// entities: persistent history at 16001–16003, CloudKit mirroring around 17000.
    public enum Kind: String, Sendable {
        case user
        case history
        case cloudKit = "cloudkit"
        case ancillary
    }

    /// `Z_ENT`.
    public let number: Int
    /// `Z_NAME`: the entity name (not the class name, not the table name).
    public let name: String
    /// `Z_SUPER`, 0 for a root.
    public let superNumber: Int
    /// The parent entity's name, when `Z_SUPER` names an entity that exists.
    public let parentName: String?
    /// The root of this entity's inheritance chain: its rows live in the root's table.
    public let rootName: String
    /// `Z_MAX`: the high-water mark of primary keys. Only the root's row holds it; subentities hold 0.
    public let zMax: Int?
    public let kind: Kind
    /// `Z` + UPPERCASE(root name) for user entities, `A` + UPPERCASE(root name) for ancillary ones.
    public let table: String
    /// Whether that table exists in the store.
    public let tableExists: Bool
    /// This entity and every entity below it, as `Z_ENT` values.
    public let subtreeNumbers: [Int]
}

/// Row counts for one entity, in both views of the store.
public struct EntityCounts: Equatable, Sendable {
    /// Rows whose Z_ENT is this entity, WAL applied.
    public let rows: Int
    /// Rows of this entity and its subentities, WAL applied.
    public let rowsIncludingSubentities: Int
    /// Rows whose Z_ENT is this entity in the main file alone; nil when not read.
    public let rowsMainFileOnly: Int?
    /// max(Z_PK) of the entity's table, WAL applied (shared by the whole hierarchy).
    public let maxPK: Int?
}
