import Foundation

/// How `StoreLayout` lays a model out, phase by phase: entity numbers, each entity table's
/// columns, and the many-to-many join tables.
extension StoreLayout {
    /// Entity numbers: depth-first over the inheritance forest, parent before children, siblings
    /// in alphabetical order ignoring case (Photos numbers ComputedAssetAttributes before
    /// ComputeSyncAttributes).
    static func numberedEntities(_ model: ModelDescription) -> [Entity] {
        func alphabetically(_ a: EntityDescription, _ b: EntityDescription) -> Bool {
            let (x, y) = (a.name.lowercased(), b.name.lowercased())
            return x != y ? x < y : a.name < b.name
        }
        var ordered: [Entity] = []
        func visit(_ e: EntityDescription, superNumber: Int, root: String, lineage: [String]) {
            let number = ordered.count + 1
            let entity = Entity(description: e, number: number, superNumber: superNumber, rootName: root,
                                table: "Z" + root.uppercased(), lineage: lineage + [e.name])
            ordered.append(entity)
            for child in model.entities.filter({ $0.parent == e.name }).sorted(by: alphabetically) {
                visit(child, superNumber: number, root: root, lineage: lineage + [e.name])
            }
        }
        for root in model.entities.filter({ $0.parent == nil }).sorted(by: alphabetically) {
            visit(root, superNumber: 0, root: root.name, lineage: [])
        }
        return ordered
    }

    /// One table per root entity, holding the columns of its whole hierarchy.
    static func entityTables(_ ordered: [Entity], model: ModelDescription, frameworkVersion: Int) -> [Table] {
        var tables: [Table] = []
        for root in ordered where root.superNumber == 0 {
            var columns = TableColumns(ordered: ordered, model: model, frameworkVersion: frameworkVersion)
            let members = ordered.filter { $0.rootName == root.description.name }
            for member in members { columns.add(member.description) }
            let fixed = [Column(name: "Z_PK", sqlType: "INTEGER PRIMARY KEY", role: .attribute(entity: root.description.name, name: "Z_PK")),
                         Column(name: "Z_ENT", sqlType: "INTEGER", role: .attribute(entity: root.description.name, name: "Z_ENT")),
                         Column(name: "Z_OPT", sqlType: "INTEGER", role: .attribute(entity: root.description.name, name: "Z_OPT"))]
            tables.append(Table(name: root.table, rootEntity: root.description.name,
                                columns: fixed + columns.integerGroup + columns.buckets.flatMap { $0 },
                                hasSubentities: members.count > 1))
        }
        return tables
    }

    /// Many-to-many join tables, named after the owning side's relationship.
    static func joinTables(_ ordered: [Entity], byName: [String: EntityDescription]) -> [JoinTable] {
        let number = Dictionary(ordered.map { ($0.description.name, $0.number) }, uniquingKeysWith: { a, _ in a })
        var joins: [JoinTable] = []
        var seen = Set<String>()
        // Column names are unique across all join tables: Photos' Asset has two pairs whose
        // other side is `representativeAssets`, and the second gets Z_34REPRESENTATIVEASSETS1.
        var names = ColumnNames(used: [])
        for source in ordered {
            for r in source.description.relationships where r.isToMany {
                guard let inverseName = r.inverse, let dest = byName[r.destination],
                      let inverse = dest.relationships.first(where: { $0.name == inverseName }), inverse.isToMany else { continue }
                let key = [source.description.name + "." + r.name, dest.name + "." + inverseName].sorted().joined(separator: "|")
                guard seen.insert(key).inserted else { continue }
                // The owner: the entity with the lower number (every unordered join table of the
                // real stores: 31 of 31). Between two relationships of one entity, or when either
                // side is ordered, the side whose relationship name sorts later (4 of the 6
                // ordered join tables seen; Photos' AlbumList.albums pairs do not follow it).
                let sourceNumber = number[source.description.name] ?? 0, destNumber = number[dest.name] ?? 0
                let sourceOwns = r.isOrdered || inverse.isOrdered || sourceNumber == destNumber
                    ? r.name >= inverseName : sourceNumber < destNumber
                let (ownerEntity, ownerRel, otherEntity, otherRel) = sourceOwns
                    ? (source.description.name, r, dest.name, inverse)
                    : (dest.name, inverse, source.description.name, r)
                let ownerNumber = number[ownerEntity] ?? 0
                let otherNumber = number[otherEntity] ?? 0
                let firstColumn = names.unique("Z_\(ownerNumber)" + otherRel.name.uppercased())
                let secondColumn = ownerEntity == otherEntity && ownerRel.name == otherRel.name
                    // A relationship that is its own inverse (Photos' Person.mergeCandidates).
                    ? "REFLEXIVE" : names.unique("Z_\(otherNumber)" + ownerRel.name.uppercased())
                joins.append(JoinTable(name: "Z_\(ownerNumber)" + ownerRel.name.uppercased(),
                                       firstColumn: firstColumn, firstEntity: ownerEntity,
                                       secondColumn: secondColumn, secondEntity: otherEntity,
                                       relationship: ownerRel.name, inverse: otherRel.name,
                                       orderColumn: ownerRel.isOrdered ? "Z_FOK_" + String(secondColumn.dropFirst(2)) : nil))
            }
        }
        return joins
    }
}

