import Foundation
import SQLiteAccess
import StoreFormats

/// One persistent-history transaction (`ATRANSACTION`) with its changes (`ACHANGE`).
public struct HistoryTransaction: Sendable {
    public let id: Int64
    /// `ZTIMESTAMP` as ISO 8601 UTC.
    public let timestamp: String?
    public let referenceSeconds: Double?
    /// Interned strings resolved through `ATRANSACTIONSTRING` (the VARCHAR twins when those are set instead).
    public let author: String?
    public let bundleID: String?
    public let processName: String?
    public let contextName: String?
    public let changes: [HistoryChange]
}

public struct HistoryChange: Sendable {
    public enum ChangeType: Sendable, Equatable {
        case insert, update, delete
        case unknown(Int64)

        init(_ code: Int64?) {
            switch code {
            case 0: self = .insert
            case 1: self = .update
            case 2: self = .delete
            default: self = .unknown(code ?? -1)
            }
        }

        public var name: String {
            switch self {
            case .insert: return "insert"
            case .update: return "update"
            case .delete: return "delete"
            case .unknown(let code): return "unknown(\(code))"
            }
        }
    }

    public let id: Int64
    public let type: ChangeType
    /// The changed row's entity name (from `Z_PRIMARYKEY`), or `#<Z_ENT>` when unknown.
    public let entity: String
    public let entityNumber: Int?
    public let pk: Int64?
    /// For updates: the properties `ZCOLUMNS` marks, in bit order; nil when it cannot be decoded.
    public let updatedProperties: [String]?
    /// Why `updatedProperties` is nil or incomplete (bitmap length does not fit the model, …).
    public let columnsNote: String?
    /// The raw bitmap, hex.
    public let columnsHex: String?
    /// For deletes: the values kept in `ZTOMBSTONE0…n`, named by the attributes the model marks as
    /// preserved on deletion (`#<n>` when the model names fewer); empty when none were kept.
    public var tombstone: [(name: String, value: DatabaseValue)] = []
    /// The same values decoded by their attribute's type, as `rows` shows them (dates, UUIDs,
    /// transformables); a value the model does not name is shown as stored.
    public var tombstoneValues: [(name: String, value: FieldValue)] = []
}

/// Who wrote changes to one entity, as `history --summary` reports it.
public struct HistoryWriterSummary: Sendable {
    public let bundleID: String?
    public let processName: String?
    public let author: String?
    public let contextName: String?
    public var inserts = 0
    public var updates = 0
    public var deletes = 0
    public var other = 0
    /// Transactions of this writer that changed nothing (listed under `HistoryEntitySummary.noChangesName`).
    public var transactionsWithoutChanges = 0
    /// Seconds since 2001 of the first and last change.
    public var firstSeconds: Double?
    public var lastSeconds: Double?
}

public struct HistoryEntitySummary: Sendable {
    /// The pseudo-entity under which writers whose transactions changed nothing are listed.
    public static let noChangesName = "(no changes)"
    public let entity: String
    public let entityNumber: Int
    public var writers: [HistoryWriterSummary]
}

/// Reads `ATRANSACTION`, `ACHANGE` and `ATRANSACTIONSTRING` with SQL joins and grouping, so
/// neither transactions nor interned strings are ever all held in memory.
public struct HistoryReader {
    public struct Filter: Sendable {
        /// Z_ENT values to keep (an entity and its subentities); nil keeps all.
        public var entityNumbers: [Int]?
        public var author: String?
        public var bundleID: String?
        /// Seconds since 2001-01-01; transactions before it are skipped.
        public var since: Double?
        /// `ATRANSACTION.Z_PK` values to keep (the transactions one WAL commit wrote); nil keeps all.
        /// Keep the list short (it is bound as SQL parameters): a few hundred at most per read.
        public var transactionIDs: [Int64]?
        public init(entityNumbers: [Int]? = nil, author: String? = nil, bundleID: String? = nil, since: Double? = nil,
                    transactionIDs: [Int64]? = nil) {
            self.entityNumbers = entityNumbers
            self.author = author
            self.bundleID = bundleID
            self.since = since
            self.transactionIDs = transactionIDs
        }
    }

