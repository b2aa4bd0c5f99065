import Foundation
import SQLiteAccess

/// A model guessed from the SQL schema alone, for stores with no `Z_MODELCACHE` and no `--model`.
///
/// - Entities and inheritance come from `Z_PRIMARYKEY`.
/// - Attributes come from columns: the name is the column without its `Z`, lowercased (Core Data
///   uppercases names, so the original case is lost — except where a uniqueness index's name,
///   which keeps it, gives it back); the type comes from the declared SQL type (a BLOB whose every
///   value has 16 bytes is taken for a UUID).
/// - In a table shared by a hierarchy, a column belongs to the lowest common ancestor of the
///   entities whose rows fill it (the root when it is empty everywhere).
/// - To-one relationships are INTEGER columns with Core Data's automatic `<TABLE>_<COLUMN>_INDEX`
///   — but early frameworks (iOS 9's 619) give an indexed *attribute* that very index too, so the
///   index alone proves nothing. A to-one is inferred only from evidence an attribute cannot have:
///   its FEK column (`Z<n>_<NAME>`, the destination's entity number), or values that are all keys
///   of one entity whose name fits the relationship's name (equal to it, or ending with it: an
///   `audioLink` to a `Link`) and of no other table (keys are unique within a table, not across
///   them), the destination then being the lowest common ancestor of the entities of the rows it
///   points at. Where no FEK column says it, no value is stored, no entity named like it holds
///   every value, or another table holds them all too (a `sortIndex` of 2009, a flag of 0), the
///   column is an integer attribute, listed in `uncertainColumns` and in the notes, and `rows`
///   shows its number: never a reference the store does not prove. A pair of to-ones whose values
///   point at each other is a one-to-one. Any other to-one gets an unnamed to-many inverse on its
///   destination, shown as `(inverse of Entity.relationship)`.
/// - `Z<n><NAME>` columns are the hidden keys of to-many relationships without inverse; `Z_<n>…`
///   join tables give many-to-many pairs; `Z_FOK_` columns make them ordered.
public enum InferredModelBuilder {
    public static func infer(_ connection: Connection, store: CoreDataStore) throws -> StoreModel {
        var builder = Builder(connection: connection, store: store)
        return try builder.build()
    }

    struct Builder {
        let connection: Connection
        let store: CoreDataStore
        var notes: [String] = []
        var entities: [String: ModelEntity] = [:]
        /// `TABLE.COLUMN` of the columns indexed like a to-one that nothing proves to be one.
        var uncertain: [String] = []
        let users: [StoreEntity]

        init(connection: Connection, store: CoreDataStore) {
            self.connection = connection
            self.store = store
            self.users = store.entities.filter { $0.kind == .user }
        }

        struct ToOne { var owner: String; var name: String; var column: String; var table: String; var fekNumber: Int? }

        func entity(number: Int) -> StoreEntity? { users.first { $0.number == number } }

        /// Root-first chain of entity numbers (cycle-safe).
        func lineage(_ number: Int) -> [Int] {
            var chain: [Int] = []
            var seen = Set<Int>()
            var current = entity(number: number)
            while let e = current, seen.insert(e.number).inserted {
                chain.append(e.number)
                current = e.superNumber == 0 ? nil : entity(number: e.superNumber)
            }
            return chain.reversed()
        }

        func lowestCommonAncestor(_ numbers: [Int]) -> Int? {
            guard let first = numbers.first else { return nil }
            var common = lineage(first)
            for n in numbers.dropFirst() {
                let other = lineage(n)
                var k = 0
                while k < common.count && k < other.count && common[k] == other[k] { k += 1 }
                common = Array(common.prefix(k))
            }
            return common.last
        }

        static func lower(_ column: String) -> String {
            let body = column.uppercased().hasPrefix("Z") ? String(column.dropFirst()) : column
            return body.lowercased()
        }