/// Column names handed out in one namespace: a name already taken gets the first free digit
/// suffix (ZNAME, ZNAME1, ZNAME2 …).
struct ColumnNames {
    var used: Set<String>

    mutating func unique(_ base: String) -> String {
        if used.insert(base).inserted { return base }
        var n = 1
        while !used.insert(base + String(n)).inserted { n += 1 }
        return base + String(n)
    }
}

/// The columns of one entity table, gathered entity by entity (inheritance order).
///
/// Names are assigned in entity order (so collisions get suffixes in that order), then columns
/// are laid out by storage class; within a class, entity by entity (inheritance order) and each
/// entity's attributes by name — as every real store with subentities shows (Notes, iOS 17 app
/// stores: a subentity's VARCHARs follow its parent's). After the integers, columns come in
/// buckets by attribute type, each bucket entity by entity (inheritance order) and each entity's
/// attributes by property name (not column name: knowledgeC's `_CDEntityMetadataKey__name` sorts
/// before `com_apple…`), a composite's elements in their declared order. The buckets, as the real
/// stores show them: dates and floating-point numbers; decimals (both framework-1523 CartKit
/// stores put `ZMINSUBTOTALAMOUNT DECIMAL` after `ZUPDATEDAT TIMESTAMP`); strings, then URIs (a URI column follows every string
/// column of the table, iOS 17's ManagedEventBase); UUIDs, then transformables, then binary data
/// (Screen Time's InstalledApp and Blueprint, Photos' Memory).
struct TableColumns {
    typealias Column = StoreLayout.Column
    let ordered: [StoreLayout.Entity]
    let byName: [String: EntityDescription]
    let number: [String: Int]
    let hasChildren: Set<String>
    let frameworkVersion: Int
    var names = ColumnNames(used: ["Z_PK", "Z_ENT", "Z_OPT"])
    /// Integer attributes and keys, entity by entity.
    var integerGroup: [Column] = []
    var buckets: [[Column]] = Array(repeating: [], count: 7)

