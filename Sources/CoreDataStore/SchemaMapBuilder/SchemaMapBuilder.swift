import Foundation
import SQLiteAccess

/// The mapping algorithm, kept out of the public types.
struct SchemaMapBuilder {
    let model: StoreModel
    let store: CoreDataStore
    let connection: Connection

    var problems: [String] = []
    var columnsByTable: [String: [Connection.Column]] = [:]
    var tables: Set<String> = []

    init(model: StoreModel, store: CoreDataStore, connection: Connection) {
        self.model = model
        self.store = store
        self.connection = connection
    }

    /// One column a property needs, with the name patterns that may hold it, best first.
    struct Slot {
        enum Key: Hashable {
            case attribute(entity: String, path: [String])
            case foreignKey(entity: String, relationship: String)
            case entityKey(entity: String, relationship: String)
            case orderKey(entity: String, relationship: String)
            /// The hidden FK of a to-many without inverse, on the destination's table.
            case hidden(source: String, relationship: String)
            /// The order column (`Z_FOK_<n><NAME>`) of an ordered to-many without inverse, beside the hidden FK.
            case hiddenOrder(source: String, relationship: String)
        }
        let key: Key
        /// Column name bases, uppercased; a column matches a base exactly or with a digit suffix.
        let bases: [String]
        let expectedType: String?
        let hint: String?
        /// Flat composite-element names are tried only after every ordinary property.
        let late: Bool
    }

    /// Entities the map places by `Z_PRIMARYKEY`: the app's, and CloudKit mirroring's (`ANSCK…` tables).
    static func mapped(_ e: StoreEntity) -> Bool { e.kind == .user || e.kind == .cloudKit }

    func userNumber(_ name: String) -> Int? {
        store.entities.first { Self.mapped($0) && $0.name == name }?.number
    }

    func columns(_ table: String) throws -> [Connection.Column] {
        if let cached = columnsByTable[table] { return cached }
        return (try? connection.columns(of: table)) ?? []
    }

    mutating func build(path: String) throws -> SchemaMap {
        tables = Set(try connection.tableNames())
        let schema = try connection.schemaObjects()
        let storeUsers = store.entities.filter(Self.mapped)
        let ordered = orderedEntities(storeUsers: storeUsers)
        let tableOf = try assignTables(ordered, storeUsers: storeUsers)
        let slotsByTable = slots(ordered, tableOf: tableOf)
        var (claimed, unknownColumns) = try resolveColumns(slotsByTable, storeUsers: storeUsers, tableOf: tableOf)
        let (joins, joinTables) = mapJoinTables(ordered, unknownColumns: &unknownColumns)
        let indexes = IndexFacts(schema: schema)
        var mappings: [EntityMapping] = []
        for e in ordered {
            guard let table = tableOf[e.name] else { continue }
            mappings.append(try entityMapping(e, table: table, storeUsers: storeUsers, tableOf: tableOf, claimed: claimed,
                                              joins: joins, indexes: indexes))
        }
        let ubiquity = tables.filter { SchemaMap.ubiquityTableNames.contains($0.uppercased()) }.sorted()
        let unknownTables = unexplainedTables(tableOf: tableOf, joinTables: joinTables, mappings: mappings, ubiquity: ubiquity)
        var map = SchemaMap(path: path, model: model, entities: mappings, joinTables: joinTables.sorted(),
                            unknownColumns: unknownColumns, unknownTables: unknownTables, problems: problems)
        map.derivedAttributeTriggers = derivedTriggers(ordered, schema: schema)
        map.ubiquityTables = ubiquity
        return map
    }

    /// Core Data's own tables, never an entity's or a join's.
    static let metadataTables: Set<String> = ["Z_PRIMARYKEY", "Z_METADATA", "Z_MODELCACHE"]

