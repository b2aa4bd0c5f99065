import Foundation
import SQLiteAccess
import StoreFormats

/// One row of an entity, decoded through the model.
public struct DecodedRow: Sendable {
    /// The row's concrete entity (from `Z_ENT`): a subentity's rows carry the subentity's name.
    public let entity: String
    public let pk: Int64
    /// The properties that apply to the row's entity, in `RowReader.fields` order.
    public let values: [(name: String, value: FieldValue)]
    /// For each value, its position in `RowReader.fields` (names alone can repeat across sibling entities).
    public let fieldIndexes: [Int]
}

/// Streams the rows of one entity (and its subentities) with values decoded by the model:
/// one prepared statement, stepped row by row, so a table of any size is never held in memory.
public struct RowReader {
    /// One output column.
    public struct Field: Sendable {
        public enum Kind: Sendable {
            case attribute(AttributeMapping)
            case toOne(RelationshipMapping)
            /// The owner of this row through a to-many without an inverse (the hidden key
            /// `Z<n><NAME>` in this table), shown as `Owner.relationship`.
            case owner(source: String, RelationshipMapping)
            /// That relationship's order key (`Z_FOK_<n><NAME>`) when it is ordered.
            case ownerOrder(RelationshipMapping)
        }
        public let name: String
        /// The entity that declares the property; it applies to rows of that entity and below.
        public let declaredBy: String
        public let kind: Kind
        /// A unique column label: the name, or `Entity.name` when a sibling entity declared the same name first.
        public let label: String
    }

    /// An equality filter, resolved and typed.
    public struct Filter: Sendable {
        public let field: String
        let sql: String
        let arguments: [DatabaseValue]
    }

    public let map: SchemaMap
    public let entity: EntityMapping
    /// The requested entity's properties (inherited first), then those its subentities add.
    public let fields: [Field]
    public let decoder: ValueDecoder

    public init(map: SchemaMap, entity: EntityMapping, decoder: ValueDecoder) {
        self.map = map
        self.entity = entity
        self.decoder = decoder
        var fields: [Field] = []
        var seen = Set<String>()
        var labels = Set<String>()
        func append(_ name: String, _ owner: String, _ kind: Field.Kind) {
            guard seen.insert("\(owner).\(name)").inserted else { return }
            let label = labels.contains(name) ? "\(owner).\(name)" : name
            labels.insert(label)
            fields.append(Field(name: name, declaredBy: owner, kind: kind, label: label))
        }
        func add(_ mapping: EntityMapping, only owner: String?) {
            for a in mapping.attributes where owner == nil || a.declaredBy == owner {
                append(a.attribute.name, a.declaredBy, .attribute(a))
            }
            for r in mapping.relationships where r.kind == .toOne && (owner == nil || r.declaredBy == owner) {
                append(r.relationship.name, r.declaredBy, .toOne(r))
            }
        }
        add(entity, only: nil)
        for descendant in map.model.subtree(of: entity.entity.name).dropFirst() {
            if let mapping = map.entity(named: descendant.name) { add(mapping, only: descendant.name) }
        }
        // To-many relationships without an inverse keep the owner (and the order) in this table
        // (MeWe's Poll.options: Z29OPTIONS + Z_FOK_29OPTIONS in ZPOLLOPTION).
        let related = Set(entity.lineage + map.model.subtree(of: entity.entity.name).map(\.name))
        for source in map.entities {
            for r in source.relationships where r.kind == .toMany && r.relationship.inverse == nil
                && r.declaredBy == source.entity.name && r.foreignTable == entity.table && r.foreignColumn != nil
                && related.contains(r.relationship.destination) {
                let label = "\(source.entity.name).\(r.relationship.name)"
                guard labels.insert(label).inserted else { continue }
                fields.append(Field(name: label, declaredBy: r.relationship.destination, kind: .owner(source: source.entity.name, r), label: label))
                if r.orderColumn != nil {
                    fields.append(Field(name: label + " order", declaredBy: r.relationship.destination, kind: .ownerOrder(r), label: label + " order"))
                }
            }
        }
        self.fields = fields
    }

