import Foundation
import SQLiteAccess
import StoreTestSupport
import Testing

/// `storelens inspect --format json` on the genuine stores reports what SQLite itself finds on
/// private copies (with and without the WAL), what Foundation reads from Z_METADATA's plist and
/// what the WAL's own frame headers say, and leaves the stores byte-identical.
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

    /// Rows per entity as Core Data selects them (Z_ENT = n) in the table of its root entity.
    static func entityRows(_ oracle: SQLiteOracle, _ keys: [(ent: Int, name: String, superEnt: Int, max: Int)]) throws -> [Int: Int] {
        let superOf = Dictionary(keys.map { ($0.ent, $0.superEnt) }, uniquingKeysWith: { a, _ in a })
        let nameOf = Dictionary(keys.map { ($0.ent, $0.name) }, uniquingKeysWith: { a, _ in a })
        var rows: [Int: Int] = [:]
        for k in keys {
            var root = k.ent
            while let s = superOf[root], s != 0 { root = s }
            let table = (k.ent >= 16000 ? "A" : "Z") + (nameOf[root] ?? k.name).uppercased()
            rows[k.ent] = try oracle.count(table, where: "Z_ENT = \(k.ent)")
        }
        return rows
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
        // Whether SwiftData wrote it only its own stack knows; the README's account of the app
        // (a SwiftData project) is the one witness, so this stays a stated fact.
        let original = try #require(ProjectPaths.realFixtures()).appendingPathComponent("swiftdata-resources/default.store")
        let withWAL = try SQLiteOracle(copying: original), mainOnly = try SQLiteOracle(copying: original, wal: .none)
        #expect(store.journalMode == (try withWAL.scalar("PRAGMA journal_mode").string))
        #expect(store.pageSize == (try withWAL.scalar("PRAGMA page_size").int))
        let (uuid, plist) = try withWAL.metadata()
        #expect(store.metadata?.uuid == uuid)
        #expect(store.metadata?.frameworkVersion == (plist["NSPersistenceFrameworkVersion"] as? NSNumber)?.intValue)
        #expect(store.metadata?.modelVersionIdentifiers == plist["NSStoreModelVersionIdentifiers"] as? [String])
        let hashes = try #require(plist["NSStoreModelVersionHashes"] as? [String: Any])
        #expect(Set(store.metadata?.versionHashes.keys.map { $0 } ?? []) == Set(hashes.keys))

        // Every Z_PRIMARYKEY entity, with rows counted by SQLite with the WAL and without it.
        let keys = try withWAL.primaryKeys()
        let rows = try Self.entityRows(withWAL, keys), mainRows = try Self.entityRows(mainOnly, keys)
        #expect(rows != mainRows, "the WAL holds rows the main file does not")
        #expect(store.entities.map(\.number).sorted() == keys.map(\.ent))
        let byNumber = Dictionary(uniqueKeysWithValues: store.entities.map { ($0.number, $0) })
        for k in keys {
            let e = try #require(byNumber[k.ent])
            #expect(e.name == k.name)
            #expect(e.table == (k.ent >= 16000 ? "A" : "Z") + k.name.uppercased())
            #expect(e.parent == nil && k.superEnt == 0)
            #expect(e.rows == rows[k.ent], "\(k.name) rows")
            #expect(e.rowsIncludingSubentities == rows[k.ent])
            #expect(e.rowsMainFileOnly == mainRows[k.ent], "\(k.name) main-file rows")
            #expect(e.zMax == k.max, "\(k.name) Z_MAX")
        }
        let wal = try #require(try WALFrameOracle.read(URL(fileURLWithPath: original.path + "-wal")))
        #expect(store.wal.present)
        #expect(store.wal.frames == wal.frameSlots)
        #expect(store.wal.validFrames == wal.validFrames)
        #expect(store.wal.commits == wal.commitFrames.count)
        #expect(store.wal.lastCommitFrame == wal.lastCommitFrame)
        #expect(store.wal.pageSize == wal.pageSize)
        #expect(store.wal.salt1 == "0x" + String(format: "%08x", wal.salt1))
        #expect(store.wal.salt2 == "0x" + String(format: "%08x", wal.salt2))
        #expect(store.wal.checkpointSequence == Int(wal.checkpointSequence))
        #expect(store.history.present)
        #expect(store.history.transactions == (try withWAL.count("ATRANSACTION")))
        #expect(store.history.changes == (try withWAL.count("ACHANGE")))
    }

    @Test("coredata-2014: a rollback-journal Core Data store without a model cache", .enabled(if: ProjectPaths.hasRealFixtures, Comment(rawValue: ProjectPaths.realFixturesMissing)))
    func coreData2014() throws {
        guard let (output, before, after) = try Self.inspect("coredata-2014/Model.sqlite") else { return }
        #expect(before == after)
        let store = try #require(output.stores.first)
        #expect(store.format == "coredata")
        #expect(store.stack == "coredata")
        let original = try #require(ProjectPaths.realFixtures()).appendingPathComponent("coredata-2014/Model.sqlite")
        let sqlite = try SQLiteOracle(copying: original)
        #expect(store.journalMode == (try sqlite.scalar("PRAGMA journal_mode").string))
        let (uuid, plist) = try sqlite.metadata()
        #expect(store.metadata?.uuid == uuid)
        #expect(store.metadata?.frameworkVersion == (plist["NSPersistenceFrameworkVersion"] as? NSNumber)?.intValue)
        #expect(store.metadata?.modelVersionIdentifiers == plist["NSStoreModelVersionIdentifiers"] as? [String])
        let keys = try sqlite.primaryKeys()
        let counted = try Self.entityRows(sqlite, keys)
        let rows = store.entities.map { "\($0.number) \($0.name) \($0.rows) \($0.rowsMainFileOnly ?? -1) \($0.zMax ?? -1)" }
        // No WAL: the main file alone is the whole store.
        #expect(rows == keys.map { "\($0.ent) \($0.name) \(counted[$0.ent] ?? -1) \(counted[$0.ent] ?? -1) \($0.max)" })
        #expect(!FileManager.default.fileExists(atPath: original.path + "-wal"))
        #expect(!store.wal.present)
        #expect(!store.history.present)
        #expect(try sqlite.scalar("SELECT count(*) FROM sqlite_master WHERE name = 'ATRANSACTION'").int == 0)
    }

    @Test("--as-of shows the store at a WAL commit: 0 is the main file, the last commit the latest, Z_MAX of that moment", .enabled(if: ProjectPaths.hasRealFixtures, Comment(rawValue: ProjectPaths.realFixturesMissing)))
    func asOf() throws {
        let real = try #require(ProjectPaths.realFixtures())
        let original = real.appendingPathComponent("swiftdata-resources/default.store")
        let store = original.path
        func items(_ extra: [String]) throws -> (Int, Int?) {
            let r = try CLI.run(["inspect", store, "--format", "json"] + extra)
            #expect(r.status == 0, "\(r.stderr)")
            let out = try JSONDecoder().decode(Output.self, from: Data(r.stdout.utf8))
            let item = try #require(out.stores.first?.entities.first { $0.name == "Item" })
            return (item.rows, item.zMax)
        }
        /// SQLite on a copy whose WAL ends after `frames` frames: Item's rows and Z_MAX then.
        func truth(_ wal: SQLiteOracle.WALChoice) throws -> (Int, Int?) {
            let copy = try SQLiteOracle(copying: original, wal: wal)
            return (try copy.count("ZITEM"), try copy.scalar("SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_NAME = 'Item'").int)
        }
        let frames = try #require(try WALFrameOracle.read(URL(fileURLWithPath: store + "-wal")))
        let commits = frames.commitFrames.count
        #expect(try items(["--as-of", "0"]) == truth(.none), "the main file alone")
        #expect(try items(["--as-of", String(commits)]) == truth(.whole), "after the last commit")
        // A commit where Z_MAX had moved on from the main file's but not yet to the final one.
        let (start, end) = (try truth(.none).1, try truth(.whole).1)
        var middle: Int?
        for n in 1..<commits {
            let then = try truth(.frames(frames.commitFrames[n - 1])).1
            if then != start && then != end { middle = n; break }
        }
        let n = try #require(middle, "some commit moved Item's Z_MAX part of the way")
        #expect(try items(["--as-of", String(n)]) == truth(.frames(frames.commitFrames[n - 1])), "Z_MAX is read from that moment too")
        let bad = try CLI.run(["inspect", store, "--as-of", String(commits + 1)])
        #expect(bad.status == 2)
        #expect(bad.stderr.contains("out of range"))
    }
}