    /// Entity order: Z_ENT first (the evidence), then model entities the store lacks. A store
    /// entity the model does not have is a problem.
    mutating func orderedEntities(storeUsers: [StoreEntity]) -> [ModelEntity] {
        let modelOrder = model.entitiesInNumberingOrder
        let position = Dictionary(modelOrder.enumerated().map { ($1.name, $0) }, uniquingKeysWith: { a, _ in a })
        let ordered = modelOrder.sorted {
            (userNumber($0.name) ?? Int.max, position[$0.name] ?? 0) < (userNumber($1.name) ?? Int.max, position[$1.name] ?? 0)
        }
        for e in storeUsers where model.entity(e.name) == nil {
            problems.append("Z_PRIMARYKEY lists entity \(e.name) (Z_ENT \(e.number)), which the \(model.source.rawValue) model does not have; its rows cannot be read by name")
        }
        return ordered
    }

    /// Each entity's table: the store's (root by Z_SUPER) when it knows the entity, else the
    /// model's root; then the columns of every table that exists.
    mutating func assignTables(_ ordered: [ModelEntity], storeUsers: [StoreEntity]) throws -> [String: String] {
        var tableOf: [String: String] = [:]
        for e in ordered {
            let modelRoot = model.lineage(of: e.name).first?.name ?? e.name
            let modelTable = "Z" + modelRoot.uppercased()
            if let s = storeUsers.first(where: { $0.name == e.name }) {
                tableOf[e.name] = s.table
                if s.table != modelTable && s.kind == .user {
                    problems.append("entity \(e.name) lives in \(s.table) by Z_SUPER but in \(modelTable) by the model's inheritance")
                }
                let storeParent = s.parentName
                if storeParent != e.parent {
                    problems.append("entity \(e.name) has parent \(e.parent ?? "none") in the model but \(storeParent ?? "none") in Z_PRIMARYKEY")
                }
            } else {
                tableOf[e.name] = modelTable
                problems.append("the model's entity \(e.name) is not in Z_PRIMARYKEY; the store has never held it")
            }
        }
        for table in Set(tableOf.values).sorted() where tables.contains(table) {
            // A table SQLite cannot read here (a virtual table with a module or tokenizer only
            // Apple's frameworks register) is named, not fatal: the rest of the store maps.
            switch Result(catching: { () throws(SQLiteError) in try connection.columns(of: table) }) {
            case .success(let columns): columnsByTable[table] = columns
            case .failure(let error):
                guard !(error.isCorrupt || error.isNotADatabase) else { throw error }
                columnsByTable[table] = []
                problems.append("the table \(table) cannot be read by SQLite here (\(error.message)); its columns are not mapped")
            }
        }
        return tableOf
    }

    /// The columns each table must hold, table by table in entity order: attributes, to-one keys
    /// (with the entity and order keys beside them), and the hidden keys of to-many relationships
    /// without a to-one inverse, on the destination's table.
    func slots(_ ordered: [ModelEntity], tableOf: [String: String]) -> [String: [Slot]] {
        var slotsByTable: [String: [Slot]] = [:]
        for e in ordered {
            guard let table = tableOf[e.name] else { continue }
            var slots: [Slot] = []
            var late: [Slot] = []
            for a in e.attributes where !a.isTransient {
                addAttributeSlots(a, entity: e.name, path: [a.name], into: &slots, late: &late)
            }
            for r in e.relationships where !r.isTransient && !r.isToMany {
                slots += toOneSlots(r, entity: e.name)
            }
            slotsByTable[table, default: []] += slots + late
        }
        for e in ordered {
            for r in e.relationships where !r.isTransient && r.isToMany {
                guard model.inverse(of: r) == nil else { continue }
                guard let destinationTable = tableOf[r.destination] else { continue }
                let bases = userNumber(e.name).map { ["Z\($0)" + r.name.uppercased()] } ?? []
                slotsByTable[destinationTable, default: []].append(
                    Slot(key: .hidden(source: e.name, relationship: r.name), bases: bases, expectedType: "INTEGER",
                         hint: r.columnHint, late: false))
                if r.isOrdered {
                    // The MeWe store (ios17-ordered-no-inverse) keeps the order beside the owner's key:
                    // Z29OPTIONS + Z_FOK_29OPTIONS in ZPOLLOPTION.
                    slotsByTable[destinationTable, default: []].append(
                        Slot(key: .hiddenOrder(source: e.name, relationship: r.name), bases: bases.map { "Z_FOK_" + $0.dropFirst() },
                             expectedType: "INTEGER", hint: nil, late: false))
                }
            }
        }
        return slotsByTable
    }

