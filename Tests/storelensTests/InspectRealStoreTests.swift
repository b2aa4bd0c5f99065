import Foundation
import StoreTestSupport
import Testing

/// `storelens inspect --format json` on the genuine stores reports the facts in their README,
/// and leaves them byte-identical.
@Suite("inspect on genuine Apple stores")
struct InspectRealStoreTests {
    struct Entity: Decodable {
        let name: String
        let number: Int
        let parent: String?
        let table: String?
        let rows: Int
        let rowsIncludingSubentities: Int
        let rowsMainFileOnly: Int?
        let maxPK: Int?
        let zMax: Int?
    }
    struct WAL: Decodable {
        let present: Bool
        let frames: Int
        let validFrames: Int
        let commits: Int
        let lastCommitFrame: Int
        let pageSize: Int?
        let salt1: String?
        let salt2: String?
        let checkpointSequence: Int?
    }
    struct History: Decodable { let present: Bool; let transactions: Int; let changes: Int }
    struct Metadata: Decodable {
        let uuid: String?
        let frameworkVersion: Int?
        let modelVersionIdentifiers: [String]
        let versionHashes: [String: String]
    }
    struct Store: Decodable {
        let path: String
        let format: String
        let stack: String
        let stackEvidence: [String]
        let journalMode: String
        let pageSize: Int
        let metadata: Metadata?
        let entities: [Entity]
        let wal: WAL
        let history: History
    }
    struct Output: Decodable { let schemaVersion: Int; let stores: [Store] }

    static func inspect(_ relative: String) throws -> (Output, FolderSnapshot, FolderSnapshot)? {
        let real = try #require(ProjectPaths.realFixtures())
        let store = real.appendingPathComponent(relative)
        let folder = store.deletingLastPathComponent()
        let before = try FolderSnapshot(folder)
        let result = try CLI.run(["inspect", store.path, "--format", "json"])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let after = try FolderSnapshot(folder)
        return (try JSONDecoder().decode(Output.self, from: Data(result.stdout.utf8)), before, after)
    }

    @Test("swiftdata-resources: entities, rows with and without the WAL, Z_MAX, WAL frames, history", .enabled(if: ProjectPaths.hasRealFixtures, Comment(rawValue: ProjectPaths.realFixturesMissing)))
    func swiftDataResources() throws {
        guard let (output, before, after) = try Self.inspect("swiftdata-resources/default.store") else { return }
        #expect(before == after, "the originals must stay byte-identical")
        #expect(output.schemaVersion == 1)
        let store = try #require(output.stores.first)
        #expect(store.format == "coredata")
        #expect(store.stack == "swiftdata")
        #expect(!store.stackEvidence.isEmpty)
        #expect(store.journalMode == "wal")
        #expect(store.pageSize == 4096)
        #expect(store.metadata?.uuid == "1D070E6D-145B-4367-8928-974368B60AC7")
        #expect(store.metadata?.frameworkVersion == 1345)
        #expect(store.metadata?.modelVersionIdentifiers == ["1.0.0"])
        #expect(Set(store.metadata?.versionHashes.keys.map { $0 } ?? []) == ["Component", "CraftingRecipe", "Item"])

        let byName = Dictionary(uniqueKeysWithValues: store.entities.map { ($0.name, $0) })
        let expected: [(String, Int, String, Int, Int, Int)] = [
            // name, number, table, rows (WAL applied), rows (main file only), Z_MAX
            ("Component", 1, "ZCOMPONENT", 5, 1, 7),
            ("CraftingRecipe", 2, "ZCRAFTINGRECIPE", 4, 2, 4),
            ("Item", 3, "ZITEM", 7, 4, 12),
            ("CHANGE", 16001, "ACHANGE", 55, 19, 55),
            ("TRANSACTION", 16002, "ATRANSACTION", 38, 13, 38),
            ("TRANSACTIONSTRING", 16003, "ATRANSACTIONSTRING", 2, 2, 12),
        ]
        #expect(store.entities.count == expected.count)
        for (name, number, table, rows, mainRows, zMax) in expected {
            let e = try #require(byName[name])
            #expect(e.number == number)
            #expect(e.table == table)
            #expect(e.parent == nil)
            #expect(e.rows == rows, "\(name) rows")
            #expect(e.rowsIncludingSubentities == rows)
            #expect(e.rowsMainFileOnly == mainRows, "\(name) main-file rows")
            #expect(e.zMax == zMax, "\(name) Z_MAX")
        }
        #expect(store.wal.present)
        #expect(store.wal.frames == 355)
        #expect(store.wal.validFrames == 355)
        #expect(store.wal.commits == 42)
        #expect(store.wal.lastCommitFrame == 355)
        #expect(store.wal.pageSize == 4096)
        #expect(store.wal.salt1 == "0xe1f37357")
        #expect(store.wal.salt2 == "0xaa79144c")
        #expect(store.wal.checkpointSequence == 0)
        #expect(store.history.present)
        #expect(store.history.transactions == 38)
        #expect(store.history.changes == 55)
    }

    @Test("coredata-2014: a rollback-journal Core Data store without a model cache", .enabled(if: ProjectPaths.hasRealFixtures, Comment(rawValue: ProjectPaths.realFixturesMissing)))
    func coreData2014() throws {
        guard let (output, before, after) = try Self.inspect("coredata-2014/Model.sqlite") else { return }
        #expect(before == after)
        let store = try #require(output.stores.first)
        #expect(store.format == "coredata")
        #expect(store.stack == "coredata")
        #expect(store.journalMode == "delete")
        #expect(store.metadata?.uuid == "78FAC3F0-BB06-4113-9B0E-4D5E0B18F00D")
        #expect(store.metadata?.frameworkVersion == 479)
        #expect(store.metadata?.modelVersionIdentifiers == [""])
        let rows = store.entities.map { "\($0.number) \($0.name) \($0.rows) \($0.rowsMainFileOnly ?? -1) \($0.zMax ?? -1)" }
        #expect(rows == ["1 FeedbackCategory 19 19 19", "2 FeedbackSubCategory 79 79 79"])
        #expect(!store.wal.present)
        #expect(!store.history.present)
    }

    @Test("--as-of shows the store at a WAL commit: 0 is the main file, 42 the latest", .enabled(if: ProjectPaths.hasRealFixtures, Comment(rawValue: ProjectPaths.realFixturesMissing)))
    func asOf() throws {
        let real = try #require(ProjectPaths.realFixtures())
        let store = real.appendingPathComponent("swiftdata-resources/default.store").path
        func items(_ extra: [String]) throws -> (Int, Int?) {
            let r = try CLI.run(["inspect", store, "--format", "json"] + extra)
            #expect(r.status == 0, "\(r.stderr)")
            let out = try JSONDecoder().decode(Output.self, from: Data(r.stdout.utf8))
            let item = try #require(out.stores.first?.entities.first { $0.name == "Item" })
            return (item.rows, item.zMax)
        }
        #expect(try items(["--as-of", "0"]).0 == 4, "the main file alone")
        #expect(try items(["--as-of", "42"]).0 == 7, "after the last commit")
        #expect(try items(["--as-of", "3"]) == (4, 6), "Z_MAX is read from that moment too")
        let bad = try CLI.run(["inspect", store, "--as-of", "43"])
        #expect(bad.status == 2)
        #expect(bad.stderr.contains("out of range"))
    }
}
