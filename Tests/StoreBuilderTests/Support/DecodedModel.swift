import CoreDataStore
import StoreBuilder

/// A model the project decoded from a genuine store's Z_MODELCACHE, in the builder's terms, so the
/// builder can lay out the store Core Data made from it. Only what decides the layout is carried
/// over: transient properties have no column and are left out; default values, value classes and
/// transformer names only live in the archived model.
enum DecodedModel {
    static func description(_ model: StoreModel) -> ModelDescription {
        ModelDescription(entities: model.entities.map(entity), versionIdentifiers: model.versionIdentifiers)
    }

    static func entity(_ e: ModelEntity) -> EntityDescription {
        EntityDescription(e.name, className: e.className, parent: e.parent, isAbstract: e.isAbstract,
                          renamingIdentifier: e.renamingIdentifier,
                          attributes: e.attributes.filter { !$0.isTransient }.compactMap(attribute),
                          relationships: e.relationships.filter { !$0.isTransient }.map(relationship),
                          uniqueConstraints: e.uniqueConstraints,
                          fetchIndexes: e.fetchIndexes.map { index in
                              FetchIndexDescription(index.name, properties: index.elements.map(\.property),
                                                    rtree: index.elements.contains { $0.kind == "RTree" },
                                                    ascending: index.elements.map(\.ascending))
                          })
    }

    static func attribute(_ a: ModelAttribute) -> AttributeDescription? {
        guard let type = AttributeType(rawValue: a.type.code) else { return nil }
        var d = AttributeDescription(a.name, type, optional: a.isOptional, renamingIdentifier: a.renamingIdentifier,
                                     externalStorage: a.allowsExternalBinaryDataStorage, transformer: a.valueTransformerName,
                                     elements: a.elements.compactMap(attribute))
        d.preservesValueOnDeletion = a.preservesValueOnDeletion
        d.derivation = a.derivation
        return d
    }

    static func relationship(_ r: ModelRelationship) -> RelationshipDescription {
        let rule: RelationshipDescription.DeleteRule
        switch r.deleteRule {
        case .noAction: rule = .noAction
        case .cascade: rule = .cascade
        case .deny: rule = .deny
        case .nullify, .unknown: rule = .nullify
        }
        return RelationshipDescription(r.name, to: r.destination, inverse: r.inverse, toMany: r.isToMany, ordered: r.isOrdered,
                                       optional: r.isOptional, minCount: r.minCount, deleteRule: rule,
                                       renamingIdentifier: r.renamingIdentifier)
    }
}
