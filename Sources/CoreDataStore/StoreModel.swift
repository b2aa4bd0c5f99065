import Foundation

/// A Core Data model as storelens knows it: entities, attributes, relationships, constraints,
/// read from the store's own `Z_MODELCACHE`, from an Xcode model (`--model`), or inferred from
/// the SQL schema alone. It mirrors `NSManagedObjectModel` without Apple's frameworks.
public struct StoreModel: Sendable {
    /// Where the model came from, in order of preference.
    public enum Source: String, Sendable {
        /// The `NSManagedObjectModel` archived in `Z_MODELCACHE`: the model that last opened the store.
        case cache
        /// An Xcode model given with `--model` (`.xcdatamodeld` or `.xcdatamodel`).
        case xcdatamodel
        /// A compiled model from an app bundle (`.mom`, or the current version of a `.momd`).
        case compiled
        /// Guessed from `Z_PRIMARYKEY`, column names, declared types and index names.
        case inferred
    }

    public var source: Source
    /// Entities in the order the source lists them (readers sort them by name).
    public var entities: [ModelEntity]
    /// `NSVersionIdentifiers` (cache) or `userDefinedModelVersionIdentifier` (Xcode model).
    public var versionIdentifiers: [String]
    /// The source in words, e.g. "Z_MODELCACHE (2456 bytes, 3759 inflated)" or "Model.xcdatamodeld/Model.xcdatamodel".
    public var origin: String
    /// Things worth knowing about how the model was read (fallbacks, guesses, skipped parts).
    public var notes: [String]
    /// Where the cached model and an Xcode model given with `--model` disagree.
    public var disagreements: [String]
    /// `TABLE.COLUMN` of the columns an inferred model reads as numbers although Core Data's
    /// to-one index is on them: nothing in the store proves them references (empty otherwise).
    public var uncertainColumns: [String] = []
    /// Where each entity and property is declared, for a model read from an Xcode model's
    /// `contents` file (nil for the other sources): what code review tools point at.
    public var declarations: ModelDeclarations?

    public init(source: Source, entities: [ModelEntity], versionIdentifiers: [String] = [], origin: String,
                notes: [String] = [], disagreements: [String] = []) {
        self.source = source
        self.entities = entities
        self.versionIdentifiers = versionIdentifiers
        self.origin = origin
        self.notes = notes
        self.disagreements = disagreements
    }

    public func entity(_ name: String) -> ModelEntity? { entities.first { $0.name == name } }

    /// The file a model was read from and the line each `<entity>` and each of its `<attribute>`
    /// and `<relationship>` elements starts on.
    public struct ModelDeclarations: Sendable, Equatable {
        public let file: String
        /// By `Entity` and `Entity.property`.
        let lines: [String: Int]

        public init(file: String, lines: [String: Int]) {
            self.file = file
            self.lines = lines
        }

        /// The line of `property` of `entity` when it is declared, else the entity's own.
        public func line(entity: String, property: String? = nil) -> Int? {
            property.flatMap { lines[entity + "." + $0] } ?? lines[entity]
        }
    }

    /// The entity and its ancestors, root first. Stops at an unknown parent or a cycle.
    public func lineage(of name: String) -> [ModelEntity] {
        var chain: [ModelEntity] = []
        var seen = Set<String>()
        var current = entity(name)
        while let e = current, seen.insert(e.name).inserted {
            chain.append(e)
            current = e.parent.flatMap { entity($0) }
        }
        return chain.reversed()
    }

    /// Direct subentities, by name.
    public func children(of name: String) -> [ModelEntity] {
        entities.filter { $0.parent == name && $0.name != name }.sorted { $0.name < $1.name }
    }

    /// Whether any entity names `name` as its parent.
    public func hasSubentities(_ name: String) -> Bool {
        entities.contains { $0.parent == name && $0.name != name }
    }

    /// The entity and every entity below it, depth-first (cycle-safe).
    public func subtree(of name: String) -> [ModelEntity] {
        var result: [ModelEntity] = []
        var seen = Set<String>()
        func visit(_ e: ModelEntity) {
            guard seen.insert(e.name).inserted else { return }
            result.append(e)
            for child in children(of: e.name) { visit(child) }
        }
        if let e = entity(name) { visit(e) }
        return result
    }

