import Acquisition
import CoreDataStore
import Foundation
import SQLiteAccess
import StoreBuilder
import StoreTestSupport
import Testing

/// The builder held against every genuine Core Data store whose model cache the project decodes:
/// the decoded model goes into `StoreWriter`, and the empty store it writes must have the real
/// store's schema (sqlite_master: tables with their columns and types in order, indexes,
/// triggers), Z_PRIMARYKEY (Z_ENT, Z_NAME, Z_SUPER) and metadata plist keys. What the builder
/// legitimately cannot reproduce is listed below with the reason; everything else must match.
@Suite("Store builder fidelity: every decodable genuine store rebuilt from its own model")
struct RealStoreRebuildTests {
    static let absent = ProjectPaths.realFixturesAbsent
    static let folders = ProjectPaths.realFixtureFolders()
    static func storeFile(in folder: URL) throws -> URL? { try ProjectPaths.realStoreFile(in: folder) }

    /// SQL text with whitespace normalised: runs collapsed, none next to parentheses and commas;
    /// double quotes dropped (SQLite's ALTER TABLE … RENAME quotes the names it rewrites).
    static func normalised(_ sql: String?) -> String {
        guard let sql else { return "-" }
        var s = sql.replacingOccurrences(of: "\"", with: "").split(whereSeparator: \.isWhitespace).joined(separator: " ")
        for p in ["(", ")", ","] {
            s = s.replacingOccurrences(of: " " + p, with: p).replacingOccurrences(of: p + " ", with: p)
        }
        return s
    }

    struct Object: Equatable, Sendable { let type: String; let table: String; let sql: String }

    struct Shape: Sendable {
        var objects: [String: Object] = [:]
        /// "Z_ENT Z_NAME Z_SUPER", in Z_ENT order.
        var primaryKeys: [String] = []
        var plistKeys: Set<String> = []
        /// Each table's column names, as SQLite lists them.
        var columns: [String: [String]] = [:]
    }

    static func shape(_ db: Connection) throws -> Shape {
        var s = Shape()
        for o in try db.schemaObjects() {
            s.objects[o.name] = Object(type: o.type, table: o.tableName, sql: normalised(o.sql))
            if o.type == "table" { s.columns[o.name] = try db.columns(of: o.name).map(\.name) }
        }
        s.primaryKeys = try db.rows("SELECT Z_ENT, Z_NAME, Z_SUPER FROM Z_PRIMARYKEY ORDER BY Z_ENT")
            .map { "\($0[0].int ?? -1) \($0[1].string ?? "") \($0[2].int ?? -1)" }
        if case .blob(let data) = try db.scalar("SELECT Z_PLIST FROM Z_METADATA") {
            // Foundation's own property-list reader, not the project's.
            s.plistKeys = Set(((try PropertyListSerialization.propertyList(from: data, format: nil)) as? [String: Any])?.keys.map { $0 } ?? [])
        }
        return s
    }

    /// One difference between the real store and the rebuilt one.
    struct Difference: CustomStringConvertible {
        let name: String
        let real: Object?
        let built: Object?
        var description: String {
            func show(_ o: Object?) -> String { o.map { "\($0.type) on \($0.table): \($0.sql)" } ?? "(none)" }
            return "\(name)\n    real:  \(show(real))\n    built: \(show(built))"
        }
    }

    /// What the builder cannot reproduce, and why: each rule names a kind of difference, decided
    /// from the two stores and the decoded model, never from a list of expected numbers. "open"
    /// marks what is a gap of this project (reader or builder) rather than something no model
    /// could tell; every other difference fails the test.
    struct Known: Sendable {
        let reason: String
        let open: Bool
        let applies: @Sendable (Difference, Context) -> Bool
    }

    struct Context {
        let folder: String
        let real: Shape
        let built: Shape
        let model: StoreModel
        /// Index names `Z_<Entity>_<name>` of fetch indexes whose elements the reader could not name
        /// (NSExpression elements; Photos writes Z_ENT there).
        var expressionIndexes: Set<String> {
            Set(model.entities.flatMap { e in e.fetchIndexes.filter { $0.elements.contains { $0.property.hasPrefix("expression") } }.map { "Z_\(e.name)_\($0.name)" } })
        }
        /// `Z_<Entity>_<attribute>`: the index Core Data makes for an attribute flagged as indexed.
        var attributeIndexNames: Set<String> {
            Set(model.entities.flatMap { e in e.attributes.map { "Z_\(e.name)_\($0.name)" } })
        }
        /// Join tables of ordered many-to-many pairs (an order column), in either store.
        var orderedJoinTables: Set<String> {
            Set((real.objects.merging(built.objects) { a, _ in a }).filter { $0.value.type == "table" && $0.key.hasPrefix("Z_") && $0.value.sql.contains("Z_FOK_") && $0.value.sql.contains("PRIMARY KEY(") }.map(\.key))
        }
    }

