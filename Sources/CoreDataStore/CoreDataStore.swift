import Foundation
import SQLiteAccess
import StoreFormats

/// A Core Data or SwiftData store as read from one view (a connection) of it.
public struct CoreDataStore: Sendable {
    public let metadata: StoreMetadata
    /// Every `Z_PRIMARYKEY` row, ordered by `Z_ENT`.
    public let entities: [StoreEntity]
    /// Whether the store has the `Z_MODELCACHE` table, and how many bytes its blob holds.
    public let modelCacheBytes: Int?
    /// Persistent history tables, when present.
    public let history: HistorySummary
    /// Tables of NSPersistentCloudKitContainer's mirroring (`ANSCK…`).
    public let cloudKitTables: [String]

    /// Whether a connection shows a Core Data store: `Z_PRIMARYKEY` and `Z_METADATA` both exist.
    public static func isCoreData(_ connection: Connection) throws -> Bool {
        try connection.tableExists("Z_PRIMARYKEY") && connection.tableExists("Z_METADATA")
    }

    /// Reads the store's structure, or returns nil for a plain SQLite database.
    public static func read(_ connection: Connection) throws -> CoreDataStore? {
        guard try isCoreData(connection) else { return nil }
        let metadata = try StoreMetadata.read(connection)
        let entities = try readEntities(connection)
        var modelCacheBytes: Int?
        if try connection.tableExists("Z_MODELCACHE") {
            modelCacheBytes = try connection.scalar("SELECT length(Z_CONTENT) FROM Z_MODELCACHE LIMIT 1").int ?? 0
        }
        let tables = try connection.tableNames()
        return CoreDataStore(metadata: metadata, entities: entities, modelCacheBytes: modelCacheBytes,
                             history: try HistorySummary.read(connection),
                             cloudKitTables: tables.filter { $0.hasPrefix("ANSCK") })
    }

    public func entity(named name: String) -> StoreEntity? {
        entities.first { $0.name == name }
    }

    /// Counts rows per entity by `Z_ENT`, one grouped query per table (never one per entity).
    public func countRows(_ connection: Connection) throws -> [Int: (count: Int, maxPK: Int?)] {
        var unreadable: [(table: String, reason: String)] = []
        var integerKeyTables = Set<String>()
        return try countRows(connection, unreadable: &unreadable, integerKeyTables: &integerKeyTables)
    }

    /// Counts as above; a table SQLite cannot read here (and that is not damage) is listed in
    /// `unreadable` with SQLite's reason instead of stopping the count of the others.
    /// `integerKeyTables` gets the tables the counting proved to hold no row `textKeyRows` would
    /// report, so that it need not read them again.
    public func countRows(_ connection: Connection, unreadable: inout [(table: String, reason: String)],
                          integerKeyTables: inout Set<String>) throws -> [Int: (count: Int, maxPK: Int?)] {
        var result: [Int: (count: Int, maxPK: Int?)] = [:]
        var done = Set<String>()
        for entity in entities where entity.tableExists && !done.contains(entity.table) {
            done.insert(entity.table)
            switch Result(catching: { () throws(SQLiteError) -> TableCount in try countTable(entity.table, connection) }) {
            case .success(let table):
                result.merge(table.entities) { a, _ in a }
                if table.integerKeysOnly { integerKeyTables.insert(entity.table) }
            case .failure(let error):
                guard !(error.isCorrupt || error.isNotADatabase) else { throw error }
                unreadable.append((entity.table, error.message))
            }
        }
        return result
    }

    /// One table's counts: its rows by `Z_ENT` and its highest integer `Z_PK` for every entity
    /// stored in it, and whether the count proved every `Z_PK` and `Z_ENT` an integer (or NULL).
    struct TableCount {
        var entities: [Int: (count: Int, maxPK: Int?)] = [:]
        var integerKeysOnly = false
    }