        mutating func build() throws -> StoreModel {
            for e in users {
                entities[e.name] = ModelEntity(name: e.name, className: nil, renamingIdentifier: nil, parent: e.parentName)
            }
            let tables = Set(try connection.tableNames())
            let schema = try connection.schemaObjects()
            let indexes = schema.filter { $0.type == "index" }

            var toOnes: [ToOne] = []
            for table in Array(Set(users.map(\.table))).sorted() where tables.contains(table) {
                toOnes += try inferTable(table, indexes: indexes)
            }
            try addToOnes(toOnes)
            uncertain.sort()
            try inferJoinTables(tables: tables)

            notes.insert("the model was inferred from the SQL schema alone (no Z_MODELCACHE, no --model): names are lowercased column names, types come from declared column types, relationships from foreign-key indexes, FEK/FOK columns and join tables", at: 0)
            let result = entities.values.map { e -> ModelEntity in
                var e = e
                e.attributes.sort { $0.name < $1.name }
                e.relationships.sort { $0.name < $1.name }
                return e
            }.sorted { $0.name < $1.name }
            var model = StoreModel(source: .inferred, entities: result, versionIdentifiers: store.metadata.modelVersionIdentifiers,
                                   origin: "the SQL schema", notes: notes)
            model.uncertainColumns = uncertain
            return model
        }

        /// One entity table as inference sees it: its columns (the three Core Data ones aside),
        /// their names in upper case, the indexes on it, and the entity each column belongs to.
        struct TableShape {
            let table: String
            let members: [StoreEntity]
            let root: StoreEntity
            let columns: [Connection.Column]
            let upperNames: Set<String>
            /// Index names on the table, upper case.
            let indexed: Set<String>
            /// Column → the entity number it belongs to.
            let owner: [String: Int]
        }

        /// Infers one table's attributes, hidden to-many keys, uniqueness constraints and fetch
        /// indexes; returns its to-one candidates, whose destinations need every table first.
        mutating func inferTable(_ table: String, indexes: [Connection.SchemaObject]) throws -> [ToOne] {
            let members = users.filter { $0.table == table }
            guard let root = members.first(where: { $0.superNumber == 0 || entity(number: $0.superNumber) == nil }) ?? members.first else { return [] }
            // A table SQLite cannot read here (a private virtual-table module) is named, not fatal.
            guard let allColumns = try? connection.columns(of: table) else {
                notes.append("the table \(table) cannot be read by SQLite here; its entities have no inferred properties")
                return []
            }
            let hasEntityColumn = allColumns.contains { $0.name.uppercased() == "Z_ENT" }
            let columns = allColumns.filter { !["Z_PK", "Z_ENT", "Z_OPT"].contains($0.name.uppercased()) }
            let shape = TableShape(
                table: table, members: members, root: root, columns: columns, upperNames: Set(columns.map { $0.name.uppercased() }),
                indexed: Set(indexes.filter { $0.tableName.uppercased() == table.uppercased() }.map { $0.name.uppercased() }),
                owner: try columnOwners(columns, table: table, members: members, root: root, hasEntityColumn: hasEntityColumn))
            var toOnes: [ToOne] = []
            for c in columns {
                if let toOne = inferColumn(c, in: shape) { toOnes.append(toOne) }
            }
            try inferIndexes(of: shape, indexes: indexes)
            return toOnes
        }

        /// Which entity each column belongs to: the lowest common ancestor of the entities whose
        /// rows fill it (one grouped scan per 200 columns), the root when it is empty everywhere
        /// or the table holds one entity.
        func columnOwners(_ columns: [Connection.Column], table: String, members: [StoreEntity], root: StoreEntity,
                          hasEntityColumn: Bool) throws -> [String: Int] {
            var owner: [String: Int] = [:]
            guard members.count > 1 && hasEntityColumn else {
                for c in columns { owner[c.name] = root.number }
                return owner
            }
            var filled: [String: [Int]] = [:]
            for chunk in stride(from: 0, to: columns.count, by: 200).map({ Array(columns[$0..<min($0 + 200, columns.count)]) }) {
                let counts = chunk.map { "count(\(Identifier.quoted($0.name)))" }.joined(separator: ", ")
                for row in try connection.rows("SELECT Z_ENT, \(counts) FROM \(Identifier.quoted(table)) GROUP BY Z_ENT") {
                    guard let ent = row[0].int, entity(number: ent)?.table == table else { continue }
                    for (i, c) in chunk.enumerated() where (row[i + 1].int ?? 0) > 0 { filled[c.name, default: []].append(ent) }
                }
            }
            for c in columns { owner[c.name] = lowestCommonAncestor(filled[c.name] ?? []) ?? root.number }
            return owner
        }