    /// Entities depth-first over the inheritance forest, parent before children, siblings by
    /// name: the order in which Core Data numbers entities (`Z_ENT`).
    public var entitiesInNumberingOrder: [ModelEntity] {
        let names = Set(entities.map(\.name))
        var result: [ModelEntity] = []
        var seen = Set<String>()
        func visit(_ e: ModelEntity) {
            guard seen.insert(e.name).inserted else { return }
            result.append(e)
            for child in children(of: e.name) { visit(child) }
        }
        for root in entities.filter({ $0.parent == nil || !names.contains($0.parent!) }).sorted(by: { $0.name < $1.name }) {
            visit(root)
        }
        // Entities caught in a parent cycle are still listed.
        for e in entities.sorted(by: { $0.name < $1.name }) where !seen.contains(e.name) { visit(e) }
        return result
    }

    /// The properties whose changes an update's `ZCOLUMNS` bitmap records, in bit order:
    /// to-one keys, entity keys (destination has subentities), order keys (inverse is an ordered
    /// to-many), attributes, to-many, many-to-many; within each group the inheritance chain root
    /// first and each level's own properties by name (coredata-sqlite-format.md §4.3).
    public func updateBitOrder(entity name: String) -> [String] {
        var toOne: [String] = [], entityKeys: [String] = [], orderKeys: [String] = []
        var attributes: [String] = [], toMany: [String] = [], manyToMany: [String] = []
        for level in lineage(of: name) {
            let relationships = level.relationships.filter { !$0.isTransient }.sorted { $0.name < $1.name }
            for r in relationships where !r.isToMany {
                toOne.append(r.name)
                if hasSubentities(r.destination) { entityKeys.append(r.name) }
                if let inverse = inverse(of: r), inverse.isToMany, inverse.isOrdered { orderKeys.append(r.name) }
            }
            attributes += level.attributes.filter { !$0.isTransient }.map(\.name).sorted()
            for r in relationships where r.isToMany {
                if inverse(of: r)?.isToMany == true { manyToMany.append(r.name) } else { toMany.append(r.name) }
            }
        }
        return toOne + entityKeys + orderKeys + attributes + toMany + manyToMany
    }

    /// The attributes whose values a delete keeps in `ACHANGE.ZTOMBSTONE0…n`, in column order:
    /// root level first, each level's preserved attributes by name (matches knowledgeC's Event —
    /// Object.uuid, then Event.shouldSync — and Screen Time's InstalledApp).
    public func tombstoneOrder(entity name: String) -> [String] {
        tombstoneAttributes(entity: name).map(\.name)
    }

    /// The attributes of `tombstoneOrder`, so tombstone values can be decoded by their type.
    public func tombstoneAttributes(entity name: String) -> [ModelAttribute] {
        lineage(of: name).flatMap { level in
            level.attributes.filter { $0.preservesValueOnDeletion && !$0.isTransient }.sorted { $0.name < $1.name }
        }
    }

    /// The inverse relationship of `relationship`, looked up on its destination (and the
    /// destination's ancestors, which subentities inherit from).
    public func inverse(of relationship: ModelRelationship) -> ModelRelationship? {
        guard let inverseName = relationship.inverse else { return nil }
        for level in lineage(of: relationship.destination).reversed() {
            if let r = level.relationships.first(where: { $0.name == inverseName }) { return r }
        }
        return nil
    }
}

/// One entity of a model.
public struct ModelEntity: Sendable {
    public var name: String
    /// `NSClassNameForEntity` / `representedClassName`; nil when the source does not say.
    public var className: String?
    /// The name this entity had before a rename; Apple stores the entity's own name when there was none.
    public var renamingIdentifier: String?
    public var parent: String?
    public var isAbstract: Bool
    /// Properties declared by this entity (not inherited), sorted by name.
    public var attributes: [ModelAttribute]
    public var relationships: [ModelRelationship]
    /// Each tuple of property names must be unique together.
    public var uniqueConstraints: [[String]]
    public var fetchIndexes: [ModelFetchIndex]
    public var versionHashModifier: String?

    public init(name: String, className: String? = nil, renamingIdentifier: String? = nil, parent: String? = nil,
                isAbstract: Bool = false, attributes: [ModelAttribute] = [], relationships: [ModelRelationship] = [],
                uniqueConstraints: [[String]] = [], fetchIndexes: [ModelFetchIndex] = [], versionHashModifier: String? = nil) {
        self.name = name
        self.className = className
        self.renamingIdentifier = renamingIdentifier
        self.parent = parent
        self.isAbstract = isAbstract
        self.attributes = attributes
        self.relationships = relationships
        self.uniqueConstraints = uniqueConstraints
        self.fetchIndexes = fetchIndexes
        self.versionHashModifier = versionHashModifier
    }

    /// The legacy name, when the renaming identifier differs from the name (a real rename).
    public var legacyName: String? { legacy(renamingIdentifier, of: name) }
}

