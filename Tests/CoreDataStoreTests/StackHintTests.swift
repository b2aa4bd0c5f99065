import Acquisition
import CoreDataStore
import Foundation
import SQLiteAccess
import StoreBuilder
import StoreTestSupport
import Testing

/// Every stack hint (`StackHint.all`) run over every genuine store in `../shared/fixtures/real`,
/// whose writing stack its README states (the `swiftdata-*` folders SwiftData, every other Core
/// Data store Core Data), and over the builder's stores: a hint that fires must point to the
/// store's known stack. A hint true of both stacks (a class name equal to the entity's, history
/// without CloudKit) fails here, and so does one said of a framework that predates SwiftData.
@Suite("stack hints against the stores' known stacks")
struct StackHintTests {
    /// The hints that fire on the store at `url` (read from a copy), or nil for plain SQLite.
    static func hints(_ url: URL) throws -> [(id: String, found: StackHint.Found)]? {
        let scratch = try TemporaryFolder("stack-hints")
        let copy = scratch.path(url.lastPathComponent)
        for suffix in ["", "-wal"] where FileManager.default.fileExists(atPath: url.path + suffix) {
            try FileManager.default.copyItem(atPath: url.path + suffix, toPath: copy.path + suffix)
        }
        let connection = try Connection.open(path: copy.path, mode: .readOnly)
        guard let store = try CoreDataStore.read(connection) else { return nil }
        let facts = StackHint.Facts(store: store)
        return StackHint.all.compactMap { hint in hint.read(facts).map { (hint.id, $0) } }
    }

    static func check(_ url: URL, known: StackVerdict.Stack, _ what: String) throws {
        guard let fired = try hints(url) else { return }
        #expect(!fired.isEmpty, "\(what): no hint at all")
        for (id, found) in fired where found.points != known {
            Issue.record("\(what): hint \(id) points to \(found.points.rawValue), the store was written by \(known.rawValue): \(found.sentence)")
        }
    }

    @Test("no hint contradicts a genuine store's known stack", .enabled(if: ProjectPaths.hasRealFixtures, Comment(rawValue: ProjectPaths.realFixturesMissing)),
          arguments: ProjectPaths.realFixtureFolders())
    func genuineStores(_ folder: String) throws {
        let known: StackVerdict.Stack = folder.hasPrefix("swiftdata-") ? .swiftData : .coreData
        for url in try GenuineStores.sqliteFiles(in: folder) {
            try Self.check(url, known: known, "\(folder)/\(url.lastPathComponent)")
        }
    }

    @Test("no hint contradicts the builder's stores: SwiftData's layout (1.0.0, history) and a Core Data store of framework 1145 with a VersionedSchema-like identifier")
    func builderStores() throws {
        let folder = try TemporaryFolder("stack-hints-builder")
        try Self.check(try SampleStores.demo(in: folder), known: .swiftData, "demo (SwiftData)")
        // Two years before SwiftData: a semantic identifier is a developer's, not a VersionedSchema's.
        let old = folder.path("old.sqlite")
        var model = SampleModels.todo
        model.versionIdentifiers = ["2.101.0"]
        let writer = try StoreWriter(url: old, model: model, options: .init(journalMode: .delete, historyTracking: false, frameworkVersion: 1145))
        try writer.transaction { w in _ = try w.insert("TodoList", ["name": .string("Home")]) }
        try writer.close()
        try Self.check(old, known: .coreData, "framework 1145 with [\"2.101.0\"]")
        let fired = try #require(try Self.hints(old)).map(\.id)
        #expect(fired.contains("framework-before-swiftdata") && !fired.contains("version-semantic"), "\(fired)")
    }
}
