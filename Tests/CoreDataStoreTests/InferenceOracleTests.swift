import Acquisition
import CoreDataStore
import Foundation
import SQLiteAccess
import StoreBuilder
import StoreTestSupport
import Testing

/// The model inferred from SQL alone (`InferredModelBuilder`), held against the model the store
/// caches (`Z_MODELCACHE`), column by column: two readings of the same fact. For every genuine
/// store in `../shared/fixtures/real` with a cache and every store the builder makes (old layouts
/// included), each column the cache maps must have the same role in the inferred model (an
/// attribute, or a to-one with the same destination), and the entities must be the same. Any
/// difference is listed as a defect, and fails the test.
@Suite("the inferred model against the cached one")
struct InferenceOracleTests {
    /// Each mapped column's role: `attribute`, or `to-one → Destination`.
    static func roles(_ map: SchemaMap) -> [String: String] {
        var roles: [String: String] = [:]
        for e in map.entities where e.tableExists {
            func add(_ a: AttributeMapping) {
                if a.elements.isEmpty, let column = a.column { roles["\(e.table).\(column.uppercased())"] = "attribute" }
                for element in a.elements { add(element) }
            }
            for a in e.attributes where a.declaredBy == e.entity.name { add(a) }
            for r in e.relationships where r.declaredBy == e.entity.name && r.kind == .toOne {
                if let column = r.column { roles["\(e.table).\(column.uppercased())"] = "to-one → \(r.relationship.destination)" }
            }
        }
        return roles
    }

    /// The differences between the cached and the inferred reading of the store at `url` (a
    /// copy is read; nil when it has no cached model).
    static func defects(_ url: URL) throws -> [String]? {
        let scratch = try TemporaryFolder("inference-oracle")
        let copy = scratch.path(url.lastPathComponent)
        for suffix in ["", "-wal"] where FileManager.default.fileExists(atPath: url.path + suffix) {
            try FileManager.default.copyItem(atPath: url.path + suffix, toPath: copy.path + suffix)
        }
        let connection = try Connection.open(path: copy.path, mode: .readOnly)
        guard let store = try CoreDataStore.read(connection), try connection.tableExists("Z_MODELCACHE") else { return nil }
        let cached = try ModelLoader.load(connection: connection, store: store)
        guard cached.source == .cache else { return nil }
        let inferred = try InferredModelBuilder.infer(connection, store: store)
        let cachedMap = try SchemaMap.build(model: cached, store: store, connection: connection, path: url.lastPathComponent)
        let inferredMap = try SchemaMap.build(model: inferred, store: store, connection: connection, path: url.lastPathComponent)
        var defects: [String] = []
        let cachedEntities = Set(cached.entities.map(\.name)), inferredEntities = Set(inferred.entities.map(\.name))
        if cachedEntities != inferredEntities { defects.append("entities: cached \(cachedEntities.sorted()), inferred \(inferredEntities.sorted())") }
        let a = roles(cachedMap), b = roles(inferredMap)
        let uncertain = Set(inferred.uncertainColumns.map { $0.uppercased() })
        let parents = Dictionary(cached.entities.map { ($0.name, $0.parent) }, uniquingKeysWith: { a, _ in a })
        func within(_ entity: String, _ ancestor: String) -> Bool {
            var current: String? = entity
            var steps = 0
            while let e = current, steps < 64 {
                if e == ancestor { return true }
                current = parents[e] ?? nil
                steps += 1
            }
            return false
        }
        for (column, role) in a.sorted(by: { $0.key < $1.key }) {
            let other = b[column] ?? "nothing"
            guard other != role else { continue }
            // Said to be uncertain and shown as the number it stores: no wrong answer.
            if role.hasPrefix("to-one") && other == "attribute" && uncertain.contains(column) { continue }
            // The entity every row it points at is, below the declared destination: a true reading.
            if role.hasPrefix("to-one → "), other.hasPrefix("to-one → "),
               within(String(other.dropFirst("to-one → ".count)), String(role.dropFirst("to-one → ".count))) { continue }
            defects.append("\(column): cached \(role), inferred \(other)")
        }
        for (column, role) in b.sorted(by: { $0.key < $1.key }) where a[column] == nil && role != "attribute" {
            defects.append("\(column): cached nothing, inferred \(role)")
        }
        return defects
    }