        /// The name of the entity a column belongs to.
        func ownerName(_ column: String, in shape: TableShape) -> String {
            entity(number: shape.owner[column] ?? shape.root.number)?.name ?? shape.root.name
        }

        /// What one column is: an order or entity key (skipped: attached to its relationship
        /// later), a hidden to-many key, a to-one candidate (returned), or an attribute.
        mutating func inferColumn(_ c: Connection.Column, in shape: TableShape) -> ToOne? {
            let upper = c.name.uppercased(), table = shape.table
            let declared = c.declaredType.uppercased()
            if upper.hasPrefix("Z_FOK_") { return nil }   // order keys: attached below
            if let (_, rest) = Self.numberedPrefix(upper, separator: "_"), shape.upperNames.contains("Z" + rest) {
                return nil   // FEK: attached to its relationship below
            }
            if declared == "INTEGER", let (n, rest) = Self.numberedPrefix(upper, separator: nil), let source = entity(number: n),
               rest.first?.isLetter == true {
                // Hidden key of a to-many without inverse, declared by entity n.
                var r = ModelRelationship(name: rest.lowercased(), destination: ownerName(c.name, in: shape), isToMany: true)
                r.columnHint = c.name
                entities[source.name]?.relationships.append(r)
                return nil
            }
            if declared == "INTEGER" && shape.indexed.contains("\(table.uppercased())_\(upper)_INDEX") {
                var fek: Int?
                for other in shape.upperNames {
                    if let (n, rest) = Self.numberedPrefix(other, separator: "_"), "Z" + rest == upper { fek = n }
                }
                return ToOne(owner: ownerName(c.name, in: shape), name: Self.lower(c.name), column: c.name, table: table, fekNumber: fek)
            }
            var a = ModelAttribute(name: Self.lower(c.name), type: attributeType(declared, column: c.name, table: table), isOptional: true)
            a.columnHint = c.name
            // A digit suffix that only disambiguates a same-named property of another branch.
            if let base = Self.strippedSuffix(upper), shape.upperNames.contains(base) {
                let root = shape.root.number
                let mine = shape.owner[c.name] ?? root, theirs = shape.owner[shape.columns.first { $0.name.uppercased() == base }?.name ?? ""] ?? root
                if !lineage(mine).contains(theirs) && !lineage(theirs).contains(mine) { a.name = Self.lower(base) }
            }
            entities[ownerName(c.name, in: shape)]?.attributes.append(a)
            return nil
        }

        /// An attribute's type from the column's declared SQL type; a BLOB whose every value has
        /// 16 bytes is taken for a UUID.
        func attributeType(_ declared: String, column: String, table: String) -> ModelAttributeType {
            switch declared {
            case "INTEGER": return .integer64
            case "FLOAT", "REAL", "DOUBLE": return .double
            case "TIMESTAMP": return .date
            case "VARCHAR", "TEXT": return .string
            case "DECIMAL": return .decimal
            case "BLOB":
                let row = (try? connection.rows("SELECT count(*), sum(length(\(Identifier.quoted(column))) = 16) FROM \(Identifier.quoted(table)) WHERE \(Identifier.quoted(column)) IS NOT NULL"))?.first
                if let total = row?[0].int, total > 0, row?[1].int == total { return .uuid }
                return .binary
            default: return .undefined
            }
        }

