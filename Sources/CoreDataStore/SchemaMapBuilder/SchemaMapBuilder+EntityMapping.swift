import SQLiteAccess

/// One entity's mapping: its attributes and relationships through its lineage, its uniqueness
/// constraints and fetch indexes, and the problems a reader should know of.
extension SchemaMapBuilder {
    /// What the store's schema says about indexes, read once for every entity.
    struct IndexFacts {
        let schema: [Connection.SchemaObject]
        let names: Set<String>
        let virtualTables: Set<String>

        init(schema: [Connection.SchemaObject]) {
            self.schema = schema
            names = Set(schema.filter { $0.type == "index" || $0.type == "table" }.map(\.name))
            virtualTables = Set(schema.filter { $0.type == "table" && ($0.sql ?? "").uppercased().contains("VIRTUAL TABLE") }.map(\.name))
        }
    }

    mutating func entityMapping(_ e: ModelEntity, table: String, storeUsers: [StoreEntity], tableOf: [String: String],
                                claimed: [Slot.Key: (table: String, column: String)], joins: [String: JoinColumns],
                                indexes: IndexFacts) throws -> EntityMapping {
        let tableExists = tables.contains(table)
        if !tableExists { problems.append("the table \(table) of entity \(e.name) does not exist") }
        let lineage = model.lineage(of: e.name)
        let declaredTypes = Dictionary((columnsByTable[table] ?? []).map { ($0.name.uppercased(), $0.declaredType) },
                                       uniquingKeysWith: { a, _ in a })
        var attributes: [AttributeMapping] = []
        for level in lineage {
            for a in level.attributes where !a.isTransient {
                let mapping = attributeMapping(a, owner: level.name, path: [a.name], claimed: claimed, declaredTypes: declaredTypes)
                if level.name == e.name { reportAttributeProblems(mapping, entity: e.name, table: table, tableExists: tableExists) }
                attributes.append(mapping)
            }
        }
        var relationships: [RelationshipMapping] = []
        for level in lineage {
            for r in level.relationships where !r.isTransient {
                let m = relationshipMapping(r, owner: level.name, claimed: claimed, joins: joins, tableOf: tableOf)
                if level.name == e.name && tableExists { reportRelationshipProblems(m, entity: e.name, table: table, tableOf: tableOf) }
                relationships.append(m)
            }
        }
        let storeEntity = storeUsers.first { $0.name == e.name }
        var numbers = storeEntity?.subtreeNumbers ?? []
        if storeEntity == nil {
            numbers = model.subtree(of: e.name).compactMap { userNumber($0.name) }.sorted()
        }
        let uniques = try uniqueMappings(e, table: table, tableExists: tableExists, attributes: attributes,
                                         relationships: relationships, indexes: indexes)
        let fetchIndexes = fetchIndexMappings(e, table: table, relationships: relationships, indexes: indexes)
        if tableExists {
            for u in uniques where !u.present {
                problems.append("the uniqueness constraint \(e.name) (\(u.properties.joined(separator: ", "))) has no index \(u.name)")
            }
            for f in fetchIndexes where !f.present && f.note == nil {
                problems.append("the fetch index \(f.name) of \(e.name) is missing")
            }
        }
        return EntityMapping(entity: e, number: userNumber(e.name), table: table, tableExists: tableExists,
                             entityNumbers: numbers, lineage: lineage.map(\.name), attributes: attributes,
                             relationships: relationships, uniqueConstraints: uniques, fetchIndexes: fetchIndexes)
    }

    mutating func reportRelationshipProblems(_ m: RelationshipMapping, entity: String, table: String, tableOf: [String: String]) {
        let r = m.relationship
        switch m.kind {
        case .toOne where m.column == nil:
            problems.append("\(entity).\(r.name) (to-one) has no foreign key column in \(table)")
        case .toMany where m.foreignColumn == nil:
            problems.append("\(entity).\(r.name) (to-many) has no foreign key column in \(tableOf[r.destination] ?? "the destination's table")")
        default: break
        }
        if !r.destination.isEmpty && model.entity(r.destination) == nil {
            problems.append("\(entity).\(r.name) points at \(r.destination), which the model does not define")
        }
    }

    func uniqueMappings(_ e: ModelEntity, table: String, tableExists: Bool, attributes: [AttributeMapping],
                        relationships: [RelationshipMapping], indexes: IndexFacts) throws -> [IndexMapping] {
        var uniques: [IndexMapping] = []
        for c in e.uniqueConstraints {
            let name = "Z_\(e.name)_UNIQUE_" + c.joined(separator: "_")
            if !indexes.names.contains(name), tableExists,
               let auto = try columnUniqueIndex(table: table, properties: c, attributes: attributes, relationships: relationships) {
                // Older frameworks (knowledgeC, fw 851) declare the constraint as a column-level
                // UNIQUE, which SQLite enforces with an automatic index of its own.
                uniques.append(IndexMapping(properties: c, name: auto, present: true,
                                            note: "column-level UNIQUE, enforced by SQLite's automatic index"))
            } else {
                uniques.append(IndexMapping(properties: c, name: name, present: indexes.names.contains(name)))
            }
        }
        return uniques
    }

    func fetchIndexMappings(_ e: ModelEntity, table: String, relationships: [RelationshipMapping], indexes: IndexFacts) -> [IndexMapping] {
        e.fetchIndexes.map { f -> IndexMapping in
            let name = "Z_\(e.name)_\(f.name)"
            let rtree = "Z_RT_\(e.name)_\(f.name)"
            if f.elements.contains(where: { $0.kind == "RTree" }) || indexes.names.contains(rtree) {
                let present = indexes.virtualTables.contains(rtree)
                return IndexMapping(properties: f.elements.map(\.property), name: rtree, present: present,
                                    note: present ? "R-tree virtual table kept by triggers on \(table)" : nil)
            }
            return IndexMapping(properties: f.elements.map(\.property), name: name, present: indexes.names.contains(name),
                                note: indexes.names.contains(name) ? nil : relationshipIndexNote(f, table: table, relationships: relationships,
                                                                                                schema: indexes.schema))
        }
    }
}