/// `NSAttributeType`, with the names Xcode shows.
public enum ModelAttributeType: Sendable, Hashable {
    case integer16, integer32, integer64, decimal, double, float, string, boolean, date, binary, uuid, uri
    case transformable, objectID, composite, undefined
    /// A code this reader does not know.
    case unknown(Int)

    public init(code: Int) {
        switch code {
        case 0: self = .undefined
        case 100: self = .integer16
        case 200: self = .integer32
        case 300: self = .integer64
        case 400: self = .decimal
        case 500: self = .double
        case 600: self = .float
        case 700: self = .string
        case 800: self = .boolean
        case 900: self = .date
        case 1000: self = .binary
        case 1100: self = .uuid
        case 1200: self = .uri
        case 1800: self = .transformable
        case 2000: self = .objectID
        case 2100: self = .composite
        default: self = .unknown(code)
        }
    }

    /// The `attributeType` of Xcode's model XML.
    public init?(xmlName: String) {
        switch xmlName {
        case "Integer 16": self = .integer16
        case "Integer 32": self = .integer32
        case "Integer 64": self = .integer64
        case "Decimal": self = .decimal
        case "Double": self = .double
        case "Float": self = .float
        case "String": self = .string
        case "Boolean": self = .boolean
        case "Date": self = .date
        case "Binary": self = .binary
        case "UUID": self = .uuid
        case "URI": self = .uri
        case "Transformable": self = .transformable
        case "Object ID", "ObjectID": self = .objectID
        case "Composite": self = .composite
        case "Undefined": self = .undefined
        default: return nil
        }
    }

    /// `NSAttributeType`'s raw value.
    public var code: Int {
        switch self {
        case .undefined: return 0
        case .integer16: return 100
        case .integer32: return 200
        case .integer64: return 300
        case .decimal: return 400
        case .double: return 500
        case .float: return 600
        case .string: return 700
        case .boolean: return 800
        case .date: return 900
        case .binary: return 1000
        case .uuid: return 1100
        case .uri: return 1200
        case .transformable: return 1800
        case .objectID: return 2000
        case .composite: return 2100
        case .unknown(let code): return code
        }
    }

    /// The name Xcode shows ("Integer 64", "String", "UUID" …).
    public var name: String {
        switch self {
        case .integer16: return "Integer 16"
        case .integer32: return "Integer 32"
        case .integer64: return "Integer 64"
        case .decimal: return "Decimal"
        case .double: return "Double"
        case .float: return "Float"
        case .string: return "String"
        case .boolean: return "Boolean"
        case .date: return "Date"
        case .binary: return "Binary"
        case .uuid: return "UUID"
        case .uri: return "URI"
        case .transformable: return "Transformable"
        case .objectID: return "Object ID"
        case .composite: return "Composite"
        case .undefined: return "Undefined"
        case .unknown(let code): return "Unknown (\(code))"
        }
    }

    /// The SQL type Core Data declares for the column (§3.2).
    public var sqlType: String? {
        switch self {
        case .integer16, .integer32, .integer64, .boolean: return "INTEGER"
        case .double, .float: return "FLOAT"
        case .date: return "TIMESTAMP"
        case .decimal: return "DECIMAL"
        case .string, .uri: return "VARCHAR"
        case .binary, .uuid, .transformable, .objectID: return "BLOB"
        case .composite, .undefined, .unknown: return nil
        }
    }

    public var isInteger: Bool { self == .integer16 || self == .integer32 || self == .integer64 }
}

/// One attribute of an entity.
public struct ModelAttribute: Sendable {
    public var name: String
    public var type: ModelAttributeType
    /// `NSAttributeValueClassName` (`NSString`, `NSUUID` …) or Xcode's `customClassName`.
    public var valueClassName: String?
    public var isOptional: Bool
    public var isTransient: Bool
    /// The default value, rendered for display.
    public var defaultValue: String?
    public var renamingIdentifier: String?
    public var valueTransformerName: String?
    public var allowsExternalBinaryDataStorage: Bool
    /// The members of a composite attribute (SwiftData Codable structs, `NSCompositeAttributeDescription`).
    public var elements: [ModelAttribute]
    /// The column this attribute is known to use (inferred models name it; other sources leave it nil).
    public var columnHint: String?
    /// `preservesValueInHistoryOnDeletion`: a delete's history change keeps the value in a
    /// `ZTOMBSTONE<n>` column (flag 0x10 of `NSFlagsKey` in the cache).
    public var preservesValueOnDeletion = false
    /// `NSFlagsKey` as the model cache archived it (nil for a model read from Xcode's XML or
    /// inferred): kept whole so that bits without a name here are still shown.
    public var cacheFlags: AttributeFlags?
    /// For a derived attribute (`NSDerivedAttributeDescription`): its derivation, e.g. the key path
    /// `otherAccount.serverId`. Core Data keeps the column current with `Z_DA_` triggers.
    public var derivation: String?

