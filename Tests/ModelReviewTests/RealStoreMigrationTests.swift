import Acquisition
import CoreDataStore
import Findings
import Foundation
import ModelReview
import SQLiteAccess
import StoreTestSupport
import Testing

/// Migration plans on the genuine Apple stores: nothing is invented where nothing changed, and
/// where Apple did change the model (Photos macOS 10.15 → 15), the rows named are SQLite's.
@Suite("migration on genuine stores", .enabled(if: ProjectPaths.hasRealFixtures, Comment(rawValue: ProjectPaths.realFixturesMissing)))
struct RealStoreMigrationTests {
    /// Every genuine Core Data store with a cached model.
    static var stores: [String] {
        guard let real = ProjectPaths.realFixtures() else { return [] }
        return ["coredata-2017-text-keys/Model.sqlite", "ios17-derived-attributes/ChatModel.sqlite", "ios17-ordered-no-inverse/sgrouplesdb.sqlite",
                "knowledgec-tombstones/knowledgec-10.13.db", "notes-macos12/NoteStore-macOS-12-Monterey.sqlite", "notes-macos15-wal/NoteStore.sqlite",
                "photoanalysis-walonly/PGCurationCache.sqlite.sqlite", "photos-macos10157-wal/Photos.sqlite", "photos-macos1571-wal/Photos.sqlite",
                "screentime-tombstones/RMAdminStore-Local.sqlite", "swiftdata-cocktails-preloaded/PreloadedCocktails.store",
                "swiftdata-resources/default.store"].filter { FileManager.default.fileExists(atPath: real.appendingPathComponent($0).path) }
    }

    @Test("a store migrated to its own model: one hop, no change, nothing to fail", arguments: stores)
    func identity(_ relative: String) throws {
        let url = try #require(ProjectPaths.realFixtures()).appendingPathComponent(relative)
        let plan = try MigrationPlanner.plan(inputs: [url.path], to: url.path)
        #expect(plan.hops.count == 1)
        #expect(plan.findings.map(\.id) == ["no-model-changes"], "\(plan.findings.prefix(5).map(\.message))")
        #expect(!plan.failsOrLosesData)
    }

    @Test("Photos 10.15 → 15: GenericAsset is gone from the target, and its rows are counted by SQLite")
    func photos() throws {
        let real = try #require(ProjectPaths.realFixtures())
        let old = real.appendingPathComponent("photos-macos10157-wal/Photos.sqlite")
        let new = real.appendingPathComponent("photos-macos1571-wal/Photos.sqlite")
        let plan = try MigrationPlanner.plan(inputs: [old.path], to: new.path)
        #expect(plan.target.model.entity("GenericAsset") == nil && plan.target.model.entity("Asset") != nil)
        let removed = try #require(plan.findings.first { $0.id == MigrationRule.entityRemoved.id && $0.entity == "GenericAsset" })
        // The truth: the old store's rows of GenericAsset and its subentities, WAL applied, on a copy.
        let copy = try TemporaryFolder("photos-truth")
        for suffix in ["", "-wal"] {
            try FileManager.default.copyItem(at: URL(fileURLWithPath: old.path + suffix), to: copy.path("Photos.sqlite" + suffix))
        }
        let db = try Connection.open(path: copy.path("Photos.sqlite").path, mode: .readOnly)
        let keys = try db.rows("SELECT Z_PK FROM ZGENERICASSET ORDER BY Z_PK").compactMap { $0[0].int }
        #expect(removed.evidence["rows"] == .int(keys.count))
        #expect(removed.evidence["keys"] == .keys(keys))
        #expect(removed.severity == .error && plan.failsOrLosesData)
        // Every change names a rule of the table.
        let ids = Set(MigrationRule.all.map(\.id))
        #expect(plan.findings.allSatisfy { ids.contains($0.id) })
    }
}