    let connection: Connection
    let store: CoreDataStore
    let model: StoreModel?
    let transactionColumns: Set<String>
    let changeColumns: Set<String>
    let hasStrings: Bool
    var bitOrders: [Int: [String]] = [:]
    /// Decodes tombstone values as `rows` decodes the attributes they were kept from.
    public var decoder = ValueDecoder()

    /// - Parameter displayPath: how errors name the store (defaults to the connection's file).
    public init(connection: Connection, store: CoreDataStore, model: StoreModel?, displayPath: String? = nil) throws {
        guard try connection.tableExists("ATRANSACTION"), try connection.tableExists("ACHANGE") else {
            throw ModelError.noHistory(path: displayPath ?? connection.path)
        }
        self.connection = connection
        self.store = store
        self.model = model
        transactionColumns = Set(try connection.columns(of: "ATRANSACTION").map { $0.name.uppercased() })
        changeColumns = Set(try connection.columns(of: "ACHANGE").map { $0.name.uppercased() })
        for (table, columns, required) in [("ATRANSACTION", transactionColumns, "Z_PK"), ("ACHANGE", changeColumns, "ZTRANSACTIONID"),
                                           ("ACHANGE", changeColumns, "Z_PK")] where !columns.contains(required) {
            throw ModelError.damagedTable(table: table, path: displayPath ?? connection.path, detail: "it has no \(required) column")
        }
        hasStrings = try connection.tableExists("ATRANSACTIONSTRING")
            && Set(try connection.columns(of: "ATRANSACTIONSTRING").map { $0.name.uppercased() }).isSuperset(of: ["Z_PK", "ZNAME"])
    }

    /// `COALESCE(interned, twin)` for one writer field, or NULL when the store lacks both.
    func writerExpression(_ field: String, alias: String) -> String {
        let interned = hasStrings && transactionColumns.contains("Z\(field)TS") ? "\(alias).ZNAME" : nil
        let twin = transactionColumns.contains("Z\(field)") ? "t.Z\(field)" : nil
        switch (interned, twin) {
        case (let i?, let t?): return "COALESCE(\(i), \(t))"
        case (let i?, nil): return i
        case (nil, let t?): return t
        default: return "NULL"
        }
    }

    var joins: String {
        guard hasStrings else { return "" }
        return [("AUTHOR", "sa"), ("BUNDLEID", "sb"), ("PROCESSID", "sp"), ("CONTEXTNAME", "sc")]
            .filter { transactionColumns.contains("Z\($0.0)TS") }
            .map { " LEFT JOIN ATRANSACTIONSTRING \($0.1) ON \($0.1).Z_PK = t.Z\($0.0)TS" }.joined()
    }

    func column(_ name: String, _ alias: String, in set: Set<String>) -> String {
        set.contains(name) ? "\(alias).\(name)" : "NULL"
    }

    func whereClause(_ filter: Filter, arguments: inout [DatabaseValue], changeAlias: String?) -> String {
        var parts: [String] = []
        if let since = filter.since, transactionColumns.contains("ZTIMESTAMP") {
            parts.append("t.ZTIMESTAMP >= ?")
            arguments.append(.real(since))
        }
        if let author = filter.author {
            parts.append("\(writerExpression("AUTHOR", alias: "sa")) = ?")
            arguments.append(.text(author))
        }
        if let bundle = filter.bundleID {
            parts.append("\(writerExpression("BUNDLEID", alias: "sb")) = ?")
            arguments.append(.text(bundle))
        }
        if let ids = filter.transactionIDs {
            parts.append("t.Z_PK IN (" + ids.map { _ in "?" }.joined(separator: ", ") + ")")
            arguments += ids.map { .integer($0) }
        }
        if let numbers = filter.entityNumbers {
            let placeholders = numbers.map { _ in "?" }.joined(separator: ", ")
            if let alias = changeAlias {
                parts.append("\(alias).ZENTITY IN (\(placeholders))")
            } else {
                parts.append("EXISTS (SELECT 1 FROM ACHANGE x WHERE x.ZTRANSACTIONID = t.Z_PK AND x.ZENTITY IN (\(placeholders)))")
            }
            arguments += numbers.map { .integer(Int64($0)) }
        }
        return parts.isEmpty ? "" : " WHERE " + parts.joined(separator: " AND ")
    }

