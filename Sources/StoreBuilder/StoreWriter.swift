import Deflate
import Foundation
import SQLiteAccess
import StoreFormats

/// Writes a store in exactly Apple's layout from a `ModelDescription`: the tables, columns,
/// indexes and metadata Core Data would create, rows with correct Z_ENT/Z_OPT/Z_MAX, persistent
/// history with interned strings, and, when asked, transactions left uncheckpointed in the WAL.
///
/// Tests and the demo use it to make stores; it is never pointed at evidence.
public final class StoreWriter {
    public struct Options: Sendable {
        public enum JournalMode: String, Sendable { case wal = "WAL", delete = "DELETE" }
        public var journalMode: JournalMode = .wal
        /// Write `Z_MODELCACHE` (modern stores have it; 2014-era ones do not).
        public var modelCache = true
        /// Create the persistent history tables (SwiftData always does).
        public var historyTracking = true
        public var frameworkVersion = 1345
        public var uuid = UUID()
        public init(journalMode: JournalMode = .wal, modelCache: Bool = true, historyTracking: Bool = true,
                    frameworkVersion: Int = 1345, uuid: UUID = UUID()) {
            self.journalMode = journalMode
            self.modelCache = modelCache
            self.historyTracking = historyTracking
            self.frameworkVersion = frameworkVersion
            self.uuid = uuid
        }
    }

    /// One change a history transaction records.
    public struct Change: Sendable {
        public enum Kind: Int, Sendable { case insert = 0, update = 1, delete = 2 }
        public let kind: Kind
        public let entity: String
        public let pk: Int
        public let updatedProperties: [String]
        /// For deletes: the preserved values, in tombstone order.
        public var tombstone: [DatabaseValue] = []
    }

    public let url: URL
    public let layout: StoreLayout
    public let options: Options
    private var connection: Connection?
    private var zMax: [Int: Int] = [:]
    private var pendingChanges: [Change]?

    public enum BuilderError: Error, CustomStringConvertible {
        case exists(String)
        case unknownEntity(String)
        case unknownProperty(entity: String, property: String)
        case closed
        public var description: String {
            switch self {
            case .exists(let path): return "\(path) already exists; the store builder never overwrites files"
            case .unknownEntity(let name): return "the model has no entity \(name)"
            case .unknownProperty(let entity, let property): return "entity \(entity) has no property \(property)"
            case .closed: return "the store was already closed"
            }
        }
    }

    public static let historyChange = 16001, historyTransaction = 16002, historyString = 16003

    /// Whether this framework version keeps history strings in ATRANSACTIONSTRING (else as text).
    var internsHistoryStrings: Bool { options.frameworkVersion >= StoreLayout.FrameworkVersion.internedHistoryStrings }

    public init(url: URL, model: ModelDescription, options: Options = Options()) throws {
        guard !FileManager.default.fileExists(atPath: url.path) else { throw BuilderError.exists(url.path) }
        self.url = url
        self.options = options
        self.layout = try StoreLayout(model: model, frameworkVersion: options.frameworkVersion)
        let db = try Connection.open(path: url.path, mode: .create)
        connection = db
        // This store is ours, not evidence: its R-tree triggers (as Core Data writes them) may run.
        try db.execute("PRAGMA trusted_schema = ON")
        // Page size and auto_vacuum must be set before the first table exists.
        try db.execute("PRAGMA page_size = 4096")
        try db.execute("PRAGMA auto_vacuum = 2")
        try db.execute("PRAGMA journal_mode = \(options.journalMode.rawValue)")
        try db.execute("PRAGMA wal_autocheckpoint = 0")
        try db.inTransaction {
            for sql in layout.entityDDL { try db.execute(sql) }
            for sql in StoreLayout.metadataDDL { try db.execute(sql) }
            if options.modelCache { try db.execute(StoreLayout.modelCacheDDL) }
            if options.historyTracking {
                for sql in internsHistoryStrings ? StoreLayout.historyDDL : StoreLayout.legacyHistoryDDL { try db.execute(sql) }
                for n in 0..<layout.tombstoneColumnCount { try db.execute("ALTER TABLE ACHANGE ADD COLUMN ZTOMBSTONE\(n) BLOB") }
            }
            for e in layout.entities {
                try db.run("INSERT INTO Z_PRIMARYKEY (Z_ENT, Z_NAME, Z_SUPER, Z_MAX) VALUES (?, ?, ?, 0)",
                           [.integer(Int64(e.number)), .text(e.description.name), .integer(Int64(e.superNumber))])
            }
            if options.historyTracking {
                for (number, name) in [(Self.historyChange, "CHANGE"), (Self.historyTransaction, "TRANSACTION"), (Self.historyString, "TRANSACTIONSTRING")]
                    where number != Self.historyString || internsHistoryStrings {
                    try db.run("INSERT INTO Z_PRIMARYKEY (Z_ENT, Z_NAME, Z_SUPER, Z_MAX) VALUES (?, ?, 0, 0)",
                               [.integer(Int64(number)), .text(name)])
                }
            }
            try db.run("INSERT INTO Z_METADATA (Z_VERSION, Z_UUID, Z_PLIST) VALUES (1, ?, ?)",
                       [.text(options.uuid.uuidString), .blob(metadataPlist())])
            if options.modelCache {
                let archive = try ModelCacheArchive.archive(model, layout: layout)
                try db.run("INSERT INTO Z_MODELCACHE (Z_CONTENT) VALUES (?)", [.blob(try RawDeflate.deflate(archive))])
            }
        }
    }

