import Foundation
import SQLiteAccess
import StoreFormats

/// Where a model lives in SQLite: entity → table and `Z_ENT` set; attribute → column (digit
/// suffixes resolved against `PRAGMA table_info`, never predicted); to-one → FK (+ FEK, + FOK);
/// to-many → the FK on the destination; many-to-many → join table and its two columns (found by
/// their names); constraints and fetch indexes → index names. Every column of every entity table
/// is accounted for: columns no property claims are listed in `unknownColumns`.
public struct SchemaMap: Sendable {
    public let path: String
    public let model: StoreModel
    /// Mapped entities: those in `Z_PRIMARYKEY` by `Z_ENT`, then model entities the store lacks.
    public let entities: [EntityMapping]
    /// Join tables that belong to a many-to-many relationship.
    public let joinTables: [String]
    /// Columns of entity tables that no property of the model claims.
    public let unknownColumns: [UnknownColumn]
    /// Tables that are neither entity, join, metadata, history nor CloudKit tables.
    public let unknownTables: [String]
    /// Tables of Core Data's ubiquitous (legacy iCloud, before iOS 10) stores: `Y_UBMETA`,
    /// `Y_UBRANGE`, `Y_UBKVS`. Core Data's own, so not unknown.
    public var ubiquityTables: [String] = []
    public static let ubiquityTableNames: Set<String> = ["Y_UBMETA", "Y_UBRANGE", "Y_UBKVS"]
    /// Where the model and the store do not fit together (one sentence each).
    public let problems: [String]
    /// For each derived attribute: the `Z_DA_` triggers that keep its column current. They call
    /// `NSCoreDataDATrigger…` functions only Core Data registers, so any write that fires them
    /// fails in plain SQLite.
    public var derivedAttributeTriggers: [DerivedTriggers] = []

    public struct DerivedTriggers: Sendable, Equatable {
        public let entity: String
        public let attribute: String
        public let derivation: String
        public let triggers: [String]
    }

    /// Every `Z_DA_` trigger of the store, whatever attribute it serves.
    public var allDerivedTriggers: [String] { derivedAttributeTriggers.flatMap(\.triggers) }

    public struct UnknownColumn: Sendable, Equatable {
        public let table: String
        public let column: String
        public let declaredType: String
    }

    public func entity(named name: String) -> EntityMapping? { entities.first { $0.entity.name == name } }

    /// The entity whose `Z_ENT` is `number`.
    public func entity(number: Int) -> EntityMapping? { entities.first { $0.number == number } }

    /// Looks an entity up by its current name, its legacy name (renaming identifier), or its class
    /// name (with or without a module prefix), then by name ignoring case.
    public func resolveEntity(_ query: String) -> EntityMapping? {
        if let e = entity(named: query) { return e }
        if let e = entities.first(where: { $0.entity.legacyName == query }) { return e }
        if let e = entities.first(where: { $0.entity.className == query }) { return e }
        if let e = entities.first(where: { ($0.entity.className?.split(separator: ".").last).map(String.init) == query }) { return e }
        let lower = query.lowercased()
        return entities.first { $0.entity.name.lowercased() == lower }
    }

    /// The closest entity name, for "did you mean".
    public func suggestion(for query: String) -> String? {
        let names = entities.map(\.entity.name)
        return EditDistance.closest(to: query, in: names) { $0.lowercased() }
    }
}

/// One entity in SQL.
public struct EntityMapping: Sendable {
    public let entity: ModelEntity
    /// `Z_ENT`, when `Z_PRIMARYKEY` lists the entity.
    public let number: Int?
    /// The root entity's table, shared by the whole hierarchy.
    public let table: String
    public let tableExists: Bool
    /// `Z_ENT` values of this entity and its subentities (from `Z_SUPER`): what selects its rows.
    public let entityNumbers: [Int]
    /// Ancestors first, ending with this entity.
    public let lineage: [String]
    /// Attributes, inherited ones first (root level first, each level by name).
    public let attributes: [AttributeMapping]
    public let relationships: [RelationshipMapping]
    public let uniqueConstraints: [IndexMapping]
    public let fetchIndexes: [IndexMapping]

