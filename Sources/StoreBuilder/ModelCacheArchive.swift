import Foundation
import StoreFormats

/// Writes a model as the `NSManagedObjectModel` keyed archive Core Data keeps in
/// `Z_MODELCACHE`, with the classes and keys seen in real caches (coredata-sqlite-format.md §2.3).
enum ModelCacheArchive {
    static func archive(_ model: ModelDescription, layout: StoreLayout) throws -> Data {
        // Entities are archived in entity-number order, as Core Data sorts them.
        let graph = ModelGraphWriter(model: model, ordered: layout.entities.map(\.description))
        for e in graph.ordered { graph.writeEntity(e) }
        graph.writeModel()
        return try graph.w.finish(root: graph.root)
    }

    static func defaultValue(_ value: BuilderValue, writer w: KeyedArchiveWriter) -> KeyedArchive.Reference {
        switch value {
        case .null, .object: return .null
        case .int(let i): return w.int(i)
        case .double(let d): return w.double(d)
        case .bool(let b): return w.bool(b)
        case .string(let s): return w.string(s)
        case .date(let d): return w.date(d)
        case .data(let d): return w.data(d)
        case .uuid(let u): return w.uuid(u)
        }
    }
}

/// One model's object graph, written into a keyed archive. The graph is cyclic, so every
/// entity and relationship gets its UID up front and is filled in later. The order of the
/// writer's calls decides the archive's bytes: each step below keeps the order Core Data's
/// archives show.
struct ModelGraphWriter {
    let w = KeyedArchiveWriter()
    let model: ModelDescription
    let ordered: [EntityDescription]
    let byName: [String: EntityDescription]
    let root: KeyedArchive.Reference
    let entityRefs: [String: KeyedArchive.Reference]
    /// "Entity.relationship" → its UID.
    let propertyRefs: [String: KeyedArchive.Reference]
    let null = PlistValue.uid(0)