    // MARK: - Metadata

    /// The Z_METADATA plist. Version hashes are SHA-256 digests of each entity's description made
    /// by this builder (Apple's exact hashing input is not public), so they are stable and
    /// distinct per model, which is what checks compare.
    func metadataPlist() -> Data {
        var hashes: [String: PlistValue] = [:]
        var all = SHA256()
        for e in layout.entities where true {
            let hash = Self.versionHash(e.description)
            hashes[e.description.name] = .data(Data(hash))
            all.update(hash)
        }
        let digest = all.finalize()
        var keys: [String: PlistValue] = [
            "NSStoreType": .string("SQLite"),
            "NSPersistenceFrameworkVersion": .integer(Int64(options.frameworkVersion)),
            "NSStoreModelVersionHashes": .dictionary(hashes),
            "NSStoreModelVersionHashesVersion": .integer(3),
            "NSStoreModelVersionIdentifiers": .array(layout.model.versionIdentifiers.map(PlistValue.string)),
            "_NSAutoVacuumLevel": .string("2"),
        ]
        // Keys later frameworks added, as the real stores show them (RealStoreRebuildTests).
        if options.frameworkVersion >= StoreLayout.FrameworkVersion.hashesDigest {
            keys["NSStoreModelVersionHashesDigest"] = .string(Data(digest + digest).base64EncodedString())
        }
        if options.frameworkVersion >= StoreLayout.FrameworkVersion.modelChecksum {
            keys["NSStoreModelVersionChecksumKey"] = .string(Data(digest).base64EncodedString())
        }
        let plist: PlistValue = .dictionary(keys)
        return BinaryPlistWriter.encode(plist)
    }

    /// The builder's version hash of an entity: its name, parent, abstractness and properties.
    public static func versionHash(_ e: EntityDescription) -> [UInt8] {
        var text = "\(e.name)|\(e.parent ?? "")|\(e.isAbstract)"
        for a in e.attributes.sorted(by: { $0.name < $1.name }) { text += "|a:\(a.name):\(a.type.rawValue):\(a.isOptional)" }
        for r in e.relationships.sorted(by: { $0.name < $1.name }) { text += "|r:\(r.name):\(r.destination):\(r.isToMany):\(r.isOptional)" }
        var hasher = SHA256()
        hasher.update(Data(text.utf8))
        return hasher.finalize()
    }

    // MARK: - Rows

    private func db() throws -> Connection {
        guard let connection else { throw BuilderError.closed }
        return connection
    }

    private func entity(_ name: String) throws -> StoreLayout.Entity {
        guard let e = layout.entity(name) else { throw BuilderError.unknownEntity(name) }
        return e
    }

