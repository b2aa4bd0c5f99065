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
    static func realSchema() throws -> [Connection.SchemaObject]? {
        guard let real = ProjectPaths.realFixtures() else { return nil }
        let session = try EvidenceSession()
        defer { session.scratch.remove() }
        let copy = try session.workingCopy(of: real.appendingPathComponent("swiftdata-resources/default.store"))
        let objects = try copy.open().schemaObjects()
        try session.finish()
        return objects
    }

    @Test("DDL of the three entity tables, their indexes and the history tables equals the real store's")
    func ddlMatchesRealStore() throws {
        guard let real = try Self.realSchema() else {
            print("skipped: \(ProjectPaths.realFixturesMissing)")
            return
        }
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

    @Test("Z_PRIMARYKEY numbering and names match the real store")
    func primaryKeysMatch() throws {
        guard ProjectPaths.realFixtures() != nil else {
            print("skipped: \(ProjectPaths.realFixturesMissing)")
            return
        }
        let folder = try TemporaryFolder("fidelity-pk")
        let writer = try StoreWriter(url: folder.path("default.store"), model: SampleModels.resources)
        try writer.close()
        let connection = try Connection.open(path: folder.path("default.store").path, mode: .readOnly)
        let rows = try connection.rows("SELECT Z_ENT, Z_NAME, Z_SUPER FROM Z_PRIMARYKEY ORDER BY Z_ENT")
        #expect(rows.map { "\($0[0].int ?? -1) \($0[1].string ?? "") \($0[2].int ?? -1)" } ==
                ["1 Component 0", "2 CraftingRecipe 0", "3 Item 0", "16001 CHANGE 0", "16002 TRANSACTION 0", "16003 TRANSACTIONSTRING 0"])
        #expect(try connection.scalar("PRAGMA auto_vacuum").int == 2)
        #expect(try connection.pageSize() == 4096)
    }
}