    init(model: ModelDescription, ordered: [EntityDescription]) {
        self.model = model
        self.ordered = ordered
        byName = Dictionary(ordered.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        root = w.reserve()
        var entityRefs: [String: KeyedArchive.Reference] = [:]
        for e in ordered { entityRefs[e.name] = w.reserve() }
        var propertyRefs: [String: KeyedArchive.Reference] = [:]
        for e in ordered {
            for r in e.relationships { propertyRefs[e.name + "." + r.name] = w.reserve() }
        }
        self.entityRefs = entityRefs
        self.propertyRefs = propertyRefs
    }

    func ref(_ r: KeyedArchive.Reference?) -> PlistValue { r?.plistValue ?? null }

    /// One entity: its attributes, R-tree indexes, relationships and inherited properties, then
    /// the entity description itself.
    func writeEntity(_ e: EntityDescription) {
        guard let entityRef = entityRefs[e.name] else { return }
        var keys: [KeyedArchive.Reference] = []
        var values: [KeyedArchive.Reference] = []
        for a in e.attributes {
            keys.append(w.string(a.name))
            values.append(attributeObject(a, entity: entityRef))
        }
        for index in e.fetchIndexes where index.isRTree {
            keys.append(w.string(index.name))
            values.append(rTreeAttribute(index, entity: entityRef))
        }
        for r in e.relationships {
            guard let rRef = propertyRefs[e.name + "." + r.name] else { continue }
            writeRelationship(r, at: rRef, entity: entityRef)
            keys.append(w.string(r.name))
            values.append(rRef)
        }
        writeInherited(by: e, entity: entityRef, keys: &keys, values: &values)
        writeEntityDescription(e, at: entityRef, keys: keys, values: values)
    }

    /// An attribute (a composite with its elements) as an object of `entity`.
    func attributeObject(_ a: AttributeDescription, entity entityRef: KeyedArchive.Reference) -> KeyedArchive.Reference {
        var fields: [String: PlistValue] = [
            "NSPropertyName": w.string(a.name).plistValue,
            "NSRenamingIdentifier": w.string(a.renamingIdentifier ?? a.name).plistValue,
            "NSAttributeType": .integer(Int64(a.type.rawValue)),
            "NSAttributeValueClassName": w.string(a.type.valueClassName).plistValue,
            "NSEntity": entityRef.plistValue,
            "NSDefaultValue": a.defaultValue.map { ModelCacheArchive.defaultValue($0, writer: w).plistValue } ?? null,
            "NSValueTransformerName": a.valueTransformerName.map { w.string($0).plistValue } ?? null,
            // As Apple's caches archive them: 0x04 external binary storage (Photos, the iOS 17
            // MeWe store), 0x10 preserved in history on deletion (knowledgeC, Screen Time).
            "NSFlagsKey": .integer((a.allowsExternalBinaryDataStorage ? 0x04 : 0) | (a.preservesValueOnDeletion ? 0x10 : 0)),
            "_P": .integer(241),
        ]
        if a.isOptional { fields["NSIsOptional"] = .bool(true) }
        if a.type == .composite {
            // The key holding the elements is an assumption (no real archive examined).
            fields["NSElements"] = w.array(a.elements.map { attributeObject($0, entity: entityRef) }).plistValue
            return w.object(className: "NSCompositeAttributeDescription", fields: fields)
        }
        return w.object(className: "NSAttributeDescription", fields: fields)
    }

    /// Photos keeps an R-tree index as a transient attribute naming its location components.
    func rTreeAttribute(_ index: FetchIndexDescription, entity entityRef: KeyedArchive.Reference) -> KeyedArchive.Reference {
        w.object(className: "NSAttributeDescription", fields: [
            "NSPropertyName": w.string(index.name).plistValue,
            "NSRenamingIdentifier": w.string(index.name).plistValue,
            "NSAttributeType": .integer(0),
            "NSEntity": entityRef.plistValue,
            "NSIsTransient": .bool(true),
            "NSIsOptional": .bool(true),
            "NSUserInfo": w.dictionary(keys: [w.string("_NSLocationAttributeDerivedComponents")],
                                       values: [w.string(index.properties.joined(separator: ", "))]).plistValue,
            "NSFlagsKey": .integer(0),
            "_P": .integer(59),
        ])
    }

    /// Fills in a declared relationship's reserved UID.
    func writeRelationship(_ r: RelationshipDescription, at rRef: KeyedArchive.Reference, entity entityRef: KeyedArchive.Reference) {
        var fields: [String: PlistValue] = [
            "NSPropertyName": w.string(r.name).plistValue,
            "NSRenamingIdentifier": w.string(r.renamingIdentifier ?? r.name).plistValue,
            "NSEntity": entityRef.plistValue,
            "NSDestinationEntity": ref(entityRefs[r.destination]),
            "_NSDestinationEntityName": w.string(r.destination).plistValue,
            "NSInverseRelationship": ref(r.inverse.flatMap { propertyRefs[r.destination + "." + $0] }),
            "_NSInverseRelationshipName": r.inverse.map { w.string($0).plistValue } ?? null,
            "NSMinCount": .integer(Int64(r.minCount)),
            "NSMaxCount": .integer(Int64(r.maxCount)),
            "NSDeleteRule": .integer(Int64(r.deleteRule.rawValue)),
            "_P": .integer(r.isOptional ? 243 : 241),
        ]
        if r.isOptional { fields["NSIsOptional"] = .bool(true) }
        if r.isOrdered { fields["NSIsOrdered"] = .bool(true) }
        w.set(rRef, className: "NSRelationshipDescription", fields: fields)
    }

    /// Inherited properties, as the model asks: copies of the ancestor's objects, or proxies to
    /// them (numbered from 1 up the ancestry); none for `.declaredOnly`.
    func writeInherited(by e: EntityDescription, entity entityRef: KeyedArchive.Reference,
                        keys: inout [KeyedArchive.Reference], values: inout [KeyedArchive.Reference]) {
        let copies = model.inheritedPropertiesInCache == .copies
        var ancestor = e.parent.flatMap { byName[$0] }
        var seenAncestors: Set<String> = [e.name]
        var referenceID: Int64 = 1
        while let level = ancestor, seenAncestors.insert(level.name).inserted, model.inheritedPropertiesInCache != .declaredOnly {
            for a in level.attributes {
                keys.append(w.string(a.name))
                if copies {
                    values.append(attributeObject(a, entity: entityRef))
                } else {
                    values.append(w.object(className: "_NSPropertyDescriptionProxy", fields: [
                        "NSReferenceID": .integer(referenceID), "NSEntityDescription": entityRef.plistValue,
                        "NSUnderlyingProperty": w.object(className: "NSAttributeDescription", fields: [
                            "NSPropertyName": w.string(a.name).plistValue, "NSAttributeType": .integer(Int64(a.type.rawValue)),
                        ]).plistValue,
                    ]))
                }
                referenceID += 1
            }
            for r in level.relationships {
                guard let underlying = propertyRefs[level.name + "." + r.name] else { continue }
                keys.append(w.string(r.name))
                if copies {
                    values.append(inheritedRelationshipCopy(r, entity: entityRef))
                } else {
                    values.append(w.object(className: "_NSPropertyDescriptionProxy", fields: [
                        "NSReferenceID": .integer(referenceID), "NSEntityDescription": entityRef.plistValue,
                        "NSUnderlyingProperty": underlying.plistValue,
                    ]))
                }
                referenceID += 1
            }
            ancestor = level.parent.flatMap { byName[$0] }
        }
    }

    /// An ancestor's relationship copied into a subentity (no renaming identifier, no inverse object).
    func inheritedRelationshipCopy(_ r: RelationshipDescription, entity entityRef: KeyedArchive.Reference) -> KeyedArchive.Reference {
        var fields: [String: PlistValue] = [
            "NSPropertyName": w.string(r.name).plistValue,
            "NSEntity": entityRef.plistValue,
            "NSDestinationEntity": ref(entityRefs[r.destination]),
            "_NSDestinationEntityName": w.string(r.destination).plistValue,
            "_NSInverseRelationshipName": r.inverse.map { w.string($0).plistValue } ?? null,
            "NSMinCount": .integer(Int64(r.minCount)),
            "NSMaxCount": .integer(Int64(r.maxCount)),
            "NSDeleteRule": .integer(Int64(r.deleteRule.rawValue)),
        ]
        if r.isOptional { fields["NSIsOptional"] = .bool(true) }
        if r.isOrdered { fields["NSIsOrdered"] = .bool(true) }
        return w.object(className: "NSRelationshipDescription", fields: fields)
    }

    /// Fills in the entity's reserved UID: subentities, properties, uniqueness tuples and fetch indexes.
    func writeEntityDescription(_ e: EntityDescription, at entityRef: KeyedArchive.Reference,
                                keys: [KeyedArchive.Reference], values: [KeyedArchive.Reference]) {
        let children = ordered.filter { $0.parent == e.name }
        let subentities = w.mutableDictionary(keys: children.map { w.string($0.name) },
                                              values: children.compactMap { entityRefs[$0.name] })
        let properties = w.mutableDictionary(keys: keys, values: values)
        let tuples = w.array(e.uniqueConstraints.map { tuple in
            w.array(tuple.map { w.string($0) }, className: "NSMutableArray")
        }, className: "NSMutableArray")
        var fields: [String: PlistValue] = [
            "NSEntityName": w.string(e.name).plistValue,
            "NSClassNameForEntity": w.string(e.className).plistValue,
            "NSRenamingIdentifier": w.string(e.renamingIdentifier ?? e.name).plistValue,
            "NSSuperentity": ref(e.parent.flatMap { entityRefs[$0] }),
            "NSSubentities": subentities.plistValue,
            "NSProperties": properties.plistValue,
            "NSUniqueTuples": tuples.plistValue,
            "NSUserInfo": w.dictionary(keys: [], values: []).plistValue,
            "NSVersionHashModifier": null,
            "NSManagedObjectModel": root.plistValue,
        ]
        if e.isAbstract { fields["NSIsAbstract"] = .bool(true) }
        if e.fetchIndexes.contains(where: { !$0.isRTree }) {
            let indexes = e.fetchIndexes.filter { !$0.isRTree }.map { index in
                w.object(className: "NSFetchIndexDescription", fields: [
                    "NSIndexName": w.string(index.name).plistValue,
                    "NSIndexElements": w.array(index.properties.map { property in
                        w.object(className: "NSFetchIndexElementDescription", fields: [
                            "NSPropertyName": w.string(property).plistValue,
                            "NSFetchIndexElementType": .integer(0),
                            "NSAscending": .bool(true),
                        ])
                    }).plistValue,
                ])
            }
            fields["NSFetchIndexDescriptions"] = w.array(indexes).plistValue
        }
        w.set(entityRef, className: "NSEntityDescription", fields: fields)
    }

    /// Fills in the model's root: its entities, the default configuration, the version identifiers.
    func writeModel() {
        let entities = w.knownKeysDictionary(keys: ordered.map { w.string($0.name) },
                                             values: ordered.compactMap { entityRefs[$0.name] })
        let configurations = w.mutableDictionary(keys: [w.string("default")],
                                                 values: [w.set(members: ordered.compactMap { entityRefs[$0.name] })])
        w.set(root, className: "NSManagedObjectModel", fields: [
            "NSEntities": entities.plistValue,
            "NSFetchRequestTemplates": null,
            "NSVersionIdentifiers": w.set(members: model.versionIdentifiers.map { w.string($0) }).plistValue,
            "NSConfigurations": configurations.plistValue,
        ])
    }
}
