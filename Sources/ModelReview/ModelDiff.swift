import CoreDataStore

/// One difference between an old model and the model a migration goes to, with the rule that
/// classifies it and, when the classification depends on the old store's data, what to count.
public struct ModelChange: Sendable {
    /// What the old store is asked, in the old model's names.
    public enum DataQuestion: Sendable, Equatable {
        /// Every row of the entity.
        case rows(entity: String)
        /// Rows whose attribute holds a value (not NULL); rows of the `keeping` subentities (which
        /// keep the attribute in the new model) are left out.
        case values(entity: String, attribute: String, keeping: [String] = [])
        /// Rows whose attribute is NULL.
        case nulls(entity: String, attribute: String)
        /// Rows whose to-one relationship is NULL.
        case unlinked(entity: String, relationship: String)
        /// Rows linked through the relationship.
        case linked(entity: String, relationship: String)
        /// Groups of rows whose values of these properties repeat.
        case duplicates(entity: String, properties: [String])
        /// Stored values the new type cannot hold.
        case conversion(entity: String, attribute: String, to: ModelAttributeType)
    }

    public let rule: MigrationRule
    /// The entity by its new name (the old one for removals).
    public let entity: String
    /// The property by its new name (the old one for removals), if the change is about one.
    public let property: String?
    /// One sentence: what changed.
    public let summary: String
    /// Facts of the change itself: old and new types, names, rules.
    public let facts: [(String, String)]
    public let question: DataQuestion?
}