    /// A to-one's foreign key, its entity key when the destination has subentities, and its order
    /// key when the inverse is an ordered to-many.
    func toOneSlots(_ r: ModelRelationship, entity: String) -> [Slot] {
        let rel = r.name.uppercased()
        var slots = [Slot(key: .foreignKey(entity: entity, relationship: r.name), bases: ["Z" + rel],
                          expectedType: "INTEGER", hint: r.columnHint, late: false)]
        if model.hasSubentities(r.destination) {
            let n = userNumber(r.destination)
            slots.append(Slot(key: .entityKey(entity: entity, relationship: r.name),
                              bases: n.map { ["Z\($0)_" + rel] } ?? [], expectedType: "INTEGER", hint: nil, late: false))
        }
        if let inverse = model.inverse(of: r), inverse.isToMany, inverse.isOrdered {
            slots.append(Slot(key: .orderKey(entity: entity, relationship: r.name), bases: ["Z_FOK_" + rel],
                              expectedType: "INTEGER", hint: nil, late: false))
        }
        return slots
    }

    /// Every table's slots resolved against its real columns; the columns nothing claims, entity
    /// tables with no mapped entity included.
    func resolveColumns(_ slotsByTable: [String: [Slot]], storeUsers: [StoreEntity], tableOf: [String: String]) throws
        -> (claimed: [Slot.Key: (table: String, column: String)], unknown: [SchemaMap.UnknownColumn]) {
        var claimed: [Slot.Key: (table: String, column: String)] = [:]
        var unknownColumns: [SchemaMap.UnknownColumn] = []
        for table in slotsByTable.keys.sorted() {
            let columns = columnsByTable[table] ?? []
            let resolved = Self.resolve(slots: slotsByTable[table] ?? [], columns: columns)
            for (key, column) in resolved { claimed[key] = (table, column) }
            let used = Set(resolved.values.map { $0.uppercased() })
            for c in columns where !["Z_PK", "Z_ENT", "Z_OPT"].contains(c.name.uppercased()) && !used.contains(c.name.uppercased()) {
                unknownColumns.append(.init(table: table, column: c.name, declaredType: c.declaredType))
            }
        }
        for s in storeUsers where tables.contains(s.table) && slotsByTable[s.table] == nil && !Set(tableOf.values).contains(s.table) {
            for c in try columns(s.table) where !["Z_PK", "Z_ENT", "Z_OPT"].contains(c.name.uppercased())
                && !unknownColumns.contains(where: { $0.table == s.table && $0.column == c.name }) {
                unknownColumns.append(.init(table: s.table, column: c.name, declaredType: c.declaredType))
            }
        }
        return (claimed, unknownColumns)
    }

    /// Tables nobody explains. History tables are history even when Z_PRIMARYKEY has no rows for them.
    func unexplainedTables(tableOf: [String: String], joinTables: Set<String>, mappings: [EntityMapping], ubiquity: [String]) -> [String] {
        var known = Set(tableOf.values).union(joinTables).union(Self.metadataTables)
            .union(["ACHANGE", "ATRANSACTION", "ATRANSACTIONSTRING"])
        for s in store.entities { known.insert(s.table) }
        for m in mappings { for f in m.fetchIndexes where f.name.hasPrefix("Z_RT_") { known.insert(f.name) } }
        known.formUnion(ubiquity)
        return tables.filter { t in
            !known.contains(t) && !t.hasPrefix("sqlite_") && !t.uppercased().hasPrefix("ANSCK")
                && !(t.hasPrefix("Z_RT_") && tables.contains { $0 != t && t.hasPrefix($0) })
        }.sorted()
    }