        /// Uniqueness constraints and fetch indexes from the table's `Z_<Entity>_…` indexes, whose
        /// names keep the entity's and properties' real case.
        mutating func inferIndexes(of shape: TableShape, indexes: [Connection.SchemaObject]) throws {
            let members = shape.members
            for index in indexes where index.tableName.uppercased() == shape.table.uppercased() && index.name.hasPrefix("Z_") {
                guard let e = members.sorted(by: { $0.name.count > $1.name.count }).first(where: { index.name.hasPrefix("Z_\($0.name)_") }) else { continue }
                let rest = String(index.name.dropFirst("Z_\(e.name)_".count))
                let indexColumns = try connection.rows("SELECT name FROM pragma_index_info(?) ORDER BY seqno", [.text(index.name)]).compactMap { $0[0].string }
                if rest.hasPrefix("UNIQUE_") {
                    let names = String(rest.dropFirst("UNIQUE_".count))
                    let parts = indexColumns.count == 1 ? [names] : names.split(separator: "_").map(String.init)
                    var constraint: [String] = []
                    for (i, column) in indexColumns.enumerated() {
                        let real = parts.count == indexColumns.count ? parts[i] : Self.lower(column)
                        constraint.append(rename(column: column, to: real, among: members.map(\.name)))
                    }
                    entities[e.name]?.uniqueConstraints.append(constraint)
                } else if !rest.isEmpty {
                    let properties = indexColumns.map { column in
                        members.compactMap { entities[$0.name] }.flatMap(\.attributes)
                            .first { $0.columnHint?.uppercased() == column.uppercased() }?.name ?? Self.lower(column)
                    }
                    entities[e.name]?.fetchIndexes.append(ModelFetchIndex(name: rest, elements: properties.map { .init(property: $0) }))
                }
            }
        }

        /// To-one destinations, one-to-one pairs (two to-ones whose values point at each other)
        /// and unnamed to-many inverses for the rest.
        mutating func addToOnes(_ toOnes: [ToOne]) throws {
            var resolved: [(ToOne, String)] = []
            for t in toOnes {
                if let destination = try self.destination(of: t.name, column: t.column, table: t.table, fekNumber: t.fekNumber, owner: t.owner) {
                    resolved.append((t, destination))
                    continue
                }
                // Nothing proves a reference: an integer attribute, said to be uncertain.
                var a = ModelAttribute(name: t.name, type: .integer64, isOptional: true)
                a.columnHint = t.column
                entities[t.owner]?.attributes.append(a)
                uncertain.append("\(t.table).\(t.column)")
                // Its order key (an ordered inverse's) is known all the same, and shown as such.
                let order = "Z_FOK_" + String(t.column.uppercased().dropFirst())
                if let column = ((try? connection.columns(of: t.table)) ?? []).first(where: { $0.name.uppercased() == order }) {
                    var o = ModelAttribute(name: "(order of \(t.name))", type: .integer64, isOptional: true)
                    o.columnHint = column.name
                    entities[t.owner]?.attributes.append(o)
                }
                notes.append("\(t.table).\(t.column) has the index Core Data gives a to-one (and early frameworks an indexed attribute), but nothing in the store proves where it points (no entity column, no entity named like it that alone holds every value): read as the number it stores; give the app's model with --model for its references")
            }
            var inverseOf: [Int: String] = [:]
            for (i, (a, aDestination)) in resolved.enumerated() where inverseOf[i] == nil && !aDestination.isEmpty {
                for (j, (b, bDestination)) in resolved.enumerated() where j != i && inverseOf[j] == nil && b.owner == aDestination && bDestination == a.owner {
                    if (try? pointsBack(a, b)) == true {
                        inverseOf[i] = b.name
                        inverseOf[j] = a.name
                        break
                    }
                }
            }
            for (i, (t, destination)) in resolved.enumerated() {
                var r = ModelRelationship(name: t.name, destination: destination, inverse: inverseOf[i])
                r.columnHint = t.column
                if inverseOf[i] == nil && !destination.isEmpty {
                    let inverseName = "(inverse of \(t.owner).\(t.name))"
                    r.inverse = inverseName
                    var many = ModelRelationship(name: inverseName, destination: t.owner, inverse: t.name, isToMany: true)
                    many.columnHint = t.column
                    // An ordered to-many keeps its order key beside the foreign key.
                    let columns = ((try? connection.columns(of: t.table)) ?? []).map { $0.name.uppercased() }
                    if columns.contains("Z_FOK_" + String(t.column.uppercased().dropFirst())) { many.isOrdered = true }
                    entities[destination]?.relationships.append(many)
                }
                entities[t.owner]?.relationships.append(r)
            }
        }

