import Deflate
import Foundation
import SQLiteAccess
import StoreFormats

/// Reads the `NSManagedObjectModel` Core Data caches in `Z_MODELCACHE.Z_CONTENT`: raw DEFLATE
/// around an `NSKeyedArchiver` binary plist (coredata-sqlite-format.md §2.3).
///
/// The blob comes from a device, so every step is bounded: the inflated size, the plist's
/// object count and depth, the number of entities and properties, and the nesting of composite
/// attributes. The graph is walked through `KeyedArchive` references one object at a time, so
/// the deliberately cyclic parts (entity ↔ model, relationship ↔ inverse) cost nothing.
public enum ModelCacheReader {
    public static let maxInflatedBytes = 64 << 20
    public static let maxCompressedBytes = 64 << 20
    public static let maxEntities = 20_000
    public static let maxPropertiesPerEntity = 20_000
    static let maxCompositeDepth = 8

    /// The cached model, or nil when the store has no `Z_MODELCACHE` table or no blob in it.
    /// Throws `ModelError.cacheUnreadable` when the blob is there but damaged.
    public static func read(_ connection: Connection) throws -> StoreModel? {
        guard try connection.tableExists("Z_MODELCACHE") else { return nil }
        guard try connection.columns(of: "Z_MODELCACHE").contains(where: { $0.name.uppercased() == "Z_CONTENT" }) else {
            throw ModelError.cacheUnreadable(path: connection.path, detail: "the table has no Z_CONTENT column")
        }
        let size = try connection.scalar("SELECT length(Z_CONTENT) FROM Z_MODELCACHE LIMIT 1").int ?? 0
        guard size <= maxCompressedBytes else {
            throw ModelError.cacheUnreadable(path: connection.path, detail: "Z_CONTENT is \(size) bytes, above the \(maxCompressedBytes)-byte limit")
        }
        let value = try connection.scalar("SELECT Z_CONTENT FROM Z_MODELCACHE LIMIT 1")
        switch value {
        case .null: return nil
        case .blob(let blob):
            if blob.isEmpty { return nil }
            return try decode(blob, path: connection.path)
        default:
            throw ModelError.cacheUnreadable(path: connection.path, detail: "Z_CONTENT holds a non-blob value")
        }
    }

    /// Inflates and decodes a `Z_CONTENT` blob.
    public static func decode(_ blob: Data, path: String) throws(ModelError) -> StoreModel {
        let inflated: Data
        do {
            inflated = try RawDeflate.inflate(blob, maxOutputBytes: maxInflatedBytes)
        } catch {
            throw .cacheUnreadable(path: path, detail: "raw DEFLATE: \(error)")
        }
        let archive: KeyedArchive
        do {
            archive = try KeyedArchive(data: inflated)
        } catch {
            throw .cacheUnreadable(path: path, detail: "keyed archive: \(error)")
        }
        do {
            var walker = ArchivedModelWalker(archive: archive)
            var model = try walker.model()
            model.origin = "Z_MODELCACHE (\(blob.count) bytes, \(inflated.count) inflated)"
            return model
        } catch let error as KeyedArchiveError {
            throw .cacheUnreadable(path: path, detail: "archived model: \(error)")
        } catch let error as ModelError {
            throw error
        } catch {
            throw .cacheUnreadable(path: path, detail: "\(error)")
        }
    }
}

/// Turns the object graph of an archived `NSManagedObjectModel` into a `StoreModel`.
struct ArchivedModelWalker {
    typealias Ref = KeyedArchive.Reference
    let archive: KeyedArchive
    var notes: [String] = []
    /// Property names each entity lists as `_NSPropertyDescriptionProxy` objects.
    var proxies: [String: Set<String>] = [:]

    struct Damaged: Error, CustomStringConvertible {
        let description: String
    }

    mutating func model() throws -> StoreModel {
        let root = try archive.root
        guard let object = try archive.object(root), object.isKind(of: "NSManagedObjectModel") else {
            throw Damaged(description: "the archive's root is not an NSManagedObjectModel")
        }
        guard let entitiesRef = try archive.reference("NSEntities", in: object),
              let entries = try archive.stringKeyedDictionary(entitiesRef) else {
            throw Damaged(description: "the model has no NSEntities")
        }
        guard entries.count <= ModelCacheReader.maxEntities else {
            throw Damaged(description: "the model lists \(entries.count) entities, above the limit of \(ModelCacheReader.maxEntities)")
        }
        var entities: [ModelEntity] = []
        var seen = Set<String>()
        for entry in entries {
            let entity = try self.entity(entry.value, key: entry.key)
            guard seen.insert(entity.name).inserted else {
                notes.append("the cached model lists entity \(entity.name) twice; the second is ignored")
                continue
            }
            entities.append(entity)
        }
        entities = removingInheritedCopies(entities)
        var identifiers: [String] = []
        if let ref = try archive.reference("NSVersionIdentifiers", in: object), let members = try? archive.array(ref) {
            for member in members.prefix(1000) {
                if let s = try? archive.string(member) { identifiers.append(s) }
            }
        }
        return StoreModel(source: .cache, entities: entities.sorted { $0.name < $1.name },
                          versionIdentifiers: identifiers.sorted(), origin: "Z_MODELCACHE", notes: notes)
    }