    /// Inserts a row of `entity` and returns its Z_PK. Keys of `values` are attribute names and
    /// to-one relationship names (`.object(entity:pk:)`). Z_ENT, Z_OPT = 1 and Z_MAX are kept right.
    @discardableResult
    public func insert(_ entityName: String, _ values: [String: BuilderValue] = [:], pk: Int? = nil) throws -> Int {
        let e = try entity(entityName)
        let root = try entity(e.rootName)
        let db = try db()
        let current = try currentZMax(root.number)
        let newPK = pk ?? current + 1
        var columns = ["Z_PK", "Z_ENT", "Z_OPT"]
        var arguments: [DatabaseValue] = [.integer(Int64(newPK)), .integer(Int64(e.number)), .integer(1)]
        for (property, value) in values.sorted(by: { $0.key < $1.key }) {
            for (column, v) in try columnValues(entity: entityName, property: property, value: value) {
                columns.append(column)
                arguments.append(v)
            }
        }
        try db.run("INSERT INTO \(Identifier.quoted(e.table)) (\(columns.map(Identifier.quoted).joined(separator: ", "))) VALUES (\(columns.map { _ in "?" }.joined(separator: ", ")))", arguments)
        if newPK > current { try setZMax(root.number, newPK) }
        pendingChanges?.append(Change(kind: .insert, entity: entityName, pk: newPK, updatedProperties: []))
        return newPK
    }

    /// Updates properties of a row and bumps its Z_OPT, as Core Data's save does.
    public func update(_ entityName: String, pk: Int, _ values: [String: BuilderValue]) throws {
        let e = try entity(entityName)
        var assignments = ["Z_OPT = Z_OPT + 1"]
        var arguments: [DatabaseValue] = []
        for (property, value) in values.sorted(by: { $0.key < $1.key }) {
            for (column, v) in try columnValues(entity: entityName, property: property, value: value) {
                assignments.append("\(Identifier.quoted(column)) = ?")
                arguments.append(v)
            }
        }
        try db().run("UPDATE \(Identifier.quoted(e.table)) SET \(assignments.joined(separator: ", ")) WHERE Z_PK = ?",
                     arguments + [.integer(Int64(pk))])
        pendingChanges?.append(Change(kind: .update, entity: entityName, pk: pk, updatedProperties: values.keys.sorted()))
    }

    public func delete(_ entityName: String, pk: Int) throws {
        let e = try entity(entityName)
        var change = Change(kind: .delete, entity: entityName, pk: pk, updatedProperties: [])
        let preserved = layout.tombstoneOrder(entity: entityName).compactMap { layout.column(entity: entityName, property: $0) }
        if pendingChanges != nil, !preserved.isEmpty {
            let row = try db().rows("SELECT \(preserved.map(Identifier.quoted).joined(separator: ", ")) FROM \(Identifier.quoted(e.table)) WHERE Z_PK = ?",
                                    [.integer(Int64(pk))]).first
            change.tombstone = preserved.indices.map { row?[$0] ?? .null }
        }
        try db().run("DELETE FROM \(Identifier.quoted(e.table)) WHERE Z_PK = ?", [.integer(Int64(pk))])
        pendingChanges?.append(change)
    }

    /// Adds many-to-many links from `pk` of `entityName` through `relationship` to `targets`.
    public func link(_ entityName: String, pk: Int, _ relationship: String, to targets: [Int], order: [Int]? = nil) throws {
        guard let join = layout.joinTables.first(where: {
            ($0.firstEntity == entityName && $0.relationship == relationship) || ($0.secondEntity == entityName && $0.inverse == relationship)
        }) ?? layout.joinTables.first(where: { j in
            // Subentities inherit relationships of their ancestors.
            let lineage = layout.entity(entityName)?.lineage ?? []
            return (lineage.contains(j.firstEntity) && j.relationship == relationship) || (lineage.contains(j.secondEntity) && j.inverse == relationship)
        }) else { throw BuilderError.unknownProperty(entity: entityName, property: relationship) }
        let ownerIsFirst = (layout.entity(entityName)?.lineage ?? []).contains(join.firstEntity) && join.relationship == relationship
        for (i, target) in targets.enumerated() {
            let (first, second) = ownerIsFirst ? (pk, target) : (target, pk)
            var columns = [join.firstColumn, join.secondColumn]
            var args: [DatabaseValue] = [.integer(Int64(first)), .integer(Int64(second))]
            if let orderColumn = join.orderColumn {
                columns.append(orderColumn)
                args.append(.integer(Int64(order?[i] ?? (i + 1) * 1024)))
            }
            try db().run("INSERT INTO \(Identifier.quoted(join.name)) (\(columns.map(Identifier.quoted).joined(separator: ", "))) VALUES (\(columns.map { _ in "?" }.joined(separator: ", ")))", args)
        }
    }