/// The changes between two models, matched the way a migration matches them: by name, then by
/// renaming identifier (`originalName`), then — to warn, not to match — by shape.
public enum ModelDiff {
    public static func changes(from old: StoreModel, to new: StoreModel) -> [ModelChange] {
        var out: [ModelChange] = []
        // NSPersistentCloudKitContainer's own entities are Core Data's, not the app's model.
        let oldEntities = old.entities.filter { !$0.name.hasPrefix("NSCK") }
        let newEntities = new.entities.filter { !$0.name.hasPrefix("NSCK") }
        let oldByName = Dictionary(oldEntities.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        let newNames = Set(newEntities.map(\.name))

        // new name → old entity
        var matched: [(old: ModelEntity, new: ModelEntity, renamed: Bool)] = []
        var added: [ModelEntity] = []
        var usedOld = Set<String>()
        for n in newEntities.sorted(by: { $0.name < $1.name }) {
            if let o = oldByName[n.name] {
                matched.append((o, n, false)); usedOld.insert(o.name)
            } else if let legacy = n.legacyName, let o = oldByName[legacy], !newNames.contains(legacy) {
                matched.append((o, n, true)); usedOld.insert(o.name)
            } else {
                added.append(n)
            }
        }
        var removed = oldEntities.filter { !usedOld.contains($0.name) }.sorted { $0.name < $1.name }
        let newName = Dictionary(matched.map { ($0.old.name, $0.new.name) }, uniquingKeysWith: { a, _ in a })

        // An entity removed and one added with the same stored attributes: a rename without identifier.
        for n in added {
            let shape = Self.shape(n)
            guard !shape.isEmpty, let index = removed.firstIndex(where: { Self.shape($0) == shape }) else { continue }
            let o = removed.remove(at: index)
            added.removeAll { $0.name == n.name }
            out.append(ModelChange(rule: .probableEntityRename, entity: n.name, property: nil,
                                   summary: "Entity \(o.name) is removed and \(n.name), with the same attributes, is added without a renaming identifier: \(o.name)'s rows would be dropped, not renamed.",
                                   facts: [("old", o.name), ("new", n.name)], question: .rows(entity: o.name)))
        }
        for n in added {
            out.append(ModelChange(rule: .entityAdded, entity: n.name, property: nil, summary: "Entity \(n.name) is added.", facts: [], question: nil))
        }
        for o in removed {
            out.append(ModelChange(rule: .entityRemoved, entity: o.name, property: nil,
                                   summary: "Entity \(o.name) is removed: its rows are not carried over.", facts: [], question: .rows(entity: o.name)))
        }
        for (o, n, renamed) in matched {
            if renamed {
                out.append(ModelChange(rule: .entityRenamed, entity: n.name, property: nil,
                                       summary: "Entity \(o.name) is renamed \(n.name) with its renaming identifier.",
                                       facts: [("old", o.name), ("new", n.name)], question: nil))
            }
            let oldParent = o.parent.map { newName[$0] ?? $0 }
            if oldParent != n.parent {
                out.append(ModelChange(rule: .entityParentChanged, entity: n.name, property: nil,
                                       summary: "Entity \(n.name)'s parent changes from \(o.parent ?? "none") to \(n.parent ?? "none").",
                                       facts: [("old", o.parent ?? "none"), ("new", n.parent ?? "none")], question: nil))
            }
            out += attributeChanges(o, n, old: old, new: new)
            let (relationships, renames) = relationshipChanges(o, n, newName: newName)
            out += relationships
            out += constraintChanges(o, n, old: old, new: new, relationshipRenames: renames)
        }
        return out
    }

    /// The stored attributes of an entity by name and type, for matching renamed entities.
    static func shape(_ e: ModelEntity) -> Set<String> {
        Set(e.attributes.filter { !$0.isTransient }.map { "\($0.name):\($0.type.code)" })
    }

    /// Names an entity inherits (its ancestors' properties) in a model.
    static func inherited(_ entity: String, in model: StoreModel) -> Set<String> {
        Set(model.lineage(of: entity).dropLast().flatMap { $0.attributes.map(\.name) + $0.relationships.map(\.name) })
    }

    /// Old attribute name → new attribute name for a matched pair (renames included).
    static func attributeRenames(_ o: ModelEntity, _ n: ModelEntity) -> [String: String] {
        var map: [String: String] = [:]
        let oldNames = Set(o.attributes.map(\.name))
        for b in n.attributes {
            if oldNames.contains(b.name) { map[b.name] = b.name }
            else if let legacy = b.legacyName, oldNames.contains(legacy) { map[legacy] = b.name }
        }
        return map
    }

    static func attributeChanges(_ o: ModelEntity, _ n: ModelEntity, old: StoreModel, new: StoreModel) -> [ModelChange] {
        var out: [ModelChange] = []
        let e = n.name
        let renames = attributeRenames(o, n)
        let oldByName = Dictionary(o.attributes.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        let matchedNew = Set(renames.values)
        // Properties moved up or down the hierarchy stay where the other model inherits them.
        let newInherited = inherited(n.name, in: new), oldInherited = inherited(o.name, in: old)
        // Moved up from a subentity: the subentity's rows keep their values; the others need none
        // when it is optional or has a default (a required one is still reported, conservatively).
        let oldBelow = Set(old.subtree(of: o.name).dropFirst().flatMap { $0.attributes.map(\.name) })
        var removed = o.attributes.filter { renames[$0.name] == nil && !newInherited.contains($0.name) && !$0.isTransient }
        var addedAttributes = n.attributes.filter {
            !matchedNew.contains($0.name) && !oldInherited.contains($0.name) && !$0.isTransient
                && !(oldBelow.contains($0.name) && ($0.isOptional || $0.defaultValue != nil))
        }

        // A removed attribute and an added one of the same type: probably a rename without originalName.
        var paired = Set<String>()
        for a in removed.sorted(by: { $0.name < $1.name }) {
            guard let b = addedAttributes.sorted(by: { $0.name < $1.name })
                .first(where: { $0.type == a.type && $0.legacyName == nil && !paired.contains($0.name) }) else { continue }
            paired.insert(b.name)
            removed.removeAll { $0.name == a.name }
            out.append(ModelChange(rule: .probableRename, entity: e, property: b.name,
                                   summary: "\(e).\(a.name) is removed and \(e).\(b.name) (\(b.type.name)) is added without `originalName`: if \(b.name) is \(a.name) renamed, every stored value of \(a.name) is lost; declare @Attribute(originalName: \"\(a.name)\") (renaming identifier \(a.name)).",
                                   facts: [("old", a.name), ("new", b.name), ("type", a.type.name)], question: .values(entity: o.name, attribute: a.name)))
            // The added side is still classified on its own below.
        }
        for a in removed.sorted(by: { $0.name < $1.name }) {
            // Moved down into subentities: only the other rows lose it.
            let keeping = new.subtree(of: n.name).dropFirst().filter { $0.attributes.contains { $0.name == a.name } }.map(\.name)
            let moved = keeping.isEmpty ? "" : " (\(keeping.joined(separator: ", ")) declare\(keeping.count == 1 ? "s" : "") it now; their rows keep it)"
            out.append(ModelChange(rule: .attributeRemoved, entity: e, property: a.name, summary: "\(e).\(a.name) is removed\(moved): its stored values are not carried over.",
                                   facts: [("type", a.type.name)], question: .values(entity: o.name, attribute: a.name, keeping: keeping)))
        }
        addedAttributes.sort { $0.name < $1.name }
        for b in addedAttributes { out.append(added(b, entity: e, oldEntity: o.name)) }

        for b in n.attributes.sorted(by: { $0.name < $1.name }) {
            guard let oldName = renames.first(where: { $0.value == b.name })?.key, let a = oldByName[oldName] else { continue }
            let p = "\(e).\(b.name)"
            if a.isTransient && b.isTransient { continue }
            if oldName != b.name {
                out.append(ModelChange(rule: .attributeRenamed, entity: e, property: b.name, summary: "\(e).\(oldName) is renamed \(b.name) with its renaming identifier.",
                                       facts: [("old", oldName), ("new", b.name)], question: nil))
            }
            if !a.isTransient && b.isTransient {
                out.append(ModelChange(rule: .transientChanged, entity: e, property: b.name, summary: "\(p) becomes transient: its stored values are dropped.",
                                       facts: [], question: .values(entity: o.name, attribute: oldName)))
                continue
            }
            if a.isTransient && !b.isTransient {
                out.append(added(b, entity: e, oldEntity: o.name))
                continue
            }
            if a.type != b.type && a.type != .composite && b.type != .composite {
                out.append(ModelChange(rule: .attributeTypeChanged, entity: e, property: b.name,
                                       summary: "\(p) changes type from \(a.type.name) to \(b.type.name).",
                                       facts: [("old", a.type.name), ("new", b.type.name)], question: .conversion(entity: o.name, attribute: oldName, to: b.type)))
            }
            if a.isOptional && !b.isOptional {
                if b.defaultValue != nil {
                    out.append(ModelChange(rule: .attributeMadeRequiredDefault, entity: e, property: b.name,
                                           summary: "\(p) becomes non-optional with the default \(b.defaultValue ?? "").",
                                           facts: [("default", b.defaultValue ?? "")], question: .nulls(entity: o.name, attribute: oldName)))
                } else {
                    out.append(ModelChange(rule: .attributeMadeRequired, entity: e, property: b.name,
                                           summary: "\(p) becomes non-optional without a default value.", facts: [], question: .nulls(entity: o.name, attribute: oldName)))
                }
            } else if !a.isOptional && b.isOptional {
                out.append(ModelChange(rule: .attributeMadeOptional, entity: e, property: b.name, summary: "\(p) becomes optional.", facts: [], question: nil))
            }
            if normalized(a.defaultValue, a.type) != normalized(b.defaultValue, b.type) && !(a.isOptional && !b.isOptional) && a.type != .uuid {
                // A UUID default is a fresh UUID() each time the model is built, not a changed intent.
                out.append(ModelChange(rule: .defaultChanged, entity: e, property: b.name,
                                       summary: "\(p)'s default value changes from \(a.defaultValue ?? "none") to \(b.defaultValue ?? "none").",
                                       facts: [("old", a.defaultValue ?? "none"), ("new", b.defaultValue ?? "none")], question: nil))
            }
            if a.allowsExternalBinaryDataStorage != b.allowsExternalBinaryDataStorage {
                out.append(ModelChange(rule: .externalStorageChanged, entity: e, property: b.name,
                                       summary: "\(p) external storage is turned \(b.allowsExternalBinaryDataStorage ? "on" : "off").", facts: [], question: nil))
            }
        }
        return out
    }

    /// A default value as a migration sees it: the cache says `false`/`1`, Xcode's XML `NO`/`1.0`.
    static func normalized(_ value: String?, _ type: ModelAttributeType) -> String? {
        guard let value else { return nil }
        if type == .boolean {
            switch value.lowercased() {
            case "yes", "true", "1": return "true"
            case "no", "false", "0": return "false"
            default: return value
            }
        }
        if type.isInteger || type == .double || type == .float || type == .decimal, let d = Double(value) { return String(d) }
        return value
    }

    static func added(_ b: ModelAttribute, entity e: String, oldEntity: String) -> ModelChange {
        let p = "\(e).\(b.name)"
        if b.isOptional {
            return ModelChange(rule: .attributeAddedOptional, entity: e, property: b.name, summary: "\(p) (\(b.type.name), optional) is added.",
                               facts: [("type", b.type.name)], question: nil)
        }
        if let d = b.defaultValue {
            return ModelChange(rule: .attributeAddedDefault, entity: e, property: b.name, summary: "\(p) (\(b.type.name)) is added with the default \(d).",
                               facts: [("type", b.type.name), ("default", d)], question: nil)
        }
        return ModelChange(rule: .attributeAddedRequired, entity: e, property: b.name,
                           summary: "\(p) (\(b.type.name)) is added, non-optional and without a default value: every existing row would have no value.",
                           facts: [("type", b.type.name)], question: .rows(entity: oldEntity))
    }

    static func relationshipChanges(_ o: ModelEntity, _ n: ModelEntity, newName: [String: String]) -> ([ModelChange], [String: String]) {
        var out: [ModelChange] = []
        let e = n.name
        let oldNames = Set(o.relationships.map(\.name))
        var renames: [String: String] = [:]
        for b in n.relationships {
            if oldNames.contains(b.name) { renames[b.name] = b.name }
            else if let legacy = b.legacyName, oldNames.contains(legacy) { renames[legacy] = b.name }
        }
        let matchedNew = Set(renames.values)
        var removed = o.relationships.filter { renames[$0.name] == nil && !$0.isTransient }.sorted { $0.name < $1.name }
        let addedRelationships = n.relationships.filter { !matchedNew.contains($0.name) && !$0.isTransient }.sorted { $0.name < $1.name }
        func destination(_ r: ModelRelationship) -> String { newName[r.destination] ?? r.destination }
        for b in addedRelationships {
            if let index = removed.firstIndex(where: { destination($0) == b.destination && $0.isToMany == b.isToMany }), b.legacyName == nil {
                let a = removed.remove(at: index)
                out.append(ModelChange(rule: .probableRelationshipRename, entity: e, property: b.name,
                                       summary: "\(e).\(a.name) is removed and \(e).\(b.name) (to \(b.destination)) is added without a renaming identifier: if it is a rename, every link of \(a.name) is lost.",
                                       facts: [("old", a.name), ("new", b.name)], question: .linked(entity: o.name, relationship: a.name)))
            }
            if !b.isToMany && !b.isOptional {
                out.append(ModelChange(rule: .relationshipAddedRequired, entity: e, property: b.name,
                                       summary: "\(e).\(b.name) (to-one \(b.destination), non-optional) is added: every existing row would have no destination.",
                                       facts: [], question: .rows(entity: o.name)))
            } else {
                out.append(ModelChange(rule: .relationshipAddedOptional, entity: e, property: b.name,
                                       summary: "\(e).\(b.name) (\(b.isToMany ? "to-many" : "to-one") \(b.destination)) is added.", facts: [], question: nil))
            }
        }
        for a in removed {
            out.append(ModelChange(rule: .relationshipRemoved, entity: e, property: a.name, summary: "\(e).\(a.name) is removed: its links are not carried over.",
                                   facts: [], question: .linked(entity: o.name, relationship: a.name)))
        }
        let oldByName = Dictionary(o.relationships.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        for b in n.relationships.sorted(by: { $0.name < $1.name }) {
            guard let oldName = renames.first(where: { $0.value == b.name })?.key, let a = oldByName[oldName] else { continue }
            let p = "\(e).\(b.name)"
            if oldName != b.name {
                out.append(ModelChange(rule: .relationshipRenamed, entity: e, property: b.name, summary: "\(e).\(oldName) is renamed \(b.name) with its renaming identifier.",
                                       facts: [("old", oldName), ("new", b.name)], question: nil))
            }
            if destination(a) != b.destination {
                out.append(ModelChange(rule: .destinationChanged, entity: e, property: b.name, summary: "\(p) points at \(b.destination) instead of \(a.destination).",
                                       facts: [("old", a.destination), ("new", b.destination)], question: nil))
            }
            if !a.isToMany && b.isToMany {
                out.append(ModelChange(rule: .relationshipToMany, entity: e, property: b.name, summary: "\(p) becomes to-many.", facts: [], question: nil))
            } else if a.isToMany && !b.isToMany {
                out.append(ModelChange(rule: .relationshipToOne, entity: e, property: b.name, summary: "\(p) becomes to-one.", facts: [], question: nil))
            } else if a.isToMany && a.isOrdered != b.isOrdered {
                out.append(ModelChange(rule: .orderingChanged, entity: e, property: b.name, summary: "\(p) becomes \(b.isOrdered ? "ordered" : "unordered").", facts: [], question: nil))
            }
            if a.deleteRule != b.deleteRule {
                out.append(ModelChange(rule: .deleteRuleChanged, entity: e, property: b.name,
                                       summary: "\(p)'s delete rule changes from \(a.deleteRule.name) to \(b.deleteRule.name).",
                                       facts: [("old", a.deleteRule.name), ("new", b.deleteRule.name)], question: nil))
            }
            if a.isOptional && !b.isOptional && !b.isToMany {
                out.append(ModelChange(rule: .relationshipMadeRequired, entity: e, property: b.name, summary: "\(p) becomes non-optional.",
                                       facts: [], question: a.isToMany ? nil : .unlinked(entity: o.name, relationship: oldName)))
            } else if !a.isOptional && b.isOptional {
                out.append(ModelChange(rule: .relationshipMadeOptional, entity: e, property: b.name, summary: "\(p) becomes optional.", facts: [], question: nil))
            }
        }
        return (out, renames)
    }

    static func constraintChanges(_ o: ModelEntity, _ n: ModelEntity, old: StoreModel, new: StoreModel,
                                  relationshipRenames: [String: String]) -> [ModelChange] {
        var out: [ModelChange] = []
        let e = n.name
        var toNew = attributeRenames(o, n)
        for (k, v) in relationshipRenames { toNew[k] = v }
        let toOld = Dictionary(toNew.map { ($1, $0) }, uniquingKeysWith: { a, _ in a })
        // A constraint is a set of properties: (a, b) and (b, a) are the same one.
        let oldTuples = Set(o.uniqueConstraints.map { $0.map { toNew[$0] ?? $0 }.sorted() })
        for tuple in n.uniqueConstraints where !oldTuples.contains(tuple.sorted()) {
            let oldProperties = tuple.map { toOld[$0] }
            let list = tuple.joined(separator: ", ")
            // A constraint over a property the old store does not have cannot be checked against it.
            let question: ModelChange.DataQuestion? = oldProperties.allSatisfy { $0 != nil }
                ? .duplicates(entity: o.name, properties: oldProperties.compactMap { $0 }) : nil
            let newOnes = tuple.filter { toOld[$0] == nil }
            let unchecked = newOnes.isEmpty ? "" : " \(newOnes.joined(separator: ", ")) \(newOnes.count == 1 ? "is" : "are") new, so the old rows cannot be checked for duplicates."
            out.append(ModelChange(rule: .uniqueAdded, entity: e, property: tuple.count == 1 ? tuple[0] : nil,
                                   summary: "\(e) gains a uniqueness constraint on (\(list)).\(unchecked)", facts: [("properties", list)], question: question))
        }
        let newTuples = Set(n.uniqueConstraints.map { $0.sorted() })
        for tuple in oldTuples.sorted(by: { $0.joined(separator: ",") < $1.joined(separator: ",") }) where !newTuples.contains(tuple) {
            out.append(ModelChange(rule: .uniqueRemoved, entity: e, property: tuple.count == 1 ? tuple[0] : nil,
                                   summary: "\(e) loses its uniqueness constraint on (\(tuple.joined(separator: ", "))).",
                                   facts: [("properties", tuple.joined(separator: ", "))], question: nil))
        }
        let oldIndexes = Set(o.fetchIndexes.map(\.name)), newIndexes = Set(n.fetchIndexes.map(\.name))
        for name in newIndexes.subtracting(oldIndexes).sorted() {
            out.append(ModelChange(rule: .indexChanged, entity: e, property: nil, summary: "\(e) gains the fetch index \(name).", facts: [("added", name)], question: nil))
        }
        for name in oldIndexes.subtracting(newIndexes).sorted() {
            out.append(ModelChange(rule: .indexChanged, entity: e, property: nil, summary: "\(e) loses the fetch index \(name).", facts: [("removed", name)], question: nil))
        }
        return out
    }
}