    /// Newer caches (Notes, Photos 13+, Screen Time) repeat a parent's properties in each
    /// subentity's dictionary; older ones hold `_NSPropertyDescriptionProxy` objects instead. Core
    /// Data forbids a subentity to redeclare a parent's property name, so a property whose name an
    /// ancestor declares is the ancestor's: it is kept once, where it is declared, in the parent's
    /// column (both forms give the same map; a proxy no ancestor explains is noted).
    mutating func removingInheritedCopies(_ entities: [ModelEntity]) -> [ModelEntity] {
        let byName = Dictionary(entities.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        func ancestors(of entity: ModelEntity) -> [ModelEntity] {
            var chain: [ModelEntity] = []
            var seen: Set<String> = [entity.name]
            var next = entity.parent.flatMap { byName[$0] }
            while let e = next, seen.insert(e.name).inserted {
                chain.append(e)
                next = e.parent.flatMap { byName[$0] }
            }
            return chain
        }
        var copies = 0
        var result: [ModelEntity] = []
        for var entity in entities {
            let inherited = ancestors(of: entity)
            var names = Set<String>()
            for a in inherited {
                names.formUnion(a.attributes.map(\.name))
                names.formUnion(a.relationships.map(\.name))
            }
            let before = entity.attributes.count + entity.relationships.count
            entity.attributes.removeAll { names.contains($0.name) }
            entity.relationships.removeAll { names.contains($0.name) }
            copies += before - entity.attributes.count - entity.relationships.count
            let inheritedIndexes = Set(inherited.flatMap { $0.fetchIndexes.map(\.name) })
            entity.fetchIndexes.removeAll { inheritedIndexes.contains($0.name) && !$0.name.isEmpty }
            let inheritedUniques = Set(inherited.flatMap(\.uniqueConstraints))
            entity.uniqueConstraints.removeAll { inheritedUniques.contains($0) }
            for orphan in (proxies[entity.name] ?? []).subtracting(names).sorted() {
                notes.append("\(entity.name).\(orphan) is a _NSPropertyDescriptionProxy that no ancestor declares; skipped")
            }
            result.append(entity)
        }
        let proxyCount = proxies.values.reduce(0) { $0 + $1.count }
        if copies > 0 {
            notes.append("subentities repeat \(copies) of their ancestors' properties in the cache; each is listed once, where it is declared")
        }
        if proxyCount > 0 {
            notes.append("subentities stand in for \(proxyCount) inherited properties with _NSPropertyDescriptionProxy objects; each is listed once, where it is declared")
        }
        return result
    }

    /// A derived attribute's `NSDerivationExpression` in words: the key path of a key-path
    /// expression (`otherAccount.serverId`), the function of a function expression, else its class.
    func derivationText(_ object: KeyedArchive.ArchivedObject) throws -> String? {
        guard let ref = try archive.reference("NSDerivationExpression", in: object),
              let expression = try archive.object(ref) else { return nil }
        if let args = try archive.reference("NSArguments", in: expression), let members = try? archive.array(args) {
            for member in members.prefix(8) {
                if let m = try archive.object(member), let path = try string("NSKeyPath", in: m) { return path }
            }
        }
        if let path = try string("NSKeyPath", in: expression) { return path }
        if let selector = try string("NSSelectorName", in: expression) { return selector }
        return expression.className
    }

    /// The attributes named by `_NSLocationAttributeDerivedComponents` in an attribute's user
    /// info ("latitude, longitude"): how Core Data marks the source of an R-tree fetch index.
    func locationComponents(_ object: KeyedArchive.ArchivedObject) throws -> [String]? {
        guard let infoRef = try archive.reference("NSUserInfo", in: object),
              let entries = try? archive.stringKeyedDictionary(infoRef),
              let entry = entries.first(where: { $0.key == "_NSLocationAttributeDerivedComponents" }) else { return nil }
        // Photos 15 writes "latitude, longitude"; Photos 10.15 an array of the two names.
        var names: [String] = []
        if let text = try? archive.string(entry.value) {
            names = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        } else if let members = try? archive.array(entry.value) {
            names = members.prefix(16).compactMap { try? archive.string($0) }
        }
        names = names.filter { !$0.isEmpty }
        return names.isEmpty ? nil : Array(names.prefix(16))
    }

    func string(_ key: String, in object: KeyedArchive.ArchivedObject) throws -> String? {
        guard let ref = try archive.reference(key, in: object) else { return nil }
        return try archive.string(ref)
    }

    /// The name of an entity object (for superentities and destinations).
    func entityName(_ ref: Ref) throws -> String? {
        guard let object = try archive.object(ref) else { return nil }
        return try string("NSEntityName", in: object)
    }

    mutating func entity(_ ref: Ref, key: String) throws -> ModelEntity {
        guard let object = try archive.object(ref), object.isKind(of: "NSEntityDescription") else {
            throw Damaged(description: "NSEntities[\(key)] is not an NSEntityDescription")
        }
        let name = try string("NSEntityName", in: object) ?? key
        var entity = ModelEntity(name: name)
        entity.className = try string("NSClassNameForEntity", in: object)
        entity.renamingIdentifier = try string("NSRenamingIdentifier", in: object)
        entity.versionHashModifier = try? string("NSVersionHashModifier", in: object)
        entity.isAbstract = object.bool("NSIsAbstract") ?? false
        if let superRef = try archive.reference("NSSuperentity", in: object) {
            entity.parent = try entityName(superRef)
        }
        if let propertiesRef = try archive.reference("NSProperties", in: object),
           let properties = try archive.stringKeyedDictionary(propertiesRef) {
            guard properties.count <= ModelCacheReader.maxPropertiesPerEntity else {
                throw Damaged(description: "entity \(name) lists \(properties.count) properties, above the limit")
            }
            for property in properties {
                guard let propertyObject = try archive.object(property.value) else { continue }
                if propertyObject.isKind(of: "NSRelationshipDescription") {
                    entity.relationships.append(try relationship(propertyObject, key: property.key))
                } else if propertyObject.isKind(of: "NSAttributeDescription") || propertyObject.isKind(of: "NSCompositeAttributeDescription") {
                    let attribute = try attribute(propertyObject, key: property.key, depth: 0)
                    entity.attributes.append(attribute)
                    if let components = try locationComponents(propertyObject) {
                        // A transient location attribute (Photos' boundedByRect) is served by an R-tree
                        // fetch index, the virtual table `Z_RT_<Entity>_<attribute>`.
                        entity.fetchIndexes.append(ModelFetchIndex(name: attribute.name, elements: components.map {
                            .init(property: $0, ascending: true, kind: "RTree")
                        }))
                    }
                } else if propertyObject.isKind(of: "_NSPropertyDescriptionProxy") {
                    // Older caches (Photos 10.15.7) stand in for each inherited property with a proxy;
                    // the property itself is read where the parent declares it.
                    proxies[name, default: []].insert(property.key)
                } else {
                    notes.append("\(name).\(property.key) is a \(propertyObject.className ?? "value") (not stored in a column); skipped")
                }
            }
        }
        entity.attributes.sort { $0.name < $1.name }
        entity.relationships.sort { $0.name < $1.name }
        if let tuplesRef = try archive.reference("NSUniqueTuples", in: object), let tuples = try archive.array(tuplesRef) {
            for tuple in tuples.prefix(10_000) {
                if let single = try? archive.string(tuple) {
                    entity.uniqueConstraints.append([single])
                } else if let members = try? archive.array(tuple) {
                    let names = members.compactMap { try? archive.string($0) }
                    if !names.isEmpty { entity.uniqueConstraints.append(names) }
                }
            }
        }
        if let indexesRef = try archive.reference("NSFetchIndexDescriptions", in: object),
           let indexes = try archive.array(indexesRef) {
            for indexRef in indexes.prefix(10_000) {
                guard let index = try archive.object(indexRef) else { continue }
                let indexName = try string("NSIndexName", in: index) ?? ""
                var elements: [ModelFetchIndex.Element] = []
                if let elementsRef = try archive.reference("NSIndexElements", in: index),
                   let members = try archive.array(elementsRef) {
                    for memberRef in members.prefix(1000) {
                        guard let member = try archive.object(memberRef) else { continue }
                        var property = try string("NSPropertyName", in: member)
                        if property == nil, let propertyRef = try archive.reference("NSProperty", in: member),
                           let propertyObject = try archive.object(propertyRef) {
                            property = try string("NSPropertyName", in: propertyObject)
                        }
                        guard let property else { continue }
                        elements.append(.init(property: property, ascending: member.bool("NSAscending") ?? true,
                                              kind: member.int("NSFetchIndexElementType") == 1 ? "RTree" : "Binary"))
                    }
                }
                entity.fetchIndexes.append(ModelFetchIndex(name: indexName, elements: elements))
            }
        }
        return entity
    }

    mutating func attribute(_ object: KeyedArchive.ArchivedObject, key: String, depth: Int) throws -> ModelAttribute {
        let name = try string("NSPropertyName", in: object) ?? key
        let code = object.int("NSAttributeType").flatMap { Int(exactly: $0) } ?? 0
        var type = ModelAttributeType(code: code)
        if object.isKind(of: "NSCompositeAttributeDescription") { type = .composite }
        var attribute = ModelAttribute(name: name, type: type)
        attribute.valueClassName = try string("NSAttributeValueClassName", in: object)
        attribute.isOptional = object.bool("NSIsOptional") ?? ((object.int("_P") ?? 0) & 0x2 != 0)
        attribute.isTransient = object.bool("NSIsTransient") ?? false
        attribute.renamingIdentifier = try string("NSRenamingIdentifier", in: object)
        attribute.valueTransformerName = try string("NSValueTransformerName", in: object)
        let flags = AttributeFlags(rawValue: object.int("NSFlagsKey") ?? 0)
        attribute.cacheFlags = object.int("NSFlagsKey").map(AttributeFlags.init(rawValue:))
        attribute.allowsExternalBinaryDataStorage = flags.contains(.externalBinaryDataStorage)
        attribute.preservesValueOnDeletion = flags.contains(.preservesValueOnDeletion)
        if object.isKind(of: "NSDerivedAttributeDescription") {
            attribute.derivation = (try? derivationText(object)) ?? "an expression this reader does not decode"
        }
        if let defaultRef = try archive.reference("NSDefaultValue", in: object) {
            attribute.defaultValue = Self.display(try? archive.json(defaultRef, depthLimit: 8, maxValues: 1000))
        }
        if type == .composite {
            guard depth < ModelCacheReader.maxCompositeDepth else {
                throw Damaged(description: "composite attribute \(name) is nested more than \(ModelCacheReader.maxCompositeDepth) levels deep")
            }
            // The key holding the elements is not verified on a real store; these are the candidates.
            for elementsKey in ["NSElements", "NSCompositeElements", "elements"] {
                guard let ref = try archive.reference(elementsKey, in: object), let members = try archive.array(ref) else { continue }
                for memberRef in members.prefix(1000) {
                    guard let member = try archive.object(memberRef),
                          member.isKind(of: "NSAttributeDescription") || member.isKind(of: "NSCompositeAttributeDescription") else { continue }
                    attribute.elements.append(try self.attribute(member, key: "", depth: depth + 1))
                }
                break
            }
        }
        return attribute
    }

    func relationship(_ object: KeyedArchive.ArchivedObject, key: String) throws -> ModelRelationship {
        let name = try string("NSPropertyName", in: object) ?? key
        var destination = try string("_NSDestinationEntityName", in: object)
        if destination == nil, let ref = try archive.reference("NSDestinationEntity", in: object) {
            destination = try entityName(ref)
        }
        var inverse = try string("_NSInverseRelationshipName", in: object)
        if inverse == nil, let ref = try archive.reference("NSInverseRelationship", in: object),
           let inverseObject = try archive.object(ref) {
            inverse = try string("NSPropertyName", in: inverseObject)
        }
        let maxCount = object.int("NSMaxCount").flatMap { Int(exactly: $0) } ?? 1
        return ModelRelationship(
            name: name, destination: destination ?? "", inverse: inverse,
            isToMany: maxCount != 1, isOrdered: object.bool("NSIsOrdered") ?? false,
            isOptional: object.bool("NSIsOptional") ?? ((object.int("_P") ?? 0) & 0x2 != 0),
            isTransient: object.bool("NSIsTransient") ?? false,
            minCount: object.int("NSMinCount").flatMap { Int(exactly: $0) } ?? 0, maxCount: maxCount,
            deleteRule: .init(code: object.int("NSDeleteRule").flatMap { Int(exactly: $0) } ?? 1),
            renamingIdentifier: try string("NSRenamingIdentifier", in: object))
    }

    /// A short text form of a default value.
    static func display(_ value: PlistValue?) -> String? {
        guard let value else { return nil }
        switch value {
        case .string(let s): return s == "$null" ? nil : s
        case .integer(let i): return String(i)
        case .unsignedInteger(let u): return String(u)
        case .real(let d): return String(d)
        case .bool(let b): return b ? "true" : "false"
        case .date(let seconds): return ValueDecoder.iso8601(referenceSeconds: seconds)
        case .data(let d): return "<\(d.count) bytes>"
        case .uid(let u): return "<UID \(u)>"
        case .array(let items): return "[" + items.prefix(20).compactMap { display($0) }.joined(separator: ", ") + "]"
        case .dictionary(let entries):
            if let cls = entries["$class"]?.stringValue { return "<\(cls)>" }
            return "{" + entries.keys.sorted().prefix(20).joined(separator: ", ") + "}"
        }
    }
}