    func entityName(_ number: Int?) -> String {
        guard let number else { return "#?" }
        return store.entities.first { $0.number == number }?.name ?? "#\(number)"
    }

    /// `ZTOMBSTONE0…n` in number order (persistent history of stores with preserved attributes).
    var tombstoneColumns: [String] {
        changeColumns.compactMap { c -> (Int, String)? in
            guard c.hasPrefix("ZTOMBSTONE"), let n = Int(c.dropFirst(10)), n >= 0, n < 1000 else { return nil }
            return (n, c)
        }.sorted { $0.0 < $1.0 }.map(\.1)
    }

    /// The attributes of a deleted row's tombstone values, in column order.
    func tombstoneAttributes(entityNumber: Int?) -> [ModelAttribute] {
        guard let number = entityNumber, let model,
              let name = store.entities.first(where: { $0.number == number })?.name else { return [] }
        return model.tombstoneAttributes(entity: name)
    }

    /// Decodes an update's `ZCOLUMNS` bitmap by the entity's per-level bit order (§4.3).
    public mutating func updatedProperties(entityNumber: Int?, bitmap: Data) -> (names: [String]?, note: String?) {
        guard let number = entityNumber, let name = store.entities.first(where: { $0.number == number })?.name else {
            return (nil, "the change names an entity that Z_PRIMARYKEY does not list; ZCOLUMNS not decoded")
        }
        guard let model, model.entity(name) != nil else {
            return (nil, "the model has no entity \(name); ZCOLUMNS not decoded")
        }
        let order: [String]
        if let cached = bitOrders[number] { order = cached } else {
            order = model.updateBitOrder(entity: name)
            bitOrders[number] = order
        }
        let expected = (order.count + 7) / 8
        guard bitmap.count == expected else {
            return (nil, "ZCOLUMNS has \(plural(bitmap.count, "byte")) but the \(model.source.rawValue) model gives \(name) \(order.count) properties (\(plural(expected, "byte"))); the store was written with a different model, so the bits are not decoded")
        }
        var names: [String] = []
        let bytes = [UInt8](bitmap)
        var stray: [Int] = []
        for i in 0..<(bytes.count * 8) where bytes[i >> 3] & UInt8(0x80 >> (i & 7)) != 0 {
            if i < order.count {
                if !names.contains(order[i]) { names.append(order[i]) }
            } else {
                stray.append(i)
            }
        }
        let note = stray.isEmpty ? nil : "bits \(stray.map(String.init).joined(separator: ", ")) are set beyond the model's \(order.count) properties"
        return (names, note)
    }

    /// The columns both streams select: the transaction (0–5), then the change (6–10), then the
    /// tombstone columns (11…).
    func selectedColumns(transactionID: String) -> String {
        """
        \(transactionSelection(transactionID: transactionID)), c.Z_PK, \(column("ZCHANGETYPE", "c", in: changeColumns)), \
        \(column("ZENTITY", "c", in: changeColumns)), \(column("ZENTITYPK", "c", in: changeColumns)), \
        \(column("ZCOLUMNS", "c", in: changeColumns))\(tombstoneColumns.map { ", c." + $0 }.joined())
        """
    }

    /// The transaction's columns (0–5 of `selectedColumns`): its id, time and writer.
    func transactionSelection(transactionID: String) -> String {
        """
        \(transactionID), \(column("ZTIMESTAMP", "t", in: transactionColumns)), \(writerExpression("AUTHOR", alias: "sa")), \
        \(writerExpression("BUNDLEID", alias: "sb")), \(writerExpression("PROCESSID", alias: "sp")), \
        \(writerExpression("CONTEXTNAME", alias: "sc"))
        """
    }

    /// The transaction columns (0–5) of a row of `selectedColumns`, with `changes`.
    func transaction(_ row: Row, changes: [HistoryChange]) -> HistoryTransaction {
        let seconds = row[1].double
        return HistoryTransaction(id: row[0].int64 ?? 0, timestamp: seconds.map { ValueDecoder.iso8601(referenceSeconds: $0) },
                                  referenceSeconds: seconds, author: row[2].string, bundleID: row[3].string,
                                  processName: row[4].string, contextName: row[5].string, changes: changes)
    }