    /// An attribute by name, then by legacy name, then ignoring case.
    public func attribute(named name: String) -> AttributeMapping? {
        attributes.first { $0.attribute.name == name }
            ?? attributes.first { $0.attribute.legacyName == name }
            ?? attributes.first { $0.attribute.name.lowercased() == name.lowercased() }
    }

    public func relationship(named name: String) -> RelationshipMapping? {
        relationships.first { $0.relationship.name == name }
            ?? relationships.first { $0.relationship.legacyName == name }
            ?? relationships.first { $0.relationship.name.lowercased() == name.lowercased() }
    }
}

public struct AttributeMapping: Sendable {
    public let attribute: ModelAttribute
    /// The entity that declares it (this one or an ancestor).
    public let declaredBy: String
    /// The column; nil when the table has none for it (a problem is reported).
    public let column: String?
    /// The column's declared SQL type.
    public let declaredType: String?
    /// For a composite attribute: one mapping per element.
    public let elements: [AttributeMapping]
}

public struct RelationshipMapping: Sendable {
    public enum Kind: String, Sendable {
        case toOne = "to-one"
        case toMany = "to-many"
        case manyToMany = "many-to-many"
    }

    public let relationship: ModelRelationship
    public let declaredBy: String
    public let kind: Kind
    /// To-one: the foreign key column in this entity's table.
    public let column: String?
    /// To-one to a destination with subentities: the column holding the destination row's `Z_ENT`.
    public let entityKeyColumn: String?
    /// To-one whose inverse is an ordered to-many: `Z_FOK_…` in this table. Ordered many-to-many:
    /// the `Z_FOK_…` column of the join table.
    public let orderColumn: String?
    /// To-many: the destination's table and the foreign key column there pointing back here.
    public let foreignTable: String?
    public let foreignColumn: String?
    /// Many-to-many: the join table, the column holding this entity's keys, the column holding the destination's.
    public let joinTable: String?
    public let joinSourceColumn: String?
    public let joinDestinationColumn: String?
}

/// A uniqueness constraint or fetch index and the index Core Data names for it.
public struct IndexMapping: Sendable, Equatable {
    public let properties: [String]
    /// `Z_<Entity>_UNIQUE_<p1>_<p2>` or `Z_<Entity>_<IndexName>`.
    public let name: String
    /// Whether `sqlite_master` has an index (or R-tree table) of that name.
    public let present: Bool
    /// Why an absent index is not missing (a fetch index on a relationship), or how it is kept
    /// (an R-tree virtual table); nil for an ordinary index.
    public let note: String?

    public init(properties: [String], name: String, present: Bool, note: String? = nil) {
        self.properties = properties
        self.name = name
        self.present = present
        self.note = note
    }
}

