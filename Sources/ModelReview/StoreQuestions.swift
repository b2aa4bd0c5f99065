import CoreDataStore
import Foundation
import SQLiteAccess

/// What the old store's rows say about one change: how many rows it touches and which.
public struct DataAnswer: Sendable {
    public struct Group: Sendable {
        /// The repeated values, rendered short.
        public let values: String
        public let count: Int
        public let keys: [Int]
    }

    /// Rows affected (rows in duplicate groups, for a constraint).
    public var rows: Int
    /// The first primary keys, by Z_PK.
    public var keys: [Int] = []
    /// For a uniqueness constraint: the first groups of repeated values, and how many there are.
    public var groups: [Group] = []
    public var groupCount = 0
    /// For a type change: the first values that cannot be converted.
    public var samples: [String] = []
}

/// Answers `ModelChange.DataQuestion`s with set-based SQL over an old store's working copy.
/// Everything read is the store's: identifiers are quoted, entity numbers are our own integers,
/// values are shortened before they reach a finding.
struct StoreQuestions {
    let opened: OpenedStore
    let limit: Int

    enum Unanswerable: Error, CustomStringConvertible {
        case missing(String)
        var description: String { if case .missing(let s) = self { return s }; return "" }
    }

    func entity(_ name: String) throws -> EntityMapping {
        guard let e = opened.map.entity(named: name), e.tableExists, !e.entityNumbers.isEmpty else {
            throw Unanswerable.missing("the old store has no table for \(name)")
        }
        return e
    }

    func column(_ e: EntityMapping, attribute: String) throws -> String {
        guard let a = e.attributes.first(where: { $0.attribute.name == attribute }), let column = a.column else {
            throw Unanswerable.missing("the old store has no column for \(e.entity.name).\(attribute)")
        }
        return column
    }

    func rowFilter(_ e: EntityMapping) -> String {
        "Z_ENT IN (\(e.entityNumbers.map(String.init).joined(separator: ", ")))"
    }

    /// Count and first keys of the entity's rows matching `condition` (SQL over quoted columns).
    func count(_ e: EntityMapping, where condition: String?) throws -> DataAnswer {
        let table = Identifier.quoted(e.table)
        let filter = rowFilter(e) + (condition.map { " AND (\($0))" } ?? "")
        let total = try opened.connection.scalar("SELECT count(*) FROM \(table) WHERE \(filter)").int ?? 0
        let keys = try opened.connection.rows("SELECT Z_PK FROM \(table) WHERE \(filter) ORDER BY Z_PK LIMIT \(limit)").compactMap { $0[0].int }
        return DataAnswer(rows: total, keys: keys)
    }

    func answer(_ question: ModelChange.DataQuestion) throws -> DataAnswer {
        switch question {
        case .rows(let name):
            return try count(try entity(name), where: nil)
        case .values(let name, let attribute, let keeping):
            let e = try entity(name)
            // Subentities named by the new model: their Z_ENTs in the old store.
            let kept = keeping.compactMap { opened.map.entity(named: $0) }.flatMap(\.entityNumbers)
            let exclusion = kept.isEmpty ? "" : " AND Z_ENT NOT IN (\(kept.map(String.init).joined(separator: ", ")))"
            return try count(e, where: "\(Identifier.quoted(try column(e, attribute: attribute))) IS NOT NULL" + exclusion)
        case .nulls(let name, let attribute):
            let e = try entity(name)
            return try count(e, where: "\(Identifier.quoted(try column(e, attribute: attribute))) IS NULL")
        case .unlinked(let name, let relationship):
            let e = try entity(name)
            guard let r = e.relationship(named: relationship), r.kind == .toOne, let column = r.column else {
                throw Unanswerable.missing("the old store has no column for \(name).\(relationship)")
            }
            return try count(e, where: "\(Identifier.quoted(column)) IS NULL")
        case .linked(let name, let relationship):
            let e = try entity(name)
            guard let r = e.relationship(named: relationship) else { throw Unanswerable.missing("the old model has no \(name).\(relationship)") }
            switch r.kind {
            case .toOne:
                guard let column = r.column else { throw Unanswerable.missing("the old store has no column for \(name).\(relationship)") }
                return try count(e, where: "\(Identifier.quoted(column)) IS NOT NULL")
            case .toMany:
                guard let table = r.foreignTable, let column = r.foreignColumn else { throw Unanswerable.missing("the old store has no column for \(name).\(relationship)") }
                return try count(e, where: "Z_PK IN (SELECT \(Identifier.quoted(column)) FROM \(Identifier.quoted(table)) WHERE \(Identifier.quoted(column)) IS NOT NULL)")
            case .manyToMany:
                guard let table = r.joinTable, let column = r.joinSourceColumn else { throw Unanswerable.missing("the old store has no join table for \(name).\(relationship)") }
                return try count(e, where: "Z_PK IN (SELECT \(Identifier.quoted(column)) FROM \(Identifier.quoted(table)))")
            }
        case .duplicates(let name, let properties):
            return try duplicates(try entity(name), properties: properties)
        case .conversion(let name, let attribute, let type):
            return try conversion(try entity(name), attribute: attribute, to: type)
        }
    }