    /// The change columns (6…) of a row of `selectedColumns`; nil when the row has no change.
    mutating func change(_ row: Row) -> HistoryChange? {
        guard let changeID = row[6].int64 else { return nil }
        let type = HistoryChange.ChangeType(row[7].int64)
        let number = row[8].int
        var updated: [String]?
        var note: String?
        var hex: String?
        if let bitmap = row[10].data {
            hex = ValueDecoder.hex(bitmap.prefix(256))
            if type == .update { (updated, note) = updatedProperties(entityNumber: number, bitmap: bitmap) }
        } else if type == .update {
            note = "the update has no ZCOLUMNS bitmap"
        }
        var change = HistoryChange(id: changeID, type: type, entity: entityName(number), entityNumber: number,
                                   pk: row[9].int64, updatedProperties: updated, columnsNote: note, columnsHex: hex)
        if type == .delete { addTombstones(to: &change) { row[11 + $0] } }
        return change
    }

    /// A delete's kept values (`ZTOMBSTONE0…n`, column `i` given by `value`), each by the
    /// attribute the model preserves in that place (`#i` where it names none).
    func addTombstones(to change: inout HistoryChange, _ value: (Int) -> DatabaseValue) {
        guard !tombstoneColumns.isEmpty else { return }
        let attributes = tombstoneAttributes(entityNumber: change.entityNumber)
        for i in tombstoneColumns.indices {
            let value = value(i)
            guard !value.isNull else { continue }
            guard i < attributes.count else {
                change.tombstone.append(("#\(i)", value))
                change.tombstoneValues.append(("#\(i)", ValueDecoder.natural(value)))
                continue
            }
            change.tombstone.append((attributes[i].name, value))
            change.tombstoneValues.append((attributes[i].name, decoder.decode(value, as: attributes[i])))
        }
    }

    /// A delete read from an `ACHANGE` row that is no longer in the table (carved from free
    /// space: history Core Data pruned), by column name: the change with its kept values, in the
    /// transaction its `ZTRANSACTIONID` names (with its writer, when that transaction is still in
    /// `ATRANSACTION`; its number alone when not). Nil when the row is not a delete.
    public mutating func carvedDelete(_ columns: [String: DatabaseValue]) throws -> HistoryTransaction? {
        guard HistoryChange.ChangeType(columns["ZCHANGETYPE"]?.int64) == .delete else { return nil }
        let number = columns["ZENTITY"]?.int
        var change = HistoryChange(id: columns["Z_PK"]?.int64 ?? 0, type: .delete, entity: entityName(number), entityNumber: number,
                                   pk: columns["ZENTITYPK"]?.int64, updatedProperties: nil, columnsNote: nil,
                                   columnsHex: columns["ZCOLUMNS"]?.data.map { ValueDecoder.hex($0.prefix(256)) })
        let names = tombstoneColumns
        addTombstones(to: &change) { columns[names[$0]] ?? .null }
        guard let id = columns["ZTRANSACTIONID"]?.int64 else {
            return HistoryTransaction(id: 0, timestamp: nil, referenceSeconds: nil, author: nil, bundleID: nil, processName: nil,
                                      contextName: nil, changes: [change])
        }
        let sql = "SELECT \(transactionSelection(transactionID: "t.Z_PK")) FROM ATRANSACTION t\(joins) WHERE t.Z_PK = ?"
        if let row = try connection.rows(sql, [.integer(id)]).first { return transaction(row, changes: [change]) }
        return HistoryTransaction(id: id, timestamp: nil, referenceSeconds: nil, author: nil, bundleID: nil, processName: nil,
                                  contextName: nil, changes: [change])
    }