    @Test("every genuine store with a cached model: the inferred model gives every column the cache maps the same role",
          .enabled(if: ProjectPaths.hasRealFixtures, Comment(rawValue: ProjectPaths.realFixturesMissing)),
          arguments: ProjectPaths.realFixtureFolders())
    func genuineStores(_ folder: String) throws {
        for url in try GenuineStores.sqliteFiles(in: folder) {
            guard let defects = try Self.defects(url) else { continue }
            #expect(defects.isEmpty, Comment(rawValue: "\(folder)/\(url.lastPathComponent): \(defects.count) defects:\n" + defects.prefix(40).joined(separator: "\n")))
        }
    }

    /// A store in the framework-619 layout (iOS 9's Photos): integer attributes with the very
    /// index Core Data gives a to-one (`ZASSET_ZSORTINDEX_INDEX`), whose values are also keys of
    /// another entity, beside a real to-one (with its ordered to-many inverse).
    static func framework619(in folder: TemporaryFolder) throws -> URL {
        var sortIndex = AttributeDescription("sortIndex", .integer64)
        sortIndex.isIndexed = true
        var granularity = AttributeDescription("granularityLevel", .integer16)
        granularity.isIndexed = true
        var favorite = AttributeDescription("favorite", .boolean)
        favorite.isIndexed = true
        let model = ModelDescription(entities: [
            EntityDescription("Album", attributes: [.init("title", .string)],
                              relationships: [RelationshipDescription("assets", to: "Asset", inverse: "album", toMany: true, ordered: true)]),
            EntityDescription("Asset", attributes: [sortIndex, granularity, favorite, .init("name", .string)],
                              relationships: [RelationshipDescription("album", to: "Album", inverse: "assets")]),
        ])
        let url = folder.path("Photos.sqlite")
        let writer = try StoreWriter(url: url, model: model, options: .init(journalMode: .delete, frameworkVersion: 619))
        try writer.transaction { w in
            var albums: [Int] = []
            // Album keys no other table has: the values then name one table, as a to-one's must.
            for n in 1 ... 20 { albums.append(try w.insert("Album", ["title": .string("album \(n)")], pk: 1000 + n)) }
            for n in 1 ... 60 {
                // Every number a key of another table too: values alone cannot tell these from references.
                _ = try w.insert("Asset", ["sortIndex": .int(Int64(1001 + n % 20)), "granularityLevel": .int(Int64(1 + n % 3)),
                                           "favorite": .bool(n % 2 == 0), "name": .string("asset \(n)"),
                                           "album": .object(entity: "Album", pk: albums[n % 20])])
            }
        }
        try writer.close()
        return url
    }

    @Test("stores the builder makes, the framework-619 layout included: the inferred model gives every column the cache maps the same role")
    func builderStores() throws {
        let folder = try TemporaryFolder("inference-oracle-builder")
        var stores = [try SampleStores.demo(in: folder), try Self.framework619(in: folder)]
        stores.append(try SampleStores.todo(in: folder.url, journal: .wal))
        let library = folder.path("library.store")
        try LibraryStore.write(library)
        stores.append(library)
        for url in stores {
            let defects = try #require(try Self.defects(url), "\(url.lastPathComponent) has a cached model")
            #expect(defects.isEmpty, Comment(rawValue: "\(url.lastPathComponent): \(defects.count) defects:\n" + defects.joined(separator: "\n")))
        }
        // The 619 store read with no cache: its indexed numbers are numbers, its to-one a reference.
        let uncached = try TemporaryFolder("inference-619")
        let connection = try Connection.open(path: try Self.framework619(in: uncached).path, mode: .readOnly)
        let store = try #require(try CoreDataStore.read(connection))
        let inferred = try InferredModelBuilder.infer(connection, store: store)
        let asset = try #require(inferred.entities.first { $0.name == "Asset" })
        for number in ["sortindex", "granularitylevel", "favorite"] {
            #expect(asset.attributes.contains { $0.name == number }, "\(number) is a number")
            #expect(!asset.relationships.contains { $0.name == number }, "\(number) is no reference")
        }
        #expect(asset.relationships.first { $0.name == "album" }?.destination == "Album")
        // Said to be uncertain (schema's notes), not silently numbers.
        #expect(Set(inferred.uncertainColumns) == ["ZASSET.ZSORTINDEX", "ZASSET.ZGRANULARITYLEVEL", "ZASSET.ZFAVORITE"], "\(inferred.uncertainColumns)")
    }
}
