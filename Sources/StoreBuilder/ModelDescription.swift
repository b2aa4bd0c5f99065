import Foundation

/// A Core Data model in words: what the store builder needs to lay out a store exactly as
/// Core Data would. It mirrors `NSManagedObjectModel` without depending on Apple's frameworks.
public struct ModelDescription: Sendable {
    public var entities: [EntityDescription]
    /// `NSStoreModelVersionIdentifiers`: `["1.0.0"]` for SwiftData, `[""]` for an unversioned Xcode model.
    public var versionIdentifiers: [String]
    /// How the archived model in `Z_MODELCACHE` lists a subentity's inherited properties.
    public var inheritedPropertiesInCache: InheritedPropertiesInCache

    /// Apple's caches differ in how a subentity lists what it inherits (coredata-sqlite-format.md,
    /// "Learned from Apple's own stores").
    public enum InheritedPropertiesInCache: Sendable {
        /// Only the entity's own properties (SwiftData, the stores this builder first copied).
        case declaredOnly
        /// Full copies of every ancestor's properties (Notes macOS 12–26, Photos macOS 13–15, Screen Time).
        case copies
        /// `_NSPropertyDescriptionProxy` objects pointing at the ancestor's property (Photos macOS 10.15).
        case proxies
    }

    public init(entities: [EntityDescription], versionIdentifiers: [String] = ["1.0.0"],
                inheritedPropertiesInCache: InheritedPropertiesInCache = .declaredOnly) {
        self.entities = entities
        self.versionIdentifiers = versionIdentifiers
        self.inheritedPropertiesInCache = inheritedPropertiesInCache
    }

    public func entity(_ name: String) -> EntityDescription? { entities.first { $0.name == name } }
}

public struct EntityDescription: Sendable {
    public var name: String
    /// `NSClassNameForEntity`: the Swift class in SwiftData, often NSManagedObject in Core Data.
    public var className: String
    public var parent: String?
    public var isAbstract: Bool
    /// The entity's previous name, for lightweight migration. Defaults to `name`, as Apple stores it.
    public var renamingIdentifier: String?
    public var attributes: [AttributeDescription]
    public var relationships: [RelationshipDescription]
    /// Each tuple of property names must be unique (`@Attribute(.unique)`, `#Unique`).
    public var uniqueConstraints: [[String]]
    public var fetchIndexes: [FetchIndexDescription]

    public init(_ name: String, className: String? = nil, parent: String? = nil, isAbstract: Bool = false,
                renamingIdentifier: String? = nil, attributes: [AttributeDescription] = [],
                relationships: [RelationshipDescription] = [], uniqueConstraints: [[String]] = [],
                fetchIndexes: [FetchIndexDescription] = []) {
        self.name = name
        self.className = className ?? name
        self.parent = parent
        self.isAbstract = isAbstract
        self.renamingIdentifier = renamingIdentifier
        self.attributes = attributes
        self.relationships = relationships
        self.uniqueConstraints = uniqueConstraints
        self.fetchIndexes = fetchIndexes
    }
}

/// `NSAttributeType` raw values, as archived in `Z_MODELCACHE`.
public enum AttributeType: Int, Sendable, CaseIterable {
    case integer16 = 100, integer32 = 200, integer64 = 300, decimal = 400, double = 500, float = 600
    case string = 700, boolean = 800, date = 900, binaryData = 1000, uuid = 1100, uri = 1200
    case transformable = 1800, objectID = 2000, composite = 2100

    /// The declared SQL type of the column Core Data makes for it.
    public var sqlType: String {
        switch self {
        case .integer16, .integer32, .integer64, .boolean: return "INTEGER"
        case .double, .float: return "FLOAT"
        case .decimal: return "DECIMAL"
        case .date: return "TIMESTAMP"
        case .string, .uri: return "VARCHAR"
        case .binaryData, .uuid, .transformable, .objectID, .composite: return "BLOB"
        }
    }

    /// `NSAttributeValueClassName` as Apple archives it.
    public var valueClassName: String {
        switch self {
        case .integer16, .integer32, .integer64, .double, .float, .boolean: return "NSNumber"
        case .decimal: return "NSDecimalNumber"
        case .string: return "NSString"
        case .date: return "NSDate"
        case .binaryData: return "NSData"
        case .uuid: return "NSUUID"
        case .uri: return "NSURL"
        case .transformable, .objectID, .composite: return "NSObject"
        }
    }
}