    /// Streams transactions in `Z_PK` order with their (filtered) changes.
    public mutating func forEachTransaction(_ filter: Filter = Filter(), _ body: (HistoryTransaction) throws -> Void) throws {
        var arguments: [DatabaseValue] = []
        var changeJoin = " LEFT JOIN ACHANGE c ON c.ZTRANSACTIONID = t.Z_PK"
        if let numbers = filter.entityNumbers {
            changeJoin += " AND c.ZENTITY IN (" + numbers.map { _ in "?" }.joined(separator: ", ") + ")"
            arguments += numbers.map { .integer(Int64($0)) }
        }
        let sql = "SELECT \(selectedColumns(transactionID: "t.Z_PK")) FROM ATRANSACTION t\(joins)\(changeJoin)"
            + whereClause(filter, arguments: &arguments, changeAlias: nil) + " ORDER BY t.Z_PK, c.Z_PK"
        let statement = try connection.prepare(sql)
        try statement.bind(arguments)
        var current: (row: Row, changes: [HistoryChange])?
        let progress = ProgressReporter.current
        var decoded: Int64 = 0
        var this = self
        func flush() throws {
            guard let (row, changes) = current else { return }
            decoded += 1
            progress.report("decoding history", done: decoded, unit: .items("transactions"))
            try body(this.transaction(row, changes: changes))
            current = nil
        }
        try statement.forEach { row in
            if let open = current, open.row[0] != row[0] { try flush() }
            if current == nil { current = (row, []) }
            if let change = this.change(row) { current!.changes.append(change) }
        }
        try flush()
        self.bitOrders = this.bitOrders
    }

    /// Whether any delete can have kept values (the store's history has `ZTOMBSTONE` columns).
    public var keepsTombstones: Bool { !tombstoneColumns.isEmpty && changeColumns.contains("ZENTITY") && changeColumns.contains("ZENTITYPK") }

    /// Streams the deletes, each as its transaction holding that one change, by entity number,
    /// then `Z_PK`, then change (`recover` merges them with the versions it reads in that order),
    /// or with `byKey` false in change order (no sort). A change whose transaction is missing
    /// keeps its `ZTRANSACTIONID` and no writer.
    ///
    /// - Parameter keptValuesOnly: only deletes that kept at least one value in `ZTOMBSTONE0…n`.
    /// - Parameter entityNumbers: only these `ZENTITY` values (nil: all).
    /// - Parameter pk: only this `ZENTITYPK`.
    public mutating func forEachDeletion(keptValuesOnly: Bool, entityNumbers: [Int]? = nil, pk: Int64? = nil, byKey: Bool = true,
                                         _ body: (HistoryTransaction) throws -> Void) throws {
        guard changeColumns.contains("ZCHANGETYPE"), changeColumns.contains("ZENTITY"), changeColumns.contains("ZENTITYPK") else { return }
        if keptValuesOnly, tombstoneColumns.isEmpty { return }
        var conditions = ["c.ZCHANGETYPE = 2"]
        var arguments: [DatabaseValue] = []
        if keptValuesOnly { conditions.append("(" + tombstoneColumns.map { "c.\($0) IS NOT NULL" }.joined(separator: " OR ") + ")") }
        if let numbers = entityNumbers {
            conditions.append("c.ZENTITY IN (" + numbers.map { _ in "?" }.joined(separator: ", ") + ")")
            arguments += numbers.map { .integer(Int64($0)) }
        }
        if let pk {
            conditions.append("c.ZENTITYPK = ?")
            arguments.append(.integer(pk))
        }
        let sql = "SELECT \(selectedColumns(transactionID: "c.ZTRANSACTIONID")) FROM ACHANGE c LEFT JOIN ATRANSACTION t ON t.Z_PK = c.ZTRANSACTIONID\(joins)"
            + " WHERE " + conditions.joined(separator: " AND ") + (byKey ? " ORDER BY c.ZENTITY, c.ZENTITYPK, c.Z_PK" : " ORDER BY c.Z_PK")
        let statement = try connection.prepare(sql)
        try statement.bind(arguments)
        var this = self
        try statement.forEach { row in
            guard let change = this.change(row) else { return }
            try body(this.transaction(row, changes: [change]))
        }
        self.bitOrders = this.bitOrders
    }