    public init(name: String, type: ModelAttributeType, valueClassName: String? = nil, isOptional: Bool = true,
                isTransient: Bool = false, defaultValue: String? = nil, renamingIdentifier: String? = nil,
                valueTransformerName: String? = nil, allowsExternalBinaryDataStorage: Bool = false,
                elements: [ModelAttribute] = []) {
        self.name = name
        self.type = type
        self.valueClassName = valueClassName
        self.isOptional = isOptional
        self.isTransient = isTransient
        self.defaultValue = defaultValue
        self.renamingIdentifier = renamingIdentifier
        self.valueTransformerName = valueTransformerName
        self.allowsExternalBinaryDataStorage = allowsExternalBinaryDataStorage
        self.elements = elements
    }

    public var legacyName: String? { legacy(renamingIdentifier, of: name) }

    /// Stored through a value transformer (type Transformable, or a transformer name set).
    public var isTransformable: Bool { type == .transformable || valueTransformerName != nil }
}

/// One relationship of an entity.
public struct ModelRelationship: Sendable {
    public enum DeleteRule: Sendable, Hashable {
        case noAction, nullify, cascade, deny
        case unknown(Int)

        public init(code: Int) {
            switch code {
            case 0: self = .noAction
            case 1: self = .nullify
            case 2: self = .cascade
            case 3: self = .deny
            default: self = .unknown(code)
            }
        }

        public init?(xmlName: String) {
            switch xmlName {
            case "No Action", "NoAction": self = .noAction
            case "Nullify": self = .nullify
            case "Cascade": self = .cascade
            case "Deny": self = .deny
            default: return nil
            }
        }

        public var name: String {
            switch self {
            case .noAction: return "No Action"
            case .nullify: return "Nullify"
            case .cascade: return "Cascade"
            case .deny: return "Deny"
            case .unknown(let code): return "Unknown (\(code))"
            }
        }
    }

    public var name: String
    /// The destination entity's name; empty when the source does not say (inferred models).
    public var destination: String
    public var inverse: String?
    public var isToMany: Bool
    public var isOrdered: Bool
    public var isOptional: Bool
    public var isTransient: Bool
    public var minCount: Int
    /// `NSMaxCount`: 1 for to-one, 0 for an unbounded to-many.
    public var maxCount: Int
    public var deleteRule: DeleteRule
    public var renamingIdentifier: String?
    /// The foreign-key column this relationship is known to use: its own for a to-one, the
    /// destination's for a to-many (inferred models name it; other sources leave it nil).
    public var columnHint: String?

    public init(name: String, destination: String, inverse: String? = nil, isToMany: Bool = false,
                isOrdered: Bool = false, isOptional: Bool = true, isTransient: Bool = false, minCount: Int = 0,
                maxCount: Int? = nil, deleteRule: DeleteRule = .nullify, renamingIdentifier: String? = nil) {
        self.name = name
        self.destination = destination
        self.inverse = inverse
        self.isToMany = isToMany
        self.isOrdered = isOrdered
        self.isOptional = isOptional
        self.isTransient = isTransient
        self.minCount = minCount
        self.maxCount = maxCount ?? (isToMany ? 0 : 1)
        self.deleteRule = deleteRule
        self.renamingIdentifier = renamingIdentifier
    }

    public var legacyName: String? { legacy(renamingIdentifier, of: name) }
}

/// An `NSFetchIndexDescription`.
public struct ModelFetchIndex: Sendable {
    public struct Element: Sendable {
        public var property: String
        public var ascending: Bool
        /// "Binary" (B-tree) or "RTree".
        public var kind: String
        public init(property: String, ascending: Bool = true, kind: String = "Binary") {
            self.property = property
            self.ascending = ascending
            self.kind = kind
        }
    }

    public var name: String
    public var elements: [Element]
    public init(name: String, elements: [Element]) {
        self.name = name
        self.elements = elements
    }
}

/// The previous name a renaming identifier records, when it differs from the current name
/// (Apple stores the current name there when nothing was renamed).
func legacy(_ renamingIdentifier: String?, of name: String) -> String? {
    guard let id = renamingIdentifier, !id.isEmpty, id != name else { return nil }
    return id
}