extension SchemaMap {
    /// Maps `model` onto the store behind `connection`.
    /// - Parameter path: how errors name the store (defaults to the connection's file).
    public static func build(model: StoreModel, store: CoreDataStore, connection: Connection, path: String? = nil) throws -> SchemaMap {
        var builder = SchemaMapBuilder(model: model, store: store, connection: connection)
        return try builder.build(path: path ?? connection.path)
    }
}

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
        let indexNames = Set(schema.filter { $0.type == "index" || $0.type == "table" }.map(\.name))
        let virtualTables = Set(schema.filter { $0.type == "table" && ($0.sql ?? "").uppercased().contains("VIRTUAL TABLE") }.map(\.name))

        // Entity order: Z_ENT first (the evidence), then model entities the store lacks.
        let modelOrder = model.entitiesInNumberingOrder
        let position = Dictionary(modelOrder.enumerated().map { ($1.name, $0) }, uniquingKeysWith: { a, _ in a })
        let ordered = modelOrder.sorted {
            (userNumber($0.name) ?? Int.max, position[$0.name] ?? 0) < (userNumber($1.name) ?? Int.max, position[$1.name] ?? 0)
        }
        let storeUsers = store.entities.filter(Self.mapped)
        for e in storeUsers where model.entity(e.name) == nil {
            problems.append("Z_PRIMARYKEY lists entity \(e.name) (Z_ENT \(e.number)), which the \(model.source.rawValue) model does not have; its rows cannot be read by name")
        }

        // Tables: the store's (root by Z_SUPER) when it knows the entity, else the model's root.
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

        // Slots, table by table, in entity order.
        var slotsByTable: [String: [Slot]] = [:]
        for e in ordered {
            guard let table = tableOf[e.name] else { continue }
            var slots: [Slot] = []
            var late: [Slot] = []
            for a in e.attributes where !a.isTransient {
                addAttributeSlots(a, entity: e.name, path: [a.name], into: &slots, late: &late)
            }
            for r in e.relationships where !r.isTransient && !r.isToMany {
                let rel = r.name.uppercased()
                slots.append(Slot(key: .foreignKey(entity: e.name, relationship: r.name), bases: ["Z" + rel],
                                  expectedType: "INTEGER", hint: r.columnHint, late: false))
                if model.hasSubentities(r.destination) {
                    let n = userNumber(r.destination)
                    slots.append(Slot(key: .entityKey(entity: e.name, relationship: r.name),
                                      bases: n.map { ["Z\($0)_" + rel] } ?? [], expectedType: "INTEGER", hint: nil, late: false))
                }
                if let inverse = model.inverse(of: r), inverse.isToMany, inverse.isOrdered {
                    slots.append(Slot(key: .orderKey(entity: e.name, relationship: r.name), bases: ["Z_FOK_" + rel],
                                      expectedType: "INTEGER", hint: nil, late: false))
                }
            }
            slotsByTable[table, default: []] += slots + late
        }
        // Hidden keys of to-many relationships without a to-one inverse, on the destination's table.
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

        // Resolve every table's slots against its real columns.
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
        // Entity tables with no mapped entity at all still have their columns reported.
        for s in storeUsers where tables.contains(s.table) && slotsByTable[s.table] == nil && !Set(tableOf.values).contains(s.table) {
            for c in try columns(s.table) where !["Z_PK", "Z_ENT", "Z_OPT"].contains(c.name.uppercased())
                && !unknownColumns.contains(where: { $0.table == s.table && $0.column == c.name }) {
                unknownColumns.append(.init(table: s.table, column: c.name, declaredType: c.declaredType))
            }
        }

        // Many-to-many join tables: found by their column names.
        let metadataTables: Set<String> = ["Z_PRIMARYKEY", "Z_METADATA", "Z_MODELCACHE"]
        let joinCandidates = tables.filter { $0.uppercased().hasPrefix("Z_") && !metadataTables.contains($0.uppercased()) }.sorted()
        var joinColumns: [String: [Connection.Column]] = [:]
        for t in joinCandidates { joinColumns[t] = (try? connection.columns(of: t)) ?? [] }
        var joins: [String: (table: String, source: String, destination: String, order: String?)] = [:]
        var claimedJoinTables = Set<String>()

        func findJoin(sourceBase: String, destinationBase: String) -> (table: String, source: String, destination: String, order: String?)? {
            for t in joinCandidates where !claimedJoinTables.contains(t) {
                let cols = joinColumns[t] ?? []
                let names = cols.map { $0.name }
                func pick(_ base: String, excluding: String?) -> String? {
                    names.filter { $0 != excluding }
                        .compactMap { n in Self.suffixScore(n.uppercased(), base: base).map { (n, $0) } }
                        .min { $0.1 < $1.1 }?.0
                }
                guard let source = pick(sourceBase, excluding: nil),
                      let destination = pick(destinationBase, excluding: source) else { continue }
                let order = names.first { $0.uppercased() == "Z_FOK_" + destination.uppercased().dropFirst(2) }
                    ?? names.first { $0.uppercased().hasPrefix("Z_FOK_") }
                return (t, source, destination, order)
            }
            return nil
        }
        for e in ordered {
            for r in e.relationships where !r.isTransient && r.isToMany {
                guard let inverse = model.inverse(of: r), inverse.isToMany else { continue }
                let key = "\(e.name).\(r.name)"
                if joins[key] != nil { continue }
                let inverseOwner = model.lineage(of: r.destination).last { $0.relationships.contains { $0.name == inverse.name } }?.name ?? r.destination
                let eNumber = userNumber(e.name).map(String.init) ?? ""
                let dNumber = userNumber(inverseOwner).map(String.init) ?? ""
                if inverseOwner == e.name && inverse.name == r.name {
                    // A relationship that is its own inverse (Photos' Person.mergeCandidates) keeps one
                    // join table `Z_<n><NAME>` whose columns are `Z_<n><NAME>` and `REFLEXIVE`.
                    let base = "Z_\(eNumber)" + r.name.uppercased()
                    let found = joinCandidates.lazy.filter { !claimedJoinTables.contains($0) }.compactMap { t -> (table: String, source: String, destination: String, order: String?)? in
                        let names = (joinColumns[t] ?? []).map(\.name)
                        guard let reflexive = names.first(where: { $0.uppercased() == "REFLEXIVE" }),
                              let source = names.filter({ $0 != reflexive })
                                .compactMap({ n in Self.suffixScore(n.uppercased(), base: base).map { (n, $0) } })
                                .min(by: { $0.1 < $1.1 })?.0 else { return nil }
                        return (t, source, reflexive, names.first { $0.uppercased().hasPrefix("Z_FOK_") })
                    }.first
                    guard let found else {
                        problems.append("no join table holds the reflexive many-to-many \(e.name).\(r.name) (its own inverse)")
                        continue
                    }
                    claimedJoinTables.insert(found.table)
                    joins[key] = found
                    for c in joinColumns[found.table] ?? [] where ![found.source, found.destination].contains(c.name) && !c.name.uppercased().hasPrefix("Z_FOK_") {
                        unknownColumns.append(.init(table: found.table, column: c.name, declaredType: c.declaredType))
                    }
                    continue
                }
                // Each column is named after the relationship pointing at the rows it holds.
                guard let found = findJoin(sourceBase: "Z_\(eNumber)" + inverse.name.uppercased(),
                                           destinationBase: "Z_\(dNumber)" + r.name.uppercased()) else {
                    problems.append("no join table holds the many-to-many \(e.name).\(r.name) ↔ \(inverseOwner).\(inverse.name)")
                    continue
                }
                claimedJoinTables.insert(found.table)
                joins[key] = found
                let inverseOrder = joinColumns[found.table]?.map(\.name)
                    .first { $0.uppercased() == "Z_FOK_" + found.source.uppercased().dropFirst(2) }
                joins["\(inverseOwner).\(inverse.name)"] = (found.table, found.destination, found.source, inverseOrder)
                for c in joinColumns[found.table] ?? [] where ![found.source, found.destination].contains(c.name) && !c.name.uppercased().hasPrefix("Z_FOK_") {
                    unknownColumns.append(.init(table: found.table, column: c.name, declaredType: c.declaredType))
                }
            }
        }

        // Assemble entity mappings.
        var mappings: [EntityMapping] = []
        for e in ordered {
            guard let table = tableOf[e.name] else { continue }
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
                    if level.name == e.name && tableExists {
                        switch m.kind {
                        case .toOne where m.column == nil:
                            problems.append("\(e.name).\(r.name) (to-one) has no foreign key column in \(table)")
                        case .toMany where m.foreignColumn == nil:
                            problems.append("\(e.name).\(r.name) (to-many) has no foreign key column in \(tableOf[r.destination] ?? "the destination's table")")
                        default: break
                        }
                        if !r.destination.isEmpty && model.entity(r.destination) == nil {
                            problems.append("\(e.name).\(r.name) points at \(r.destination), which the model does not define")
                        }
                    }
                    relationships.append(m)
                }
            }
            let storeEntity = storeUsers.first { $0.name == e.name }
            var numbers = storeEntity?.subtreeNumbers ?? []
            if storeEntity == nil {
                numbers = model.subtree(of: e.name).compactMap { userNumber($0.name) }.sorted()
            }
            var uniques: [IndexMapping] = []
            for c in e.uniqueConstraints {
                let name = "Z_\(e.name)_UNIQUE_" + c.joined(separator: "_")
                if !indexNames.contains(name), tableExists,
                   let auto = try columnUniqueIndex(table: table, properties: c, attributes: attributes, relationships: relationships) {
                    // Older frameworks (knowledgeC, fw 851) declare the constraint as a column-level
                    // UNIQUE, which SQLite enforces with an automatic index of its own.
                    uniques.append(IndexMapping(properties: c, name: auto, present: true,
                                                note: "column-level UNIQUE, enforced by SQLite's automatic index"))
                } else {
                    uniques.append(IndexMapping(properties: c, name: name, present: indexNames.contains(name)))
                }
            }
            let fetchIndexes = e.fetchIndexes.map { f -> IndexMapping in
                let name = "Z_\(e.name)_\(f.name)"
                let rtree = "Z_RT_\(e.name)_\(f.name)"
                if f.elements.contains(where: { $0.kind == "RTree" }) || indexNames.contains(rtree) {
                    let present = virtualTables.contains(rtree)
                    return IndexMapping(properties: f.elements.map(\.property), name: rtree, present: present,
                                        note: present ? "R-tree virtual table kept by triggers on \(table)" : nil)
                }
                return IndexMapping(properties: f.elements.map(\.property), name: name, present: indexNames.contains(name),
                                    note: indexNames.contains(name) ? nil : relationshipIndexNote(f, table: table, relationships: relationships,
                                                                                                  schema: schema))
            }
            if tableExists {
                for u in uniques where !u.present {
                    problems.append("the uniqueness constraint \(e.name) (\(u.properties.joined(separator: ", "))) has no index \(u.name)")
                }
                for f in fetchIndexes where !f.present && f.note == nil {
                    problems.append("the fetch index \(f.name) of \(e.name) is missing")
                }
            }
            mappings.append(EntityMapping(entity: e, number: userNumber(e.name), table: table, tableExists: tableExists,
                                          entityNumbers: numbers, lineage: lineage.map(\.name), attributes: attributes,
                                          relationships: relationships, uniqueConstraints: uniques, fetchIndexes: fetchIndexes))
        }

        // Tables nobody explains.
        // History tables are history even when Z_PRIMARYKEY has no rows for them.
        var known = Set(tableOf.values).union(claimedJoinTables).union(metadataTables)
            .union(["ACHANGE", "ATRANSACTION", "ATRANSACTIONSTRING"])
        for s in store.entities { known.insert(s.table) }
        for m in mappings { for f in m.fetchIndexes where f.name.hasPrefix("Z_RT_") { known.insert(f.name) } }
        let ubiquity = tables.filter { SchemaMap.ubiquityTableNames.contains($0.uppercased()) }.sorted()
        known.formUnion(ubiquity)
        let unknownTables = tables.filter { t in
            !known.contains(t) && !t.hasPrefix("sqlite_") && !t.uppercased().hasPrefix("ANSCK")
                && !(t.hasPrefix("Z_RT_") && tables.contains { $0 != t && t.hasPrefix($0) })
        }.sorted()

        // Derived attributes and the Z_DA_<TABLE>_<Entity>_<attribute>_… triggers that keep them.
        var derived: [SchemaMap.DerivedTriggers] = []
        let triggers = schema.filter { $0.type == "trigger" && $0.name.hasPrefix("Z_DA_") }.map(\.name)
        for e in ordered {
            for a in e.attributes where a.derivation != nil {
                let marker = "_\(e.name)_\(a.name)_"
                derived.append(.init(entity: e.name, attribute: a.name, derivation: a.derivation ?? "",
                                     triggers: triggers.filter { $0.contains(marker) }.sorted()))
            }
        }
        var map = SchemaMap(path: path, model: model, entities: mappings, joinTables: claimedJoinTables.sorted(),
                            unknownColumns: unknownColumns, unknownTables: unknownTables, problems: problems)
        map.derivedAttributeTriggers = derived
        map.ubiquityTables = ubiquity
        return map
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