    static let known: [Known] = [
        Known(reason: "the app's own SQL, not the model's: Photos' ZT_ count triggers and RADAR_ indexes", open: false) { d, _ in
            d.built == nil && (d.name.hasPrefix("ZT_") || d.name.hasPrefix("RADAR_"))
        },
        Known(reason: "an index named after a table or column of an earlier model version: migrations renumbered entities and renamed tables, the index kept its name (or the builder's correctly named copy of one)", open: false) { d, c in
            guard let o = d.real ?? d.built, o.type == "index", d.name.hasSuffix("_INDEX") else { return false }
            let shape = d.real != nil ? c.real : c.built, other = d.real != nil ? c.built : c.real
            let named = (shape.columns[o.table] ?? []).contains { d.name == "\(o.table)_\($0)_INDEX" }
            // The same definition under another name on the other side.
            let definition = o.sql.components(separatedBy: " ON ").last
            let twin = other.objects.contains { $0.key != d.name && $0.value.type == "index" && $0.value.sql.components(separatedBy: " ON ").last == definition }
            return (d.real != nil && d.built == nil && !named) || twin
        },
        Known(reason: "a fetch index whose element is an NSExpression the model reader does not decode (Photos' store shows Z_ENT there)", open: true) { d, c in
            c.expressionIndexes.contains(d.name)
        },
        Known(reason: "a partial fetch index: its predicate (WHERE …) is an NSPredicate in the cache that the model reader does not decode", open: true) { d, _ in
            guard let r = d.real?.sql, let b = d.built?.sql, r.contains(")WHERE") else { return false }
            return r.hasPrefix(String(b.dropLast())) || r.components(separatedBy: ")WHERE").first.map { $0 + ")" } == b
        },
        Known(reason: "an index Z_<Entity>_<attribute> on one attribute that the decoded model lists as no fetch index (most likely the attribute's indexed flag, which the model reader does not decode)", open: true) { d, c in
            d.built == nil && d.real?.type == "index" && c.attributeIndexNames.contains(d.name)
        },
        Known(reason: "an ordered many-to-many: which side owns the join table is not yet known for ordered pairs (4 of 6 real ones follow the builder's rule; Photos' AlbumList.albums does not)", open: true) { d, c in
            guard let o = d.real ?? d.built else { return false }
            return c.orderedJoinTables.contains(o.table)
        },
        Known(reason: "metadata keys the app or an ancillary model set (Photos' PL… keys, Screen Time's STUnique, knowledgeC's ancillary hashes), not derived from the model", open: false) { d, _ in
            d.name.hasPrefix("plist ") && d.built == nil
        },
        Known(reason: "knowledgeC's Event.compoundIndex: compound indexes in the pre-2017 form (NSCompoundIndexes) are not decoded by the model reader", open: true) { d, c in
            c.folder == "knowledgec-tombstones" && d.name == "Z_Event_compoundIndex" && d.built == nil
        },
        Known(reason: "a table rebuilt outside Core Data (a CSV import, as the fixtures README says): untyped columns in the import's order", open: false) { d, c in
            c.folder == "coredata-2017-text-keys" && d.name == "ZLPARENTITY"
        },
        Known(reason: "several hidden keys from one source entity (ChatMessageParticipationEvent's added/removed): their order follows the archived model's property order, which the decoded model (properties by name) does not keep", open: true) { d, c in
            c.folder == "ios17-ordered-no-inverse" && d.name == "ZCHATMESSAGEPARTICIPATIONEVENT"
                && Set(c.real.columns[d.name] ?? []) == Set(c.built.columns[d.name] ?? [])
        },
        Known(reason: "which of two join tables with the same column name gets the digit suffix follows the order the tables were first created, i.e. the store's history (Photos 10.15: the Suggestions table; 15.7.1, migrated: the Memories table)", open: false) { d, _ in
            guard let r = d.real?.sql, let b = d.built?.sql, r != b else { return false }
            let digits = try! NSRegularExpression(pattern: "(Z_\\d+[A-Z]+)1\\b")
            func plain(_ s: String) -> String { digits.stringByReplacingMatches(in: s, range: NSRange(s.startIndex..., in: s), withTemplate: "$1") }
            return plain(r) == plain(b)
        },
        Known(reason: "Photos 15.7.1 (framework 1448) keeps its R-tree fetch index without the three Z_RT_ triggers; the builder writes them as Photos 10.15 has them", open: true) { d, c in
            c.folder == "photos-macos1571-wal" && d.real == nil && d.name.hasPrefix("Z_RT_") && d.built?.type == "trigger"
        },
        Known(reason: "Photos 10.15's GenericAsset table has no Z_ENT index although the entity has subentities (every other such table has one); why is not known", open: true) { d, c in
            c.folder == "photos-macos10157-wal" && d.name == "ZGENERICASSET_Z_ENT_INDEX" && d.real == nil
        },
        Known(reason: "Photos' tables after a decade of Photos' own migrations: the same columns (an order key aside), in an order the builder's rules (from the other stores) do not give", open: true) { d, c in
            c.folder.hasPrefix("photos-") && d.real?.type == "table" && d.built?.type == "table"
                && Set(c.real.columns[d.name] ?? []).symmetricDifference(c.built.columns[d.name] ?? []).allSatisfy { $0.hasPrefix("Z_FOK_") }
        },
    ]

