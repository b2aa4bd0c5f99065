import Foundation
import StoreFormats

/// Checks on the object graph of an atomic store as a whole: ids used twice, ids that are not
/// Core Data's `z<number>`, relationships naming objects the store does not hold. Each is an
/// anomaly shown with the rows, never a reason to stop.
enum XMLStoreChecks {
    static func checkIdentities(_ contents: inout AtomicStoreContents) {
        var seen: [String: Int] = [:]
        for object in contents.objects { seen[object.id, default: 0] += 1 }
        for (id, count) in seen.sorted(by: { $0.key < $1.key }) where count > 1 {
            contents.note("the id \(id) is used by \(count) objects; relationships to it are shown against the first")
        }
        for object in contents.objects where !object.id.isEmpty && AtomicStoreRows.primaryKey(object.id) == nil {
            contents.note("\(object.type) \(object.id): the id is not z followed by a number, so it is shown with key 0")
        }
        for object in contents.objects {
            for attribute in object.attributes {
                if let problem = AtomicStoreValue.decode(type: attribute.type, text: attribute.text).1 {
                    contents.note("\(object.type) \(object.id).\(attribute.name): \(problem)")
                }
            }
            for relationship in object.relationships {
                for ref in relationship.idrefs where seen[ref] == nil {
                    contents.note("\(object.type) \(object.id).\(relationship.name) names \(ref), which no object in the store has")
                }
            }
        }
    }
}

/// An atomic store's objects of one entity as the rows `storelens rows` writes for a SQLite
/// store: attributes typed by the type the store gives each (`FieldValue`), to-one
/// relationships as `Entity#pk`, to-many as the list of them, the key from the object id
/// (`z102` → 102).
public struct AtomicStoreRows {
    public let entity: String
    /// Property names in the order first met across the entity's objects (attributes first).
    public let fields: [String]
    public let rows: [DecodedRow]
    /// The values that are not what their type says, one sentence each.
    public let anomalies: [String]

    public init(_ contents: AtomicStoreContents, entity wanted: String, displayPath: String) throws(AtomicStoreError) {
        try self.init(AtomicStoreIndex(contents), entity: wanted, displayPath: displayPath)
    }

    /// The rows of one entity from an index made once (`export` reads every entity from one).
    public init(_ index: AtomicStoreIndex, entity wanted: String, displayPath: String) throws(AtomicStoreError) {
        let entities = index.entities
        guard let entity = entities.first(where: { $0 == wanted }) ?? entities.first(where: { $0.caseInsensitiveCompare(wanted) == .orderedSame }) else {
            throw .entityNotFound(path: displayPath, entity: wanted, entities: entities)
        }
        self.entity = entity
        let objects = (index.objectsByEntity[entity] ?? []).map { index.contents.objects[$0] }
        var attributeNames: [String] = [], relationshipNames: [String] = []
        var known = Set<String>()
        for object in objects {
            for a in object.attributes where known.insert(a.name).inserted { attributeNames.append(a.name) }
            for r in object.relationships where known.insert(r.name).inserted { relationshipNames.append(r.name) }
        }
        fields = attributeNames + relationshipNames
        let position = Dictionary(fields.enumerated().map { ($1, $0) }, uniquingKeysWith: { first, _ in first })
        var anomalies: [String] = []
        var rows: [DecodedRow] = []
        for object in objects.sorted(by: { (Self.primaryKey($0.id) ?? 0) < (Self.primaryKey($1.id) ?? 0) }) {
            var values: [(name: String, value: FieldValue)] = []
            for a in object.attributes {
                let (value, problem) = AtomicStoreValue.decode(type: a.type, text: a.text)
                if let problem { anomalies.append("\(entity) \(object.id).\(a.name): \(problem)") }
                values.append((a.name, value))
            }
            for r in object.relationships { values.append((r.name, Self.value(of: r, index: index))) }
            // One value per field: a property written twice keeps its first.
            var seen = Set<String>()
            let kept = values.filter { seen.insert($0.name).inserted }
            rows.append(DecodedRow(entity: entity, pk: Self.primaryKey(object.id) ?? 0, values: kept, fieldIndexes: kept.map { position[$0.name] ?? 0 }))
        }
        self.rows = rows
        self.anomalies = anomalies
    }

    /// A to-one as `Entity#pk`, a to-many as the space-separated list, the entity of each target
    /// from the object it names (from the relationship's destination when no object has the id).
    static func value(of r: AtomicStoreObject.Relationship, index: AtomicStoreIndex) -> FieldValue {
        let targets = r.idrefs.map { ref -> (String, Int64) in
            let type = index.firstObjectByID[ref].map { index.contents.objects[$0].type } ?? r.destination
            return (index.name(forStoredType: type), Self.primaryKey(ref) ?? 0)
        }
        if !r.isToMany, targets.count == 1 { return .object(entity: targets[0].0, pk: targets[0].1) }
        return targets.isEmpty ? .null : .text(targets.map { "\($0.0)#\($0.1)" }.joined(separator: " "))
    }

    /// `z102` → 102; nil for an id of another shape.
    public static func primaryKey(_ id: String) -> Int64? {
        guard id.first == "z" else { return nil }
        return Int64(id.dropFirst())
    }
}

/// What reading rows needs from an atomic store, computed once: entity names by stored type, the
/// objects of each entity, the first object of each id. Each lookup is then constant time, so no
/// store (however many entities its metadata names) makes reading quadratic.
public struct AtomicStoreIndex {
    public let contents: AtomicStoreContents
    /// Entity names (the model's spelling) by upper-cased stored type.
    let names: [String: String]
    /// Object positions in `contents.objects` by entity name.
    public let objectsByEntity: [String: [Int]]
    let firstObjectByID: [String: Int]
    /// Every entity: those the model names and those objects have.
    public let entities: [String]

    public init(_ contents: AtomicStoreContents) {
        self.contents = contents
        var names: [String: String] = [:]
        for hash in contents.modelVersionHashes where names[hash.entity.uppercased()] == nil { names[hash.entity.uppercased()] = hash.entity }
        self.names = names
        var byEntity: [String: [Int]] = [:]
        var byID: [String: Int] = [:]
        for (i, object) in contents.objects.enumerated() {
            byEntity[names[object.type.uppercased()] ?? object.type, default: []].append(i)
            if byID[object.id] == nil { byID[object.id] = i }
        }
        objectsByEntity = byEntity
        firstObjectByID = byID
        entities = Set(names.values).union(byEntity.keys).sorted()
    }

    public func name(forStoredType type: String) -> String { names[type.uppercased()] ?? type }
}
