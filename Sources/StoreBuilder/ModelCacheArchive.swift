import Foundation
import StoreFormats

/// Writes a model as the `NSManagedObjectModel` keyed archive Core Data keeps in
/// `Z_MODELCACHE`, with the classes and keys seen in real caches (coredata-sqlite-format.md §2.3).
enum ModelCacheArchive {
    static func archive(_ model: ModelDescription, layout: StoreLayout) throws -> Data {
        let w = KeyedArchiveWriter()
        let root = w.reserve()
        // Entities are archived in entity-number order, as Core Data sorts them.
        let ordered = layout.entities.map(\.description)
        var entityRefs: [String: KeyedArchive.Reference] = [:]
        for e in ordered { entityRefs[e.name] = w.reserve() }
        var propertyRefs: [String: KeyedArchive.Reference] = [:]
        for e in ordered {
            for r in e.relationships { propertyRefs[e.name + "." + r.name] = w.reserve() }
        }
        let null = PlistValue.uid(0)
        func ref(_ r: KeyedArchive.Reference?) -> PlistValue { r?.plistValue ?? null }

        for e in ordered {
            guard let entityRef = entityRefs[e.name] else { continue }
            var keys: [KeyedArchive.Reference] = []
            var values: [KeyedArchive.Reference] = []
            func attributeObject(_ a: AttributeDescription) -> KeyedArchive.Reference {
                var fields: [String: PlistValue] = [
                    "NSPropertyName": w.string(a.name).plistValue,
                    "NSRenamingIdentifier": w.string(a.renamingIdentifier ?? a.name).plistValue,
                    "NSAttributeType": .integer(Int64(a.type.rawValue)),
                    "NSAttributeValueClassName": w.string(a.type.valueClassName).plistValue,
                    "NSEntity": entityRef.plistValue,
                    "NSDefaultValue": a.defaultValue.map { defaultValue($0, writer: w).plistValue } ?? null,
                    "NSValueTransformerName": a.valueTransformerName.map { w.string($0).plistValue } ?? null,
                    // As Apple's caches archive them: 0x04 external binary storage (Photos, the iOS 17
                    // MeWe store), 0x10 preserved in history on deletion (knowledgeC, Screen Time).
                    "NSFlagsKey": .integer((a.allowsExternalBinaryDataStorage ? 0x04 : 0) | (a.preservesValueOnDeletion ? 0x10 : 0)),
                    "_P": .integer(241),
                ]
                if a.isOptional { fields["NSIsOptional"] = .bool(true) }
                if a.type == .composite {
                    // The key holding the elements is an assumption (no real archive examined).
                    fields["NSElements"] = w.array(a.elements.map(attributeObject)).plistValue
                    return w.object(className: "NSCompositeAttributeDescription", fields: fields)
                }
                return w.object(className: "NSAttributeDescription", fields: fields)
            }
            for a in e.attributes {
                keys.append(w.string(a.name))
                values.append(attributeObject(a))
            }
            for index in e.fetchIndexes where index.isRTree {
                // Photos keeps an R-tree index as a transient attribute naming its location components.
                keys.append(w.string(index.name))
                values.append(w.object(className: "NSAttributeDescription", fields: [
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
                ]))
            }
            for r in e.relationships {
                guard let rRef = propertyRefs[e.name + "." + r.name] else { continue }
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
                keys.append(w.string(r.name))
                values.append(rRef)
            }
            // Inherited properties, as the model asks: copies of the ancestor's objects, or proxies to them.
            let byName = Dictionary(ordered.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
            var ancestor = e.parent.flatMap { byName[$0] }
            var seenAncestors: Set<String> = [e.name]
            var referenceID: Int64 = 1
            while let level = ancestor, seenAncestors.insert(level.name).inserted, model.inheritedPropertiesInCache != .declaredOnly {
                for a in level.attributes {
                    keys.append(w.string(a.name))
                    if model.inheritedPropertiesInCache == .copies {
                        values.append(attributeObject(a))
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
                    if model.inheritedPropertiesInCache == .copies {
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
                        values.append(w.object(className: "NSRelationshipDescription", fields: fields))
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
        return try w.finish(root: root)
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