    @Test("the builder rebuilds each genuine store's schema, Z_PRIMARYKEY and metadata keys from its decoded model",
          .enabled(if: ProjectPaths.hasRealFixtures, Comment(rawValue: ProjectPaths.realFixturesMissing)), arguments: folders)
    func rebuild(_ name: String) throws {
        let real = try #require(ProjectPaths.realFixtures())
        let folder = real.appendingPathComponent(name)
        let store = try #require(try Self.storeFile(in: folder), "\(name) holds a store file")
        let before = try FolderSnapshot(folder)
        let session = try EvidenceSession()
        defer { session.scratch.remove() }
        let copy = try session.workingCopy(of: store)
        let connection = try copy.open()
        let tables = Set(try connection.tableNames())
        guard tables.contains("Z_PRIMARYKEY"), tables.contains("Z_METADATA") else {
            // Plain SQLite: no model to rebuild from.
            return
        }
        let opened = try OpenedStore.open(copy, displayPath: name)
        guard opened.model.source == .cache else {
            // Only a store without a model cache may fall back; one with a cache must decode.
            #expect(!tables.contains("Z_MODELCACHE"), "\(name) has a Z_MODELCACHE the project did not decode: \(opened.model.notes)")
            return
        }
        let realShape = try Self.shape(connection)
        let header = try Data(contentsOf: copy.databaseFile).prefix(20)
        let scratch = try TemporaryFolder("rebuild-\(name)")
        let url = scratch.path("rebuilt.sqlite")
        let writer = try StoreWriter(url: url, model: DecodedModel.description(opened.model), options: .init(
            journalMode: header.count == 20 && header[18] == 2 ? .wal : .delete,
            modelCache: tables.contains("Z_MODELCACHE"),
            historyTracking: tables.contains("ATRANSACTION"),
            frameworkVersion: opened.store.metadata.frameworkVersion ?? 1345))
        try writer.close()
        let builtShape = try Self.shape(try Connection.open(path: url.path, mode: .readOnly))
        let context = Context(folder: name, real: realShape, built: builtShape, model: opened.model)
        try session.finish()

        var differences: [Difference] = []
        for key in Set(realShape.objects.keys).union(builtShape.objects.keys).sorted() where realShape.objects[key] != builtShape.objects[key] {
            differences.append(Difference(name: key, real: realShape.objects[key], built: builtShape.objects[key]))
        }
        // Z_PRIMARYKEY row by row, the metadata keys one by one.
        let rows = { (s: Shape) in Dictionary(s.primaryKeys.map { (String($0.prefix { $0 != " " }), $0) }, uniquingKeysWith: { a, _ in a }) }
        let (realRows, builtRows) = (rows(realShape), rows(builtShape))
        for ent in Set(realRows.keys).union(builtRows.keys).sorted() where realRows[ent] != builtRows[ent] {
            differences.append(Difference(name: "Z_PRIMARYKEY \(ent)", real: realRows[ent].map { Object(type: "row", table: "Z_PRIMARYKEY", sql: $0) },
                                          built: builtRows[ent].map { Object(type: "row", table: "Z_PRIMARYKEY", sql: $0) }))
        }
        for key in realShape.plistKeys.symmetricDifference(builtShape.plistKeys).sorted() {
            let o = Object(type: "key", table: "Z_METADATA", sql: key)
            differences.append(Difference(name: "plist \(key)", real: realShape.plistKeys.contains(key) ? o : nil, built: builtShape.plistKeys.contains(key) ? o : nil))
        }
        var explained: [String: Int] = [:]
        var unexplained: [Difference] = []
        for d in differences {
            if let rule = Self.known.first(where: { $0.applies(d, context) }) { explained[rule.reason, default: 0] += 1 } else { unexplained.append(d) }
        }
        for (reason, count) in explained.sorted(by: { $0.key < $1.key }) { print("\(name): \(count) known: \(reason)") }
        #expect(unexplained.isEmpty, "\(name): \(unexplained.count) differences no rule explains:\n\(unexplained.map(\.description).joined(separator: "\n"))")
        // Every entity Core Data numbered is in the rebuilt store under the same number, name and parent.
        #expect(realRows == builtRows, "\(name): Z_PRIMARYKEY")
        #expect(try FolderSnapshot(folder) == before)
    }
}