    /// Derived attributes and the Z_DA_<TABLE>_<Entity>_<attribute>_… triggers that keep them.
    func derivedTriggers(_ ordered: [ModelEntity], schema: [Connection.SchemaObject]) -> [SchemaMap.DerivedTriggers] {
        let triggers = schema.filter { $0.type == "trigger" && $0.name.hasPrefix("Z_DA_") }.map(\.name)
        var derived: [SchemaMap.DerivedTriggers] = []
        for e in ordered {
            for a in e.attributes where a.derivation != nil {
                let marker = "_\(e.name)_\(a.name)_"
                derived.append(.init(entity: e.name, attribute: a.name, derivation: a.derivation ?? "",
                                     triggers: triggers.filter { $0.contains(marker) }.sorted()))
            }
        }
        return derived
    }

    /// Why a fetch index with one element naming a relationship has no index of its own: a
    /// to-one is served by the index on its foreign key column; a to-many has no column in this
    /// table to index (Photos: 13 of 152 fetch indexes). Not confirmed against Core Data itself,
    /// so it is explained rather than reported.
    func relationshipIndexNote(_ index: ModelFetchIndex, table: String, relationships: [RelationshipMapping],
                               schema: [Connection.SchemaObject]) -> String? {
        guard index.elements.count == 1, let r = relationships.first(where: { $0.relationship.name == index.elements[0].property }) else { return nil }
        switch r.kind {
        case .toOne:
            guard let column = r.column else { return nil }
            let served = schema.first { o in
                o.type == "index" && o.tableName.uppercased() == table.uppercased()
                    && (o.name.uppercased() == "\(table)_\(column)_INDEX".uppercased()
                        || (o.sql.map { Self.firstIndexedColumn($0)?.uppercased() == column.uppercased() } ?? false))
            }
            return served.map { "on a to-one relationship: served by \($0.name), the index on \(column)" }
                ?? "on a to-one relationship: no index on \(column) serves it either"
        case .toMany, .manyToMany:
            return "on a to-many relationship: there is no column in \(table) to index"
        }
    }

    /// The first column of a `CREATE INDEX … ON table (col …)` statement.
    static func firstIndexedColumn(_ sql: String) -> String? {
        guard let open = sql.firstIndex(of: "(") else { return nil }
        let rest = sql[sql.index(after: open)...]
        let name = rest.prefix { !",) ".contains($0) }.trimmingCharacters(in: CharacterSet(charactersIn: "\"`[]"))
        return name.isEmpty ? nil : name
    }

    /// SQLite's automatic index (`sqlite_autoindex_<table>_<n>`) covering exactly the columns
    /// of `properties`, when a column-level `UNIQUE` declares the constraint.
    func columnUniqueIndex(table: String, properties: [String], attributes: [AttributeMapping],
                           relationships: [RelationshipMapping]) throws -> String? {
        var wanted = Set<String>()
        for p in properties {
            guard let column = attributes.first(where: { $0.attribute.name == p })?.column
                ?? relationships.first(where: { $0.relationship.name == p && $0.kind == .toOne })?.column else { return nil }
            wanted.insert(column.uppercased())
        }
        let indexes = try connection.rows("SELECT name FROM pragma_index_list(?) WHERE \"unique\" = 1 AND origin = 'u'", [.text(table)])
        for row in indexes {
            guard let name = row[0].string else { continue }
            let columns = try connection.rows("SELECT name FROM pragma_index_info(?)", [.text(name)]).compactMap { $0[0].string?.uppercased() }
            if Set(columns) == wanted && columns.count == wanted.count { return name }
        }
        return nil
    }