        /// Gives the attribute stored in `column` its real-case name from an index name.
        mutating func rename(column: String, to name: String, among names: [String]) -> String {
            for key in names {
                guard let index = entities[key]?.attributes.firstIndex(where: { $0.columnHint?.uppercased() == column.uppercased() }) else { continue }
                if entities[key]?.attributes[index].name.lowercased() == name.lowercased() {
                    entities[key]?.attributes[index].name = name
                    return name
                }
                return entities[key]?.attributes[index].name ?? name
            }
            return name
        }

        /// The destination entity of a to-one foreign key (see the type's documentation), or nil
        /// when nothing proves the column is one.
        mutating func destination(of name: String, column: String, table: String, fekNumber: Int?, owner: String) throws -> String? {
            if let n = fekNumber, let e = entity(number: n) { return e.name }
            let lowered = name.lowercased()
            // Entities named like the relationship: equal to its name, or its name ends with theirs.
            let named = users.filter { e in
                let entityName = e.name.lowercased()
                return entityName == lowered || lowered.hasSuffix(entityName) || entityName.hasSuffix(lowered)
            }.sorted { a, b in
                func score(_ e: StoreEntity) -> Int {
                    let n = e.name.lowercased()
                    return n == lowered ? 0 : n.hasSuffix(lowered) ? 1 + n.count - lowered.count : 1000 + lowered.count - n.count
                }
                return (score(a), a.number) < (score(b), b.number)
            }
            let q = Identifier.quoted
            let values = try connection.scalar("SELECT count(*) FROM \(q(table)) WHERE \(q(column)) IS NOT NULL").int ?? 0
            // No values: nothing proves where it points (a name alone is a guess).
            guard values > 0 else { return nil }
            /// Whether every value is the key of a row of `e`'s subtree.
            func holdsEvery(_ e: StoreEntity) throws -> Bool {
                guard try connection.tableExists(e.table) else { return false }
                let numbers = e.subtreeNumbers.map(String.init).joined(separator: ",")
                let sql = "SELECT count(*) FROM \(q(table)) t WHERE t.\(q(column)) IS NOT NULL AND NOT EXISTS (SELECT 1 FROM \(q(e.table)) d WHERE d.Z_PK = t.\(q(column)) AND d.Z_ENT IN (\(numbers)))"
                return (try? connection.scalar(sql))?.int == 0
            }
            guard let candidate = try named.first(where: holdsEvery) else { return nil }
            // An order key beside it (`Z_FOK_<NAME>`) proves a to-one whose inverse is an ordered
            // to-many: with an entity of exactly its name holding every value, that is where it points.
            let ordered = ((try? connection.columns(of: table)) ?? []).contains { $0.name.uppercased() == "Z_FOK_" + column.uppercased().dropFirst() }
            let proven = ordered && candidate.name.lowercased() == lowered
            // Keys are unique within a table, not across them: when another table's rows hold
            // every value too, the values do not say which the column points at.
            for other in users where !proven && other.superNumber == 0 && other.table != candidate.table {
                guard try holdsEvery(other) else { continue }
                notes.append("\(owner).\(name) (\(table).\(column)): every value is a key of \(candidate.name) and of \(other.name) too")
                return nil
            }
            let numbers = candidate.subtreeNumbers.map(String.init).joined(separator: ",")
            let pointed = try connection.rows("SELECT DISTINCT d.Z_ENT FROM \(q(table)) t JOIN \(q(candidate.table)) d ON d.Z_PK = t.\(q(column)) WHERE d.Z_ENT IN (\(numbers))").compactMap { $0[0].int }
            return lowestCommonAncestor(pointed).flatMap { entity(number: $0)?.name } ?? candidate.name
        }