    func countTable(_ tableName: String, _ connection: Connection) throws(SQLiteError) -> TableCount {
        var result = TableCount()
        let table = Identifier.quoted(tableName)
        let columnList = try connection.columns(of: tableName)
        let columns = columnList.map(\.name)
        // Integer keys only: a text '9' sorts above 57 and is not a key Core Data can use.
        let maxPK = columns.contains("Z_PK") ? try connection.scalar("SELECT max(Z_PK) FROM \(table) WHERE typeof(Z_PK) = 'integer'").int : nil
        if columns.contains("Z_ENT") {
            // Z_PK as the rowid is an integer in every row; a Z_ENT column of INTEGER affinity
            // stores every number that is a whole int64 as an integer, so a non-integer Z_ENT
            // shows as a group (or a min or max) of its own type: the counting passes below prove
            // "no text keys" for free where Core Data declared the table as it does.
            let entIsInteger = columnList.first { $0.name == "Z_ENT" }?.declaredType.uppercased().contains("INT") == true
            let provable = entIsInteger && (try? keyIsRowid(tableName, columnList, connection)) == true
            if let single = try singleEntity(tableName, connection) {
                if let ent = single.ent { result.entities[ent] = (single.count, maxPK) }
                result.integerKeysOnly = provable
            } else {
                var integersOnly = true
                for row in try connection.rows("SELECT Z_ENT, count(*), typeof(Z_ENT) FROM \(table) GROUP BY Z_ENT") {
                    if let type = row[2].string, type != "integer" && type != "null" { integersOnly = false }
                    guard let ent = row[0].int, let count = row[1].int else { continue }
                    result.entities[ent] = (count, maxPK)
                }
                result.integerKeysOnly = provable && integersOnly
            }
        }
        // Entities of this table with no rows still learn the table's max(Z_PK).
        for member in entities where member.table == tableName && result.entities[member.number] == nil {
            result.entities[member.number] = (0, maxPK)
        }
        return result
    }

    /// Whether `Z_PK` is the table's rowid (Core Data's `INTEGER PRIMARY KEY`), so an integer in every row.
    func keyIsRowid(_ tableName: String, _ columns: [Connection.Column], _ connection: Connection) throws -> Bool {
        guard columns.filter(\.isPrimaryKey).map(\.name) == ["Z_PK"],
              columns.first(where: { $0.name == "Z_PK" })?.declaredType.uppercased() == "INTEGER" else { return false }
        return try connection.rowKey(of: tableName) == ["rowid"]
    }

    /// A table without an index on `Z_ENT` whose rows are all of one entity (history's ACHANGE,
    /// most entity tables): its count from one pass, where `GROUP BY Z_ENT` would sort every row
    /// (on a million history changes, four times as long). Nil when an index makes the grouping
    /// cheap or the table holds several entities: then group. `ent` is nil when no row has one.
    func singleEntity(_ tableName: String, _ connection: Connection) throws(SQLiteError) -> (ent: Int?, count: Int)? {
        let indexed = try connection.scalar("""
            SELECT count(*) FROM pragma_index_list(?1) AS l, pragma_index_info(l.name) AS i WHERE i.seqno = 0 AND i.name = 'Z_ENT'
            """, [.text(tableName)]).int ?? 0
        guard indexed == 0 else { return nil }
        guard let row = try connection.rows("""
            SELECT typeof(min(Z_ENT)), typeof(max(Z_ENT)), min(Z_ENT) = max(Z_ENT), min(Z_ENT), count(Z_ENT) FROM \(Identifier.quoted(tableName))
            """).first else { return nil }
        // Only NULLs: no group GROUP BY would keep.
        if row[0].string == "null" { return (nil, 0) }
        // min = max, both integers: every non-NULL Z_ENT is that one number (text and blobs sort
        // above every number, so max would be one of them), which is what GROUP BY would find.
        guard row[0].string == "integer", row[1].string == "integer", row[2].int == 1,
              let ent = row[3].int, let count = row[4].int else { return nil }
        return (ent, count)
    }

    /// Tables holding rows whose `Z_PK` or `Z_ENT` is not an integer (a table rebuilt by a CSV
    /// import stores them as TEXT): Core Data's `Z_ENT = 1` matches none of them, so the entity
    /// counts leave them out; this says how many there are and how far their keys go.
    /// `provenClean`: tables `countRows` proved to hold none (its `integerKeyTables`), not read again.
    public func textKeyRows(_ connection: Connection, provenClean: Set<String> = []) throws -> [(table: String, rows: Int, maxKey: String?)] {
        var result: [(table: String, rows: Int, maxKey: String?)] = []
        for table in Set(entities.filter(\.tableExists).map(\.table)).sorted() where !provenClean.contains(table) {
            // A table SQLite cannot read here is counted (and named) by countRows, not here.
            guard let read = try? connection.columns(of: table) else { continue }
            let columns = Set(read.map(\.name))
            guard columns.contains("Z_PK"), columns.contains("Z_ENT") else { continue }
            let q = Identifier.quoted(table)
            // Where Z_PK is the rowid (Core Data's `INTEGER PRIMARY KEY`) it is an integer in every
            // row: only Z_ENT is read, from its index when it has one, not from the whole table.
            let keyIsRowid = (try? self.keyIsRowid(table, read, connection)) == true
            let condition = keyIsRowid ? "typeof(Z_ENT) NOT IN ('integer', 'null')"
                                       : "typeof(Z_PK) NOT IN ('integer', 'null') OR typeof(Z_ENT) NOT IN ('integer', 'null')"
            guard let row = try connection.rows("""
                SELECT count(*), max(CAST(Z_PK AS INTEGER)) FROM \(q) WHERE \(condition)
                """).first, let count = row[0].int, count > 0 else { continue }
            result.append((table, count, row[1].int.map(String.init)))
        }
        return result
    }