    /// Runs raw SQL against the store being built, for planting damage that the API refuses to make.
    public func executeRaw(_ sql: String, _ arguments: [DatabaseValue] = []) throws {
        try db().run(sql, arguments)
    }

    private func columnValues(entity: String, property: String, value: BuilderValue) throws -> [(String, DatabaseValue)] {
        guard let column = layout.column(entity: entity, property: property) else {
            throw BuilderError.unknownProperty(entity: entity, property: property)
        }
        switch value {
        case .object(let target, let pk):
            var result: [(String, DatabaseValue)] = [(column, .integer(Int64(pk)))]
            if let fek = layout.foreignEntityKeyColumn(entity: entity, relationship: property) {
                result.append((fek, .integer(Int64(try self.entity(target).number))))
            }
            return result
        default:
            return [(column, Self.databaseValue(value))]
        }
    }

    /// How Core Data stores a value in SQLite.
    public static func databaseValue(_ value: BuilderValue) -> DatabaseValue {
        switch value {
        case .null: return .null
        case .int(let i): return .integer(i)
        case .double(let d): return .real(d)
        case .string(let s): return .text(s)
        case .bool(let b): return .integer(b ? 1 : 0)
        case .date(let d): return .real(d.timeIntervalSinceReferenceDate)
        case .data(let d): return .blob(d)
        case .uuid(let u): return .blob(withUnsafeBytes(of: u.uuid) { Data($0) })
        case .object(_, let pk): return .integer(Int64(pk))
        }
    }

    private func currentZMax(_ number: Int) throws -> Int {
        if let cached = zMax[number] { return cached }
        let value = try db().scalar("SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_ENT = ?", [.integer(Int64(number))]).int ?? 0
        zMax[number] = value
        return value
    }

    private func setZMax(_ number: Int, _ value: Int) throws {
        zMax[number] = value
        try db().run("UPDATE Z_PRIMARYKEY SET Z_MAX = ? WHERE Z_ENT = ?", [.integer(Int64(value)), .integer(Int64(number))])
    }

    // MARK: - Transactions and history

    /// Who wrote a transaction, as persistent history records it.
    public struct Writer: Sendable {
        public var author: String?
        public var bundleID: String?
        public var processName: String?
        public var contextName: String?
        public init(author: String? = nil, bundleID: String? = nil, processName: String? = nil, contextName: String? = nil) {
            self.author = author
            self.bundleID = bundleID
            self.processName = processName
            self.contextName = contextName
        }
    }

    /// Runs `body` as one SQLite transaction (one WAL commit). With history tracking on and a
    /// `writer`, the inserts, updates and deletes made in `body` are recorded in ATRANSACTION and
    /// ACHANGE as Core Data records them; with `writer` nil nothing is recorded (to plant
    /// unrecorded writes).
    public func transaction(_ writer: Writer? = Writer(), at timestamp: Date = Date(), _ body: (StoreWriter) throws -> Void) throws {
        let db = try db()
        try db.inTransaction {
            pendingChanges = []
            defer { pendingChanges = nil }
            try body(self)
            if options.historyTracking, let writer, let changes = pendingChanges, !changes.isEmpty {
                try recordHistory(writer: writer, timestamp: timestamp, changes: changes)
            }
        }
    }