public struct AttributeDescription: Sendable {
    public var name: String
    public var type: AttributeType
    public var isOptional: Bool
    public var defaultValue: BuilderValue?
    public var renamingIdentifier: String?
    public var allowsExternalBinaryDataStorage: Bool
    public var valueTransformerName: String?
    /// `preservesValueInHistoryOnDeletion`: a delete keeps the value in `ACHANGE.ZTOMBSTONE<n>`.
    public var preservesValueOnDeletion = false
    /// A derived attribute's derivation (`NSDerivedAttributeDescription`), e.g. `otherAccount.serverId`.
    /// A key path through a to-one relationship gets Core Data's four `Z_DA_` triggers; they call
    /// functions only Core Data registers, so rows of such a table cannot be written in plain
    /// SQLite while the triggers are on (as in Apple's own stores).
    public var derivation: String?
    /// The members of a composite attribute (type `.composite`): SwiftData's Codable structs.
    /// Each is stored in its own column named after the element, `Z<ELEMENT>` (suffixed on a
    /// collision), as the genuine SwiftData store swiftdata-cocktails-preloaded shows.
    public var elements: [AttributeDescription]

    public init(_ name: String, _ type: AttributeType, optional: Bool = true, default defaultValue: BuilderValue? = nil,
                renamingIdentifier: String? = nil, externalStorage: Bool = false, transformer: String? = nil,
                elements: [AttributeDescription] = []) {
        self.name = name
        self.type = type
        self.isOptional = optional
        self.defaultValue = defaultValue
        self.renamingIdentifier = renamingIdentifier
        self.allowsExternalBinaryDataStorage = externalStorage
        self.valueTransformerName = transformer
        self.elements = elements
    }

    /// `isIndexed` as early frameworks wrote it (iOS 9's 619: Photos' `ZGENERICASSET_ZFAVORITE_INDEX`):
    /// a single-column index named `<TABLE>_<COLUMN>_INDEX`, exactly like a to-one's, which is
    /// why an inferred model cannot take that index for a relationship.
    public var isIndexed = false

    /// The stored leaves of this attribute: itself, or for a composite its elements (nested ones
    /// flattened), each with its path of names.
    public var storedLeaves: [(path: [String], attribute: AttributeDescription)] {
        guard type == .composite, !elements.isEmpty else { return [([name], self)] }
        return elements.flatMap { element in element.storedLeaves.map { ([name] + $0.path, $0.attribute) } }
    }
}

public struct RelationshipDescription: Sendable {
    public enum DeleteRule: Int, Sendable { case noAction = 0, nullify = 1, cascade = 2, deny = 3 }

    public var name: String
    public var destination: String
    public var inverse: String?
    public var isToMany: Bool
    public var isOrdered: Bool
    public var isOptional: Bool
    public var minCount: Int
    public var deleteRule: DeleteRule
    public var renamingIdentifier: String?

    public init(_ name: String, to destination: String, inverse: String? = nil, toMany: Bool = false,
                ordered: Bool = false, optional: Bool = true, minCount: Int = 0,
                deleteRule: DeleteRule = .nullify, renamingIdentifier: String? = nil) {
        self.name = name
        self.destination = destination
        self.inverse = inverse
        self.isToMany = toMany
        self.isOrdered = ordered
        self.isOptional = optional
        self.minCount = minCount
        self.deleteRule = deleteRule
        self.renamingIdentifier = renamingIdentifier
    }

    /// `NSMaxCount`: 1 for to-one, 0 (unbounded) for to-many.
    public var maxCount: Int { isToMany ? 0 : 1 }
}

public struct FetchIndexDescription: Sendable {
    public var name: String
    public var properties: [String]
    /// An R-tree index (Photos' `boundedByRect`): archived as a transient attribute whose user info
    /// names its `_NSLocationAttributeDerivedComponents`, stored as the virtual table
    /// `Z_RT_<Entity>_<name>` with `<COLUMN>_MIN`/`_MAX` pairs, kept by triggers on the entity table.
    public var isRTree: Bool
    /// Per property: ascending (the default) or descending (`COLLATE BINARY DESC`, as Photos' indexes show).
    public var ascending: [Bool]
    public init(_ name: String, properties: [String], rtree: Bool = false, ascending: [Bool]? = nil) {
        self.name = name
        self.properties = properties
        self.isRTree = rtree
        self.ascending = ascending ?? properties.map { _ in true }
    }
}

/// A value the builder writes into a row.
public enum BuilderValue: Sendable, Equatable {
    case null
    case int(Int64)
    case double(Double)
    case string(String)
    case bool(Bool)
    /// Stored as seconds since 2001-01-01 UTC, as Core Data does.
    case date(Date)
    case data(Data)
    /// Stored as 16 raw bytes.
    case uuid(UUID)
    /// A to-one relationship's target: its entity and primary key.
    case object(entity: String, pk: Int)
}