    static func readEntities(_ connection: Connection) throws -> [StoreEntity] {
        struct Raw { let number: Int; let name: String; let superNumber: Int; let zMax: Int? }
        var raws: [Raw] = []
        for row in try connection.rows("SELECT Z_ENT, Z_NAME, Z_SUPER, Z_MAX FROM Z_PRIMARYKEY ORDER BY Z_ENT") {
            guard let number = row[0].int else { continue }
            let name = row[1].string ?? ""
            raws.append(Raw(number: number, name: name, superNumber: row[2].int ?? 0, zMax: row[3].int))
        }
        let byNumber = Dictionary(raws.map { ($0.number, $0) }, uniquingKeysWith: { first, _ in first })
        let tables = Set(try connection.tableNames())

        func root(of raw: Raw) throws -> Raw {
            var current = raw
            var seen: Set<Int> = [raw.number]
            while current.superNumber != 0, let parent = byNumber[current.superNumber] {
                guard seen.insert(parent.number).inserted else {
                    throw CoreDataStoreError.primaryKeys(path: connection.path,
                                                         detail: "Z_SUPER forms a cycle through entity \(raw.number)")
                }
                current = parent
            }
            return current
        }
        var children: [Int: [Int]] = [:]
        for raw in raws where raw.superNumber != 0 { children[raw.superNumber, default: []].append(raw.number) }
        func subtree(_ number: Int) -> [Int] {
            var result: [Int] = []
            var stack = [number]
            var seen = Set<Int>()
            while let next = stack.popLast() {
                guard seen.insert(next).inserted else { continue }
                result.append(next)
                stack.append(contentsOf: children[next] ?? [])
            }
            return result.sorted()
        }

        return try raws.map { raw in
            let rootRaw = try root(of: raw)
            let kind: StoreEntity.Kind
            if raw.number < 16000 {
                kind = .user
            } else if ["CHANGE", "TRANSACTION", "TRANSACTIONSTRING"].contains(rootRaw.name) {
                kind = .history
            } else if rootRaw.name.hasPrefix("NSCK") {
                kind = .cloudKit
            } else {
                kind = .ancillary
            }
            let table = (kind == .user ? "Z" : "A") + rootRaw.name.uppercased()
            return StoreEntity(number: raw.number, name: raw.name, superNumber: raw.superNumber,
                               parentName: raw.superNumber == 0 ? nil : byNumber[raw.superNumber]?.name,
                               rootName: rootRaw.name, zMax: raw.zMax, kind: kind, table: table,
                               tableExists: tables.contains(table), subtreeNumbers: subtree(raw.number))
        }
    }
}

/// Persistent history in a store: whether its tables exist and how much they hold.
public struct HistorySummary: Equatable, Sendable {
    public let present: Bool
    public let transactions: Int
    public let changes: Int
    /// Interned strings (bundle ids, process names, authors, context names).
    public let strings: Int

    static func read(_ connection: Connection) throws -> HistorySummary {
        let hasChange = try connection.tableExists("ACHANGE")
        let hasTransaction = try connection.tableExists("ATRANSACTION")
        guard hasChange || hasTransaction else { return HistorySummary(present: false, transactions: 0, changes: 0, strings: 0) }
        func count(_ table: String) throws -> Int {
            try connection.tableExists(table) ? connection.scalar("SELECT count(*) FROM \(Identifier.quoted(table))").int ?? 0 : 0
        }
        return HistorySummary(present: true, transactions: try count("ATRANSACTION"),
                              changes: try count("ACHANGE"), strings: try count("ATRANSACTIONSTRING"))
    }
}