    /// Groups of rows whose values of `properties` repeat. Rows with a NULL among them are left
    /// out: SQLite's unique index, which Core Data's constraint is, lets NULLs repeat.
    func duplicates(_ e: EntityMapping, properties: [String]) throws -> DataAnswer {
        var columns: [String] = []
        var types: [ModelAttributeType?] = []
        for p in properties {
            if let a = e.attributes.first(where: { $0.attribute.name == p }), let column = a.column {
                columns.append(Identifier.quoted(column))
                types.append(a.attribute.type)
            } else if let r = e.relationship(named: p), r.kind == .toOne, let column = r.column {
                columns.append(Identifier.quoted(column))
                types.append(nil)
            } else {
                throw Unanswerable.missing("the old store has no column for \(e.entity.name).\(p)")
            }
        }
        let table = Identifier.quoted(e.table)
        let filter = ([rowFilter(e)] + columns.map { "\($0) IS NOT NULL" }).joined(separator: " AND ")
        let list = columns.joined(separator: ", ")
        let grouped = "SELECT \(list), count(*) AS n, min(Z_PK) AS first FROM \(table) WHERE \(filter) GROUP BY \(list) HAVING count(*) > 1"
        let totals = try opened.connection.rows("SELECT count(*), coalesce(sum(n), 0) FROM (\(grouped))").first
        var answer = DataAnswer(rows: totals?[1].int ?? 0)
        answer.groupCount = totals?[0].int ?? 0
        let firstGroups = try opened.connection.rows("\(grouped) ORDER BY first LIMIT \(min(limit, 10))")
        var allKeys: [Int] = []
        for row in firstGroups {
            let values = Array(row.values.prefix(columns.count))
            let match = zip(columns, values.indices).map { "\($0.0) = ?\($0.1 + 1)" }.joined(separator: " AND ")
            let keys = try opened.connection.rows("SELECT Z_PK FROM \(table) WHERE \(rowFilter(e)) AND \(match) ORDER BY Z_PK LIMIT \(limit)", values)
                .compactMap { $0[0].int }
            let shown = zip(values, types).map { Self.render($0.0, as: $0.1) }.joined(separator: ", ")
            answer.groups.append(.init(values: shown, count: row[columns.count].int ?? 0, keys: keys))
            allKeys += keys
        }
        answer.keys = Array(allKeys.sorted().prefix(limit))
        return answer
    }

    /// Stored values a custom stage could not turn into `type` as they are: text that is not a
    /// number for a numeric type, numbers out of an integer type's range, bytes that are not text.
    func conversion(_ e: EntityMapping, attribute: String, to type: ModelAttributeType) throws -> DataAnswer {
        let column = Identifier.quoted(try column(e, attribute: attribute))
        let statement = try opened.connection.prepare("SELECT Z_PK, \(column) FROM \(Identifier.quoted(e.table)) WHERE \(rowFilter(e)) AND \(column) IS NOT NULL ORDER BY Z_PK")
        var answer = DataAnswer(rows: 0)
        try statement.forEach { row in
            guard !Self.converts(row[1], to: type) else { return }
            answer.rows += 1
            if answer.keys.count < limit, let pk = row[0].int { answer.keys.append(pk) }
            if answer.samples.count < 5 { answer.samples.append(Self.render(row[1])) }
        }
        return answer
    }

    static func converts(_ value: DatabaseValue, to type: ModelAttributeType) -> Bool {
        func integer(_ v: DatabaseValue) -> Int64? {
            switch v {
            case .integer(let i): return i
            case .real(let d): return d.rounded() == d && abs(d) < 9.2e18 ? Int64(d) : nil
            case .text(let s): return Int64(s.trimmingCharacters(in: .whitespaces))
            default: return nil
            }
        }
        func number(_ v: DatabaseValue) -> Double? {
            switch v {
            case .integer(let i): return Double(i)
            case .real(let d): return d
            case .text(let s): return Double(s.trimmingCharacters(in: .whitespaces))
            default: return nil
            }
        }
        switch type {
        case .integer16: return integer(value).map { $0 >= Int64(Int16.min) && $0 <= Int64(Int16.max) } ?? false
        case .integer32: return integer(value).map { $0 >= Int64(Int32.min) && $0 <= Int64(Int32.max) } ?? false
        case .integer64: return integer(value) != nil
        case .boolean: return integer(value).map { $0 == 0 || $0 == 1 } ?? false
        case .double, .float, .decimal, .date: return number(value) != nil
        case .string:
            if case .blob(let d) = value { return String(data: d, encoding: .utf8) != nil }
            return true
        case .uuid:
            switch value {
            case .blob(let d): return d.count == 16
            case .text(let s): return UUID(uuidString: s) != nil
            default: return false
            }
        case .uri:
            if case .text(let s) = value { return URL(string: s) != nil }
            return false
        case .binary, .transformable: return true
        case .objectID, .composite, .undefined, .unknown: return false
        }
    }

    /// A stored value in a few characters: text quoted and cut, a UUID attribute's 16 bytes as a
    /// UUID, other bytes as a count.
    static func render(_ value: DatabaseValue, as type: ModelAttributeType? = nil) -> String {
        if type == .uuid, case .blob(let d) = value, d.count == 16 {
            return d.withUnsafeBytes { UUID(uuid: $0.load(as: uuid_t.self)) }.uuidString
        }
        switch value {
        case .null: return "NULL"
        case .integer(let i): return String(i)
        case .real(let d): return String(d)
        case .text(let s): return "\"" + (s.count > 60 ? String(s.prefix(60)) + "…" : s) + "\""
        case .blob(let d): return "<\(d.count) bytes>"
        }
    }
}