    /// Resolves `ATTR=VALUE` against the entity's attributes and to-one relationships (current or
    /// legacy names) and types the value by the attribute's type; it is bound, never spliced into SQL.
    ///
    /// Values: integers and doubles as numbers; Booleans as true/false/yes/no/1/0; dates as ISO 8601
    /// (a date alone matches that whole UTC day, a time without fractions that whole second); UUIDs
    /// canonically; to-one relationships as `pk` or `Entity#pk`; `null` (for non-text properties)
    /// matches NULL.
    public func filter(_ expression: String) throws -> Filter {
        guard let eq = expression.firstIndex(of: "=") else {
            throw ModelError.invalidFilter("--where needs ATTRIBUTE=VALUE, got '\(expression)'.")
        }
        let name = String(expression[..<eq]).trimmingCharacters(in: .whitespaces)
        let text = String(expression[expression.index(after: eq)...])
        let field = fields.first { $0.name == name } ?? fields.first { $0.label == name }
            ?? fields.first { f in
                if case .attribute(let a) = f.kind { return a.attribute.legacyName == name }
                if case .toOne(let r) = f.kind { return r.relationship.legacyName == name }
                return false
            }
            ?? fields.first { $0.name.lowercased() == name.lowercased() }
        guard let field else {
            let names = fields.map(\.name)
            let suggestion = EditDistance.closest(to: name, in: names) { $0.lowercased() }
            throw ModelError.unknownProperty(entity: entity.entity.name, property: name, suggestion: suggestion)
        }
        func bad(_ expected: String) -> ModelError {
            .invalidFilter("--where \(name): '\(text)' is not \(expected).")
        }
        switch field.kind {
        case .owner, .ownerOrder:
            throw ModelError.invalidFilter("--where \(name): filtering by the owner of a to-many without inverse is not supported; filter on an attribute.")
        case .toOne(let r):
            guard let column = r.column else { throw ModelError.invalidFilter("--where \(name): the relationship has no column in this store.") }
            let q = Identifier.quoted(column)
            if text == "null" { return Filter(field: field.name, sql: "\(q) IS NULL", arguments: []) }
            var pkText = Substring(text)
            var targetNumbers: [Int]?
            if let hash = text.lastIndex(of: "#") {
                let entityName = String(text[..<hash])
                guard let target = map.resolveEntity(entityName) else { throw bad("Entity#pk with a known entity") }
                targetNumbers = target.entityNumbers
                pkText = text[text.index(after: hash)...]
            }
            guard let pk = Int64(pkText) else { throw bad("a primary key (pk or Entity#pk)") }
            if let numbers = targetNumbers, let fek = r.entityKeyColumn {
                let placeholders = numbers.map { _ in "?" }.joined(separator: ", ")
                return Filter(field: field.name, sql: "\(q) = ? AND \(Identifier.quoted(fek)) IN (\(placeholders))",
                              arguments: [.integer(pk)] + numbers.map { .integer(Int64($0)) })
            }
            return Filter(field: field.name, sql: "\(q) = ?", arguments: [.integer(pk)])
        case .attribute(let a):
            guard let column = a.column else {
                throw ModelError.invalidFilter("--where \(name): the attribute has no single column in this store (composite or unmapped).")
            }
            let q = Identifier.quoted(column)
            let type = a.attribute.type
            if text == "null" && type != .string && type != .uri {
                return Filter(field: field.name, sql: "\(q) IS NULL", arguments: [])
            }
            switch type {
            case .string, .uri, .undefined, .unknown:
                return Filter(field: field.name, sql: "\(q) = ?", arguments: [.text(text)])
            case .integer16, .integer32, .integer64:
                guard let i = Int64(text) else { throw bad("an integer") }
                return Filter(field: field.name, sql: "\(q) = ?", arguments: [.integer(i)])
            case .boolean:
                switch text.lowercased() {
                case "true", "yes", "1": return Filter(field: field.name, sql: "\(q) = ?", arguments: [.integer(1)])
                case "false", "no", "0": return Filter(field: field.name, sql: "\(q) = ?", arguments: [.integer(0)])
                default: throw bad("a Boolean (true or false)")
                }
            case .double, .float, .decimal:
                guard let d = Double(text) else { throw bad("a number") }
                return Filter(field: field.name, sql: "\(q) = ?", arguments: [.real(d)])
            case .date:
                guard let seconds = ValueDecoder.parseDate(text) else { throw bad("an ISO 8601 date") }
                let width: Double = !text.contains("T") ? 86_400 : (text.contains(".") ? 0 : 1)
                if width == 0 { return Filter(field: field.name, sql: "\(q) = ?", arguments: [.real(seconds)]) }
                return Filter(field: field.name, sql: "\(q) >= ? AND \(q) < ?", arguments: [.real(seconds), .real(seconds + width)])
            case .uuid:
                guard let uuid = UUID(uuidString: text) else { throw bad("a UUID") }
                let bytes = withUnsafeBytes(of: uuid.uuid) { Data($0) }
                return Filter(field: field.name, sql: "\(q) = ?", arguments: [.blob(bytes)])
            case .binary, .transformable, .objectID, .composite:
                throw ModelError.invalidFilter("--where \(name): \(type.name) attributes cannot be compared.")
            }
        }
    }