    init(ordered: [StoreLayout.Entity], model: ModelDescription, frameworkVersion: Int) {
        self.ordered = ordered
        byName = Dictionary(model.entities.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        number = Dictionary(ordered.map { ($0.description.name, $0.number) }, uniquingKeysWith: { a, _ in a })
        hasChildren = Set(model.entities.compactMap(\.parent))
        self.frameworkVersion = frameworkVersion
    }

    /// The bucket of an attribute type's columns; -1 for the integers, which go with the keys.
    static func bucket(_ type: AttributeType) -> Int {
        switch type {
        case .integer16, .integer32, .integer64, .boolean: return -1
        case .double, .float, .date: return 0
        case .decimal: return 1
        case .string: return 2
        case .uri: return 3
        case .uuid: return 4
        case .transformable: return 5
        case .binaryData, .objectID, .composite: return 6
        }
    }

    /// One entity's columns: its attributes, then the foreign keys it holds.
    mutating func add(_ e: EntityDescription) {
        var attributeInts: [Column] = []
        // A composite attribute stores each element in a column named after the element
        // alone, suffixed on a collision (SwiftData cocktails: author.person → ZPERSON, prep.id → ZID1).
        for leaf in e.attributes.sorted(by: { $0.name < $1.name }).flatMap(\.storedLeaves) {
            let a = leaf.attribute
            var column = Column(name: names.unique("Z" + (leaf.path.last ?? a.name).uppercased()), sqlType: a.type.sqlType,
                                role: .attribute(entity: e.name, name: leaf.path.joined(separator: ".")))
            column.isUnique = frameworkVersion < StoreLayout.FrameworkVersion.uniquenessIndexes && leaf.path.count == 1
                && e.uniqueConstraints.contains([a.name])
            let b = Self.bucket(a.type)
            if b < 0 { attributeInts.append(column) } else { buckets[b].append(column) }
        }
        let keys = toOneKeys(of: e) + hiddenKeys(to: e)
        integerGroup.append(contentsOf: attributeInts + keys)
    }

    /// Foreign keys this entity holds: its to-one relationships by name (each with its entity
    /// key), then the order keys of those whose inverse is an ordered to-many (MeWe's Emoji:
    /// ZCHATMESSAGE, ZCOMMENT, ZPOST, then Z_FOK_CHATMESSAGE …).
    mutating func toOneKeys(of e: EntityDescription) -> [Column] {
        var toOneKeys: [(sortName: String, columns: [Column], order: Column?)] = []
        for r in e.relationships where !r.isToMany {
            var cols = [Column(name: names.unique("Z" + r.name.uppercased()), sqlType: "INTEGER",
                               role: .foreignKey(entity: e.name, relationship: r.name))]
            if hasChildren.contains(r.destination), let n = number[r.destination] {
                cols.append(Column(name: names.unique("Z\(n)_" + r.name.uppercased()), sqlType: "INTEGER",
                                   role: .foreignEntityKey(entity: e.name, relationship: r.name)))
            }
            var order: Column?
            if let inverseName = r.inverse, let dest = byName[r.destination],
               let inverse = dest.relationships.first(where: { $0.name == inverseName }), inverse.isToMany, inverse.isOrdered {
                order = Column(name: names.unique("Z_FOK_" + r.name.uppercased()), sqlType: "INTEGER",
                               role: .foreignOrderKey(entity: e.name, relationship: r.name))
            }
            toOneKeys.append((r.name, cols, order))
        }
        toOneKeys.sort { $0.sortName < $1.sortName }
        return toOneKeys.flatMap(\.columns) + toOneKeys.compactMap(\.order)
    }

    /// The hidden keys of other entities' to-many relationships without an inverse that point
    /// at this entity, by relationship name.
    mutating func hiddenKeys(to e: EntityDescription) -> [Column] {
        var keyed: [(sortName: String, columns: [Column])] = []
        for source in ordered {
            for r in source.description.relationships where r.isToMany && r.inverse == nil && r.destination == e.name {
                var cols = [Column(name: names.unique("Z\(source.number)" + r.name.uppercased()), sqlType: "INTEGER",
                                   role: .foreignKey(entity: source.description.name, relationship: r.name))]
                if r.isOrdered {
                    // Ordered without inverse: the order sits beside the owner's key (MeWe's Z_FOK_29OPTIONS).
                    cols.append(Column(name: names.unique("Z_FOK_\(source.number)" + r.name.uppercased()), sqlType: "INTEGER",
                                       role: .foreignOrderKey(entity: source.description.name, relationship: r.name)))
                }
                keyed.append((r.name, cols))
            }
        }
        return keyed.sorted(by: { $0.sortName < $1.sortName }).flatMap(\.columns)
    }
}