    func addAttributeSlots(_ a: ModelAttribute, entity: String, path: [String], into slots: inout [Slot], late: inout [Slot]) {
        let upper = path.map { $0.uppercased() }
        if a.type == .composite && !a.elements.isEmpty {
            for element in a.elements where !element.isTransient {
                addAttributeSlots(element, entity: entity, path: path + [element.name], into: &slots, late: &late)
            }
            return
        }
        if path.count == 1 {
            slots.append(Slot(key: .attribute(entity: entity, path: path), bases: ["Z" + upper[0]],
                              expectedType: a.type.sqlType, hint: a.columnHint, late: false))
        } else {
            // Composite elements (naming unverified on real stores): `Z<ATTR>_<ELEMENT>` first,
            // then `Z<ATTR><ELEMENT>`, then the element's own name.
            late.append(Slot(key: .attribute(entity: entity, path: path),
                             bases: ["Z" + upper.joined(separator: "_"), "Z" + upper.joined(), "Z" + upper.last!],
                             expectedType: a.type.sqlType, hint: a.columnHint, late: true))
        }
    }

    /// 0 when `column` equals `base`, 1 + the suffix when it is `base` plus digits, nil otherwise.
    static func suffixScore(_ column: String, base: String) -> Int? {
        guard !base.isEmpty, column.hasPrefix(base) else { return nil }
        let rest = column.dropFirst(base.count)
        if rest.isEmpty { return 0 }
        guard rest.count <= 6, rest.allSatisfy({ $0.isASCII && $0.isNumber }), let n = Int(rest) else { return nil }
        return n + 1
    }

    static func compatible(_ declared: String, _ expected: String?) -> Bool {
        guard let expected else { return true }
        let d = declared.uppercased()
        if expected == "FLOAT" { return d == "FLOAT" || d == "REAL" || d == "DOUBLE" }
        return d == expected
    }

    /// Claims columns for slots: known hints, then exact names, then digit suffixes (smallest
    /// first, preferring the expected declared type), always in entity order.
    static func resolve(slots: [Slot], columns: [Connection.Column]) -> [Slot.Key: String] {
        var result: [Slot.Key: String] = [:]
        var taken: Set<String> = ["Z_PK", "Z_ENT", "Z_OPT"]
        let byUpper = Dictionary(columns.map { ($0.name.uppercased(), $0) }, uniquingKeysWith: { a, _ in a })
        func claim(_ slot: Slot, _ column: Connection.Column) {
            result[slot.key] = column.name
            taken.insert(column.name.uppercased())
        }
        for slot in slots {
            if let hint = slot.hint?.uppercased(), !taken.contains(hint), let column = byUpper[hint] { claim(slot, column) }
        }
        for late in [false, true] {
            for slot in slots where slot.late == late && result[slot.key] == nil {
                for base in slot.bases {
                    if !taken.contains(base), let column = byUpper[base] { claim(slot, column); break }
                }
            }
        }
        for late in [false, true] {
            for slot in slots where slot.late == late && result[slot.key] == nil {
                for base in slot.bases {
                    let candidates = columns.filter { !taken.contains($0.name.uppercased()) }
                        .compactMap { c in suffixScore(c.name.uppercased(), base: base).map { (c, $0) } }
                        .sorted {
                            let l = compatible($0.0.declaredType, slot.expectedType), r = compatible($1.0.declaredType, slot.expectedType)
                            return l != r ? l : $0.1 < $1.1
                        }
                    if let best = candidates.first { claim(slot, best.0); break }
                }
            }
        }
        return result
    }

