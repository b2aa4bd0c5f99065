import Acquisition
import Foundation
import SQLiteAccess
import StoreBuilder
import StoreTestSupport
import Testing

/// The builder must write exactly what Apple's frameworks write. The genuine SwiftData store in
/// ../shared keeps it honest: same model in, same schema text out.
@Suite("Store builder fidelity")
struct FidelityTests {
    /// The real store's sqlite_master, read through the project's safe-open path.
    static func realSchema() throws -> [Connection.SchemaObject] {
        try withRealStore { try $0.schemaObjects() }
    }

    /// Runs `body` on a working copy of the genuine SwiftData store (never the original).
    static func withRealStore<T>(_ body: (Connection) throws -> T) throws -> T {
        let real = try #require(ProjectPaths.realFixtures())
        let session = try EvidenceSession()
        defer { session.scratch.remove() }
        let copy = try session.workingCopy(of: real.appendingPathComponent("swiftdata-resources/default.store"))
        let result = try body(try copy.open())
        try session.finish()
        return result
    }

    @Test("DDL of the three entity tables, their indexes and the history tables equals the real store's", .enabled(if: ProjectPaths.hasRealFixtures, Comment(rawValue: ProjectPaths.realFixturesMissing)))
    func ddlMatchesRealStore() throws {
        let real = try Self.realSchema()
        let folder = try TemporaryFolder("fidelity")
        let writer = try StoreWriter(url: folder.path("default.store"), model: SampleModels.resources)
        try writer.close()
        let connection = try Connection.open(path: folder.path("default.store").path, mode: .readOnly)
        let built = try connection.schemaObjects()

        let entityTables: Set<String> = ["ZCOMPONENT", "ZCRAFTINGRECIPE", "ZITEM"]
        let history: Set<String> = ["ACHANGE", "ATRANSACTION", "ATRANSACTIONSTRING"]
        func relevant(_ objects: [Connection.SchemaObject]) -> [String] {
            objects.filter { entityTables.contains($0.tableName) || history.contains($0.tableName) }.compactMap(\.sql)
        }
        #expect(relevant(real).count == 19, "3 entity tables, 5 of their indexes, 3 history tables, 8 history indexes")
        #expect(relevant(built) == relevant(real))
        // And the metadata tables, in the same creation order.
        #expect(built.map(\.name) == real.map(\.name))
        #expect(built.map(\.sql) == real.map(\.sql))
    }

    @Test("Z_PRIMARYKEY numbering and names match the real store", .enabled(if: ProjectPaths.hasRealFixtures, Comment(rawValue: ProjectPaths.realFixturesMissing)))
    func primaryKeysMatch() throws {
        let folder = try TemporaryFolder("fidelity-pk")
        let writer = try StoreWriter(url: folder.path("default.store"), model: SampleModels.resources)
        try writer.close()
        let connection = try Connection.open(path: folder.path("default.store").path, mode: .readOnly)
        // Numbering, names and parents as the genuine store has them (Z_MAX differs: it counts rows).
        let query = "SELECT Z_ENT, Z_NAME, Z_SUPER FROM Z_PRIMARYKEY ORDER BY Z_ENT"
        func lines(_ connection: Connection) throws -> [String] {
            try connection.rows(query).map { "\($0[0].int ?? -1) \($0[1].string ?? "") \($0[2].int ?? -1)" }
        }
        let real = try Self.withRealStore { try lines($0) }
        #expect(real.count == 6)
        #expect(try lines(connection) == real)
        let realSettings = try Self.withRealStore { [try $0.scalar("PRAGMA auto_vacuum").int, try $0.pageSize()] }
        #expect([try connection.scalar("PRAGMA auto_vacuum").int, try connection.pageSize()] == realSettings)
    }
}