    /// Per entity, writer and kind of change: the changes, and the first and last transaction time.
    func summaryQuery(_ filter: Filter) -> (sql: String, arguments: [DatabaseValue]) {
        var arguments: [DatabaseValue] = []
        // The changes are counted per transaction, entity and kind first, and only those groups
        // (about one per transaction) are joined to their transaction and its writer strings: a
        // million changes joined one by one to five tables cost 2.5 times as much. The sums,
        // minimums and maximums are the same either way, and so are the filters (those on the
        // transaction or its writer hold for all of a group's changes).
        let sql = """
            SELECT g.ZENTITY, \(writerExpression("BUNDLEID", alias: "sb")), \(writerExpression("PROCESSID", alias: "sp")), \
            \(writerExpression("AUTHOR", alias: "sa")), \(writerExpression("CONTEXTNAME", alias: "sc")), \
            g.ZCHANGETYPE, sum(g.changes), \
            min(\(column("ZTIMESTAMP", "t", in: transactionColumns))), max(\(column("ZTIMESTAMP", "t", in: transactionColumns)))
            FROM (SELECT c.ZTRANSACTIONID AS ZTRANSACTIONID, c.ZENTITY AS ZENTITY, \
                  \(column("ZCHANGETYPE", "c", in: changeColumns)) AS ZCHANGETYPE, count(*) AS changes \
                  FROM ACHANGE c GROUP BY 1, 2, 3) g
            LEFT JOIN ATRANSACTION t ON t.Z_PK = g.ZTRANSACTIONID\(joins)
            """ + whereClause(filter, arguments: &arguments, changeAlias: "g") + " GROUP BY 1, 2, 3, 4, 5, 6 ORDER BY 1, 2, 3, 4, 5, 6"
        return (sql, arguments)
    }

    /// Per entity: which writers inserted, updated and deleted it, how often, and when first and last.
    public func summary(_ filter: Filter = Filter()) throws -> [HistoryEntitySummary] {
        let (sql, arguments) = summaryQuery(filter)
        var result: [HistoryEntitySummary] = []
        for row in try connection.rows(sql, arguments) {
            let number = row[0].int ?? -1
            if result.last?.entityNumber != number {
                result.append(HistoryEntitySummary(entity: entityName(number), entityNumber: number, writers: []))
            }
            let key = (row[1].string, row[2].string, row[3].string, row[4].string)
            var writers = result[result.count - 1].writers
            var index = writers.firstIndex { ($0.bundleID, $0.processName, $0.author, $0.contextName) == key }
            if index == nil {
                writers.append(HistoryWriterSummary(bundleID: key.0, processName: key.1, author: key.2, contextName: key.3))
                index = writers.count - 1
            }
            let count = row[6].int ?? 0
            switch HistoryChange.ChangeType(row[5].int64) {
            case .insert: writers[index!].inserts += count
            case .update: writers[index!].updates += count
            case .delete: writers[index!].deletes += count
            case .unknown: writers[index!].other += count
            }
            if let first = row[7].double { writers[index!].firstSeconds = min(writers[index!].firstSeconds ?? first, first) }
            if let last = row[8].double { writers[index!].lastSeconds = max(writers[index!].lastSeconds ?? last, last) }
            result[result.count - 1].writers = writers
        }
        // A writer whose transactions changed nothing is still a writer (Notes 26's
        // IntentsExtension): listed once, without an entity. An entity filter leaves them out.
        guard filter.entityNumbers == nil else { return result }
        var emptyArguments: [DatabaseValue] = []
        let clause = whereClause(filter, arguments: &emptyArguments, changeAlias: nil)
        let emptySQL = """
            SELECT \(writerExpression("BUNDLEID", alias: "sb")), \(writerExpression("PROCESSID", alias: "sp")), \
            \(writerExpression("AUTHOR", alias: "sa")), \(writerExpression("CONTEXTNAME", alias: "sc")), count(*), \
            min(\(column("ZTIMESTAMP", "t", in: transactionColumns))), max(\(column("ZTIMESTAMP", "t", in: transactionColumns)))
            FROM ATRANSACTION t\(joins)
            """ + (clause.isEmpty ? " WHERE " : clause + " AND ")
            + "NOT EXISTS (SELECT 1 FROM ACHANGE x WHERE x.ZTRANSACTIONID = t.Z_PK) GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4"
        var empty: [HistoryWriterSummary] = []
        for row in try connection.rows(emptySQL, emptyArguments) {
            var writer = HistoryWriterSummary(bundleID: row[0].string, processName: row[1].string, author: row[2].string, contextName: row[3].string)
            writer.transactionsWithoutChanges = row[4].int ?? 0
            writer.firstSeconds = row[5].double
            writer.lastSeconds = row[6].double
            empty.append(writer)
        }
        if !empty.isEmpty {
            result.append(HistoryEntitySummary(entity: HistoryEntitySummary.noChangesName, entityNumber: 0, writers: empty))
        }
        return result
    }
}