        /// Whether two to-ones form a one-to-one: every link one way is matched the other way.
        func pointsBack(_ a: ToOne, _ b: ToOne) throws -> Bool {
            let at = Identifier.quoted(a.table), bt = Identifier.quoted(b.table)
            let ac = Identifier.quoted(a.column), bc = Identifier.quoted(b.column)
            let links = try connection.scalar("SELECT count(*) FROM \(at) a JOIN \(bt) b ON a.\(ac) = b.Z_PK").int ?? 0
            guard links > 0 else { return false }
            let mismatched = try connection.scalar("SELECT count(*) FROM \(at) a JOIN \(bt) b ON a.\(ac) = b.Z_PK WHERE b.\(bc) IS NOT a.Z_PK").int ?? 1
            let mismatchedBack = try connection.scalar("SELECT count(*) FROM \(bt) b JOIN \(at) a ON b.\(bc) = a.Z_PK WHERE a.\(ac) IS NOT b.Z_PK").int ?? 1
            return mismatched == 0 && mismatchedBack == 0
        }

        /// Many-to-many pairs from `Z_<n>…` join tables.
        mutating func inferJoinTables(tables: Set<String>) throws {
            for table in tables.sorted() where table.hasPrefix("Z_") && !["Z_PRIMARYKEY", "Z_METADATA", "Z_MODELCACHE"].contains(table) {
                guard Self.numberedPrefix(String(table.dropFirst()), separator: nil) != nil || table.dropFirst(2).first?.isNumber == true else { continue }
                let columns = ((try? connection.columns(of: table)) ?? []).map(\.name)
                let keyed = columns.filter { !$0.uppercased().hasPrefix("Z_FOK_") }
                    .compactMap { c -> (column: String, number: Int, name: String)? in
                        guard c.uppercased().hasPrefix("Z_"), let (n, rest) = Self.numberedPrefix("Z" + c.dropFirst(2), separator: nil) else { return nil }
                        return (c, n, rest)
                    }
                guard keyed.count == 2, let a = entity(number: keyed[0].number), let b = entity(number: keyed[1].number) else { continue }
                let tableRest = Self.numberedPrefix("Z" + table.dropFirst(2), separator: nil)?.1
                func relationshipName(_ raw: String) -> String {
                    if let stripped = Self.strippedSuffix("Z" + raw), String(stripped.dropFirst()) == tableRest { return tableRest!.lowercased() }
                    return raw.lowercased()
                }
                // keyed[0] holds a's keys and is named after b's relationship to a; keyed[1] the reverse.
                let nameOnB = relationshipName(keyed[0].name), nameOnA = relationshipName(keyed[1].name)
                let upperColumns = columns.map { $0.uppercased() }
                var onA = ModelRelationship(name: nameOnA, destination: b.name, inverse: nameOnB, isToMany: true)
                onA.isOrdered = upperColumns.contains("Z_FOK_" + keyed[1].column.uppercased().dropFirst(2))
                var onB = ModelRelationship(name: nameOnB, destination: a.name, inverse: nameOnA, isToMany: true)
                onB.isOrdered = upperColumns.contains("Z_FOK_" + keyed[0].column.uppercased().dropFirst(2))
                entities[a.name]?.relationships.append(onA)
                entities[b.name]?.relationships.append(onB)
            }
        }

        /// `Z<digits><sep><rest>`: the number and the rest, uppercased.
        static func numberedPrefix(_ upper: String, separator: Character?) -> (Int, String)? {
            guard upper.hasPrefix("Z") else { return nil }
            let body = upper.dropFirst()
            let digits = body.prefix { $0.isASCII && $0.isNumber }
            guard !digits.isEmpty, digits.count <= 6, let n = Int(digits) else { return nil }
            var rest = body.dropFirst(digits.count)
            if let separator {
                guard rest.first == separator else { return nil }
                rest = rest.dropFirst()
            }
            guard !rest.isEmpty else { return nil }
            return (n, String(rest))
        }

        /// `ZTITLE12` → `ZTITLE`; nil when there is no digit suffix.
        static func strippedSuffix(_ upper: String) -> String? {
            let digits = upper.reversed().prefix { $0.isASCII && $0.isNumber }
            guard !digits.isEmpty, digits.count < upper.count - 1 else { return nil }
            return String(upper.dropLast(digits.count))
        }
    }
}