    /// The columns the rows' statement selects (`Z_PK`, `Z_ENT`, then each field's, unquoted), and
    /// for each field the positions of its columns in the result (-1: no column in this store).
    func selection() -> (columns: [String], positions: [[Int]]) {
        var select = ["Z_PK", "Z_ENT"]
        var positions: [[Int]] = []
        for field in fields {
            var indexes: [Int] = []
            for column in Self.columns(of: field) {
                guard let column else { indexes.append(-1); continue }
                indexes.append(select.count)
                select.append(column)
            }
            positions.append(indexes)
        }
        return (select, positions)
    }

    /// The statement that selects the rows (nil when the entity has no `Z_ENT` values), and for
    /// each field the positions of its columns in the result (-1: no column in this store).
    /// `after`: only rows whose `Z_PK` is greater (a scan resumed past a long value).
    func prepare(_ connection: Connection, filters: [Filter], limit: Int?, byKey: Bool = false,
                 after: Int64? = nil) throws -> (Statement, [[Int]])? {
        guard entity.tableExists else {
            throw ModelError.missingTable(entity: entity.entity.name, table: entity.table, path: map.path)
        }
        guard !entity.entityNumbers.isEmpty else { return nil }
        let present = Set(try connection.columns(of: entity.table).map { $0.name.uppercased() })
        for required in ["Z_PK", "Z_ENT"] where !present.contains(required) {
            throw ModelError.damagedTable(table: entity.table, path: map.path, detail: "it has no \(required) column")
        }
        let (select, positions) = selection()
        var (sql, arguments) = selecting(select.enumerated().map { $0 < 2 ? $1 : Identifier.quoted($1) }.joined(separator: ", "),
                                         filters: filters, byKey: byKey, after: after)
        sql += " ORDER BY Z_PK"
        if let limit {
            sql += " LIMIT ?"
            arguments.append(.integer(Int64(max(0, limit))))
        }
        let statement = try connection.prepare(sql)
        try statement.bind(arguments)
        return (statement, positions)
    }

    /// `SELECT columns FROM` the entity's table `WHERE` its rows pass `filters` (and follow
    /// `after`), with the arguments to bind.
    func selecting(_ columns: String, filters: [Filter], byKey: Bool, after: Int64?) -> (String, [DatabaseValue]) {
        var sql = "SELECT \(columns) FROM \(Identifier.quoted(entity.table)) WHERE \(byKey ? "+" : "")Z_ENT IN ("
            + entity.entityNumbers.map { _ in "?" }.joined(separator: ", ") + ")"
        var arguments: [DatabaseValue] = entity.entityNumbers.map { .integer(Int64($0)) }
        for f in filters {
            sql += " AND (\(f.sql))"
            arguments += f.arguments
        }
        if let after {
            sql += " AND Z_PK > ?"
            arguments.append(.integer(after))
        }
        return (sql, arguments)
    }

    /// Steps through the rows, by primary key, calling `body` for each. `limit` nil means all.
    public func forEach(_ connection: Connection, filters: [Filter] = [], limit: Int? = nil,
                        _ body: (DecodedRow) throws -> Void) throws {
        try forEach(connection, filters: filters, limit: limit, byKey: false, body)
    }