    func attributeMapping(_ a: ModelAttribute, owner: String, path: [String], claimed: [Slot.Key: (table: String, column: String)],
                          declaredTypes: [String: String]) -> AttributeMapping {
        if a.type == .composite && !a.elements.isEmpty {
            let elements = a.elements.filter { !$0.isTransient }.map {
                attributeMapping($0, owner: owner, path: path + [$0.name], claimed: claimed, declaredTypes: declaredTypes)
            }
            return AttributeMapping(attribute: a, declaredBy: owner, column: nil, declaredType: nil, elements: elements)
        }
        let column = claimed[.attribute(entity: owner, path: path)]?.column
        return AttributeMapping(attribute: a, declaredBy: owner, column: column,
                                declaredType: column.flatMap { declaredTypes[$0.uppercased()] }, elements: [])
    }

    mutating func reportAttributeProblems(_ m: AttributeMapping, entity: String, table: String, tableExists: Bool) {
        guard tableExists else { return }
        if !m.elements.isEmpty {
            for element in m.elements { reportAttributeProblems(element, entity: entity, table: table, tableExists: tableExists) }
            return
        }
        guard let column = m.column else {
            problems.append("\(entity).\(m.attribute.name) has no column in \(table)")
            return
        }
        if let declared = m.declaredType, let expected = m.attribute.type.sqlType, !Self.compatible(declared, expected),
           model.source != .inferred {
            problems.append("\(entity).\(m.attribute.name) is \(m.attribute.type.name) but its column \(column) is declared \(declared.isEmpty ? "without a type" : declared)")
        }
    }

    func relationshipMapping(_ r: ModelRelationship, owner: String, claimed: [Slot.Key: (table: String, column: String)],
                             joins: [String: (table: String, source: String, destination: String, order: String?)],
                             tableOf: [String: String]) -> RelationshipMapping {
        if !r.isToMany {
            return RelationshipMapping(relationship: r, declaredBy: owner, kind: .toOne,
                                       column: claimed[.foreignKey(entity: owner, relationship: r.name)]?.column,
                                       entityKeyColumn: claimed[.entityKey(entity: owner, relationship: r.name)]?.column,
                                       orderColumn: claimed[.orderKey(entity: owner, relationship: r.name)]?.column,
                                       foreignTable: nil, foreignColumn: nil, joinTable: nil, joinSourceColumn: nil,
                                       joinDestinationColumn: nil)
        }
        let inverse = model.inverse(of: r)
        if let inverse, inverse.isToMany {
            let join = joins["\(owner).\(r.name)"]
            return RelationshipMapping(relationship: r, declaredBy: owner, kind: .manyToMany, column: nil, entityKeyColumn: nil,
                                       orderColumn: r.isOrdered ? join?.order : nil, foreignTable: nil, foreignColumn: nil,
                                       joinTable: join?.table, joinSourceColumn: join?.source, joinDestinationColumn: join?.destination)
        }
        var foreign: (table: String, column: String)?
        if let inverse {
            let inverseOwner = model.lineage(of: r.destination).last { $0.relationships.contains { $0.name == inverse.name } }?.name ?? r.destination
            foreign = claimed[.foreignKey(entity: inverseOwner, relationship: inverse.name)]
        } else {
            foreign = claimed[.hidden(source: owner, relationship: r.name)]
        }
        var order: String?
        if inverse == nil, r.isOrdered {
            order = claimed[.hiddenOrder(source: owner, relationship: r.name)]?.column
        }
        if let inverse, r.isOrdered {
            let inverseOwner = model.lineage(of: r.destination).last { $0.relationships.contains { $0.name == inverse.name } }?.name ?? r.destination
            order = claimed[.orderKey(entity: inverseOwner, relationship: inverse.name)]?.column
        }
        return RelationshipMapping(relationship: r, declaredBy: owner, kind: .toMany, column: nil, entityKeyColumn: nil,
                                   orderColumn: order, foreignTable: foreign?.table ?? tableOf[r.destination],
                                   foreignColumn: foreign?.column, joinTable: nil, joinSourceColumn: nil, joinDestinationColumn: nil)
    }
}