    private func recordHistory(writer: Writer, timestamp: Date, changes: [Change]) throws {
        let db = try db()
        func interned(_ s: String?) throws -> DatabaseValue {
            guard let s else { return .null }
            if let pk = try db.scalar("SELECT Z_PK FROM ATRANSACTIONSTRING WHERE ZNAME = ?", [.text(s)]).int64 {
                return .integer(pk)
            }
            let pk = try currentZMax(Self.historyString) + 1
            try db.run("INSERT INTO ATRANSACTIONSTRING (Z_PK, Z_ENT, Z_OPT, ZNAME) VALUES (?, ?, NULL, ?)",
                       [.integer(Int64(pk)), .integer(Int64(Self.historyString)), .text(s)])
            try setZMax(Self.historyString, pk)
            return .integer(Int64(pk))
        }
        let transactionPK = try currentZMax(Self.historyTransaction) + 1
        if internsHistoryStrings {
            try db.run("""
                INSERT INTO ATRANSACTION (Z_PK, Z_ENT, Z_OPT, ZAUTHORTS, ZBUNDLEIDTS, ZCONTEXTNAMETS, ZPROCESSIDTS, ZTIMESTAMP)
                VALUES (?, ?, NULL, ?, ?, ?, ?, ?)
                """, [.integer(Int64(transactionPK)), .integer(Int64(Self.historyTransaction)),
                      try interned(writer.author), try interned(writer.bundleID), try interned(writer.contextName),
                      try interned(writer.processName), .real(timestamp.timeIntervalSinceReferenceDate)])
        } else {
            func text(_ s: String?) -> DatabaseValue { s.map { .text($0) } ?? .null }
            try db.run("""
                INSERT INTO ATRANSACTION (Z_PK, Z_ENT, Z_OPT, ZAUTHOR, ZBUNDLEID, ZCONTEXTNAME, ZPROCESSID, ZTIMESTAMP)
                VALUES (?, ?, NULL, ?, ?, ?, ?, ?)
                """, [.integer(Int64(transactionPK)), .integer(Int64(Self.historyTransaction)),
                      text(writer.author), text(writer.bundleID), text(writer.contextName), text(writer.processName),
                      .real(timestamp.timeIntervalSinceReferenceDate)])
        }
        try setZMax(Self.historyTransaction, transactionPK)
        var changePK = try currentZMax(Self.historyChange)
        for change in changes {
            changePK += 1
            let e = try entity(change.entity)
            let columns: DatabaseValue = change.kind == .update
                ? .blob(Self.updateMask(order: layout.updateBitOrder(entity: change.entity), changed: change.updatedProperties))
                : .null
            try db.run("""
                INSERT INTO ACHANGE (Z_PK, Z_ENT, Z_OPT, ZCHANGETYPE, ZENTITY, ZENTITYPK, ZTRANSACTIONID, ZCOLUMNS)
                VALUES (?, ?, NULL, ?, ?, ?, ?, ?)
                """, [.integer(Int64(changePK)), .integer(Int64(Self.historyChange)), .integer(Int64(change.kind.rawValue)),
                      .integer(Int64(e.number)), .integer(Int64(change.pk)), .integer(Int64(transactionPK)), columns])
        }
        try setZMax(Self.historyChange, changePK)
        for (offset, change) in changes.enumerated() where !change.tombstone.isEmpty {
            let pk = changePK - changes.count + offset + 1
            for (n, value) in change.tombstone.enumerated() {
                try db.run("UPDATE ACHANGE SET ZTOMBSTONE\(n) = ? WHERE Z_PK = ?", [value, .integer(Int64(pk))])
            }
        }
    }

    /// ZCOLUMNS: one bit per property in `order`, most significant bit first, ceil(n/8) bytes.
    public static func updateMask(order: [String], changed: [String]) -> Data {
        var bytes = [UInt8](repeating: 0, count: (order.count + 7) / 8)
        for (i, name) in order.enumerated() where changed.contains(name) {
            bytes[i >> 3] |= UInt8(0x80 >> (i & 7))
        }
        return Data(bytes)
    }

    // MARK: - Finishing

    /// Copies everything committed so far into the main file and empties the WAL, so that later
    /// transactions live only in the WAL.
    public func checkpoint() throws {
        guard options.journalMode == .wal else { return }
        try db().execute("PRAGMA wal_checkpoint(TRUNCATE)")
    }

    /// Closes the store. With `leavingWAL`, transactions since the last checkpoint stay in the
    /// `-wal` (checkpoint-on-close is disabled), as on a device where the app was still running.
    public func close(leavingWAL: Bool = false) throws {
        guard let db = connection else { return }
        if leavingWAL && options.journalMode == .wal {
            try db.disableCheckpointOnClose()
        }
        connection = nil
    }
}