    /// `byKey`: the rows are found by walking the keys, never through the `Z_ENT` index.
    func forEach(_ connection: Connection, filters: [Filter] = [], limit: Int? = nil, byKey: Bool,
                 _ body: (DecodedRow) throws -> Void) throws {
        let positionsOfFields = selection().positions
        // Which fields apply to each concrete entity: those declared along its lineage.
        var applicable: [Int: [Bool]] = [:]
        var names: [Int: String] = [:]
        func decoded(_ row: Row, longs: [Int: FieldValue]) throws {
            guard let pk = row[0].int64 else { return }
            let ent = row[1].int ?? -1
            if applicable[ent] == nil {
                let concrete = map.entity(number: ent)
                let lineage = Set(concrete?.lineage ?? self.entity.lineage)
                applicable[ent] = fields.map { lineage.contains($0.declaredBy) }
                names[ent] = concrete?.entity.name ?? "#\(ent)"
            }
            let applies = applicable[ent] ?? []
            var values: [(name: String, value: FieldValue)] = []
            var indexes: [Int] = []
            values.reserveCapacity(fields.count)
            for (i, field) in fields.enumerated() where applies[i] {
                values.append((field.name, decode(field, row: row, at: positionsOfFields[i], longs: longs)))
                indexes.append(i)
            }
            try body(DecodedRow(entity: names[ent] ?? "#\(ent)", pk: pk, values: values, fieldIndexes: indexes))
        }
        try stepRows(connection, filters: filters, limit: limit, byKey: byKey) { statement, counted in
            try statement.forEach { row in
                counted(row[0].int64)
                try decoded(row, longs: [:])
            }
        } longRow: { row, longs in
            try decoded(row, longs: longs)
        }
    }

    /// The columns a field's value is read from, in decoding order (nil: a part with no column
    /// in this store). A to-one has its key and, when the destination has subentities, its entity key.
    public static func columns(of field: Field) -> [String?] {
        switch field.kind {
        case .attribute(let a):
            return a.elements.isEmpty ? [a.column] : leaves(a).map(\.column)
        case .toOne(let r):
            return [r.column, r.entityKeyColumn]
        case .owner(_, let r):
            return [r.foreignColumn]
        case .ownerOrder(let r):
            return [r.orderColumn]
        }
    }

    /// Steps through the rows whose `Z_PK` is one of `primaryKeys`, in key order, asking for them
    /// a bounded number of keys at a time (so any number of keys fits SQLite's variable limit).
    public func forEach(_ connection: Connection, primaryKeys: [Int64], _ body: (DecodedRow) throws -> Void) throws {
        let sorted = Array(Set(primaryKeys)).sorted()
        let chunk = 500
        for start in stride(from: 0, to: sorted.count, by: chunk) {
            let part = sorted[start ..< min(start + chunk, sorted.count)]
            if let first = part.first, let last = part.last, last - first == Int64(part.count - 1) {
                // A run of consecutive keys: the same rows as the list, without parsing 500 parameters,
                // walked by key (`+Z_ENT`: through the Z_ENT index SQLite would sort them).
                let filter = Filter(field: "Z_PK", sql: "Z_PK BETWEEN ? AND ?", arguments: [.integer(first), .integer(last)])
                try forEach(connection, filters: [filter], byKey: true, body)
                continue
            }
            let filter = Filter(field: "Z_PK", sql: "Z_PK IN (" + part.map { _ in "?" }.joined(separator: ", ") + ")",
                                arguments: part.map { .integer($0) })
            try forEach(connection, filters: [filter], body)
        }
    }

    /// One field's values read alone: made once (`RowReader.values(of:_:)`), then asked for any
    /// number of key ranges through the same prepared statement.
    public final class FieldScan {
        let reader: RowReader
        let field: Field
        /// The field's position in `reader.fields`.
        let index: Int
        let connection: Connection
        let statement: Statement
        let positions: [Int]
        let entityCount: Int
        var applies: [Int: Bool] = [:]

        init(reader: RowReader, index: Int, connection: Connection, statement: Statement, positions: [Int]) {
            self.reader = reader
            self.field = reader.fields[index]
            self.index = index
            self.connection = connection
            self.statement = statement
            self.positions = positions
            entityCount = reader.entity.entityNumbers.count
        }

        /// The field's value for each row whose `Z_PK` is in `keys`, in key order: the value
        /// `forEach` gives that field, or nil for a row whose entity the field does not apply to.
        public func forEach(keys: ClosedRange<Int64>, _ body: (Int64, FieldValue?) throws -> Void) throws {
            try statement.bind(reader.entity.entityNumbers.map { .integer(Int64($0)) } + [.integer(keys.lowerBound), .integer(keys.upperBound)])
            var last: Int64?
            do {
                // As `forEach`: no value over `LongValue.window` is read whole.
                try connection.withLengthLimit(LongValue.window) {
                    try statement.forEach { row in
                        guard let pk = row[0].int64 else { return }
                        last = pk
                        let ent = row[1].int ?? -1
                        if applies[ent] == nil {
                            applies[ent] = Set(reader.map.entity(number: ent)?.lineage ?? reader.entity.lineage).contains(field.declaredBy)
                        }
                        try body(pk, applies[ent] == true ? reader.decode(field, row: row, at: positions) : nil)
                    }
                }
            } catch let error as SQLiteError where error.isTooBig {
                // A long value in the range: the rest of it read as `forEach` reads it.
                guard last.map({ $0 < keys.upperBound }) ?? true else { return }
                let from = last.map { $0 + 1 } ?? keys.lowerBound
                let range = Filter(field: "Z_PK", sql: "Z_PK BETWEEN ? AND ?", arguments: [.integer(from), .integer(keys.upperBound)])
                try reader.forEach(connection, filters: [range], byKey: true) { row in
                    try body(row.pk, row.fieldIndexes.firstIndex(of: index).map { row.values[$0].value })
                }
            }
        }
    }

    /// A scan of one field's values (an index into `fields`), without reading or decoding the
    /// other fields' columns; nil when the entity has no `Z_ENT` values. Throws where `forEach`
    /// would (the statement of every field is prepared first), so a caller never sees one field
    /// of rows `forEach` cannot read.
    public func values(of index: Int, _ connection: Connection) throws -> FieldScan? {
        guard fields.indices.contains(index), try prepare(connection, filters: [], limit: 0) != nil else { return nil }
        let field = fields[index]
        var select = ["Z_PK", "Z_ENT"]
        var positions: [Int] = []
        for column in Self.columns(of: field) {
            guard let column else { positions.append(-1); continue }
            positions.append(select.count)
            select.append(Identifier.quoted(column))
        }
        // `+Z_ENT`: walk the key range itself (through the Z_ENT index SQLite would sort the rows).
        let statement = try connection.prepare("SELECT \(select.joined(separator: ", ")) FROM \(Identifier.quoted(entity.table)) WHERE +Z_ENT IN ("
            + entity.entityNumbers.map { _ in "?" }.joined(separator: ", ") + ") AND Z_PK BETWEEN ? AND ? ORDER BY Z_PK")
        return FieldScan(reader: self, index: index, connection: connection, statement: statement, positions: positions)
    }

    /// The element mappings of a composite attribute, flattened in order.
    static func leaves(_ a: AttributeMapping) -> [AttributeMapping] {
        a.elements.isEmpty ? [a] : a.elements.flatMap(leaves)
    }

    /// - Parameter longs: values of this row left in the store because they are long, by position.
    func decode(_ field: Field, row: Row, at positions: [Int], longs: [Int: FieldValue] = [:]) -> FieldValue {
        switch field.kind {
        case .attribute(let a):
            if a.elements.isEmpty {
                guard let p = positions.first, p >= 0 else { return .null }
                return longs[p] ?? decoder.decode(row[p], as: a.attribute)
            }
            var cursor = 0
            func composite(_ m: AttributeMapping) -> FieldValue {
                if m.elements.isEmpty {
                    defer { cursor += 1 }
                    guard cursor < positions.count, positions[cursor] >= 0 else { return .null }
                    return longs[positions[cursor]] ?? decoder.decode(row[positions[cursor]], as: m.attribute)
                }
                let elements = m.elements.map { FieldValue.CompositeElement(name: $0.attribute.name, value: composite($0)) }
                if elements.allSatisfy({ if case .null = $0.value { return true } else { return false } }) { return .null }
                return .composite(elements)
            }
            return composite(a)
        case .toOne(let r):
            guard let p = positions.first, p >= 0, let pk = row[p].int64 else { return .null }
            var destination = r.relationship.destination
            if positions.count > 1, positions[1] >= 0, let ent = row[positions[1]].int, let concrete = map.entity(number: ent) {
                destination = concrete.entity.name
            }
            return .object(entity: destination.isEmpty ? "?" : destination, pk: pk)
        case .owner(let source, _):
            guard let p = positions.first, p >= 0, let pk = row[p].int64 else { return .null }
            return .object(entity: source, pk: pk)
        case .ownerOrder:
            guard let p = positions.first, p >= 0, let order = row[p].int64 else { return .null }
            return .integer(order)
        }
    }
}
