import Acquisition
import Foundation
import SQLiteAccess
import StoreBuilder
import StoreTestSupport
import Testing

/// `WALBelonging`'s rules hold of every `-wal` that does belong: every genuine store in
/// `../shared/fixtures/real` with a `-wal`, and every store the builder makes with one (a late
/// `-wal` copied after a missed checkpoint included: it is the store's own, from another moment,
/// which `wal-mismatch` from SQLite's check reports). And they fire on the pairs they are for.
@Suite("a -wal that cannot belong to its main file")
struct WALBelongingTests {
    /// The two views of the family `main` (copied first: evidence is never opened where it lies
    /// by a test's own SQLite), and what `WALBelonging` says of them.
    static func sign(of main: URL, wal: URL? = nil, in folder: TemporaryFolder) throws -> String? {
        let copy = folder.path("pair-\(UUID().uuidString)/store")
        try FileManager.default.createDirectory(at: copy.deletingLastPathComponent(), withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: main, to: copy)
        try FileManager.default.copyItem(at: wal ?? URL(fileURLWithPath: main.path + "-wal"), to: URL(fileURLWithPath: copy.path + "-wal"))
        let walView = try Connection.openEvidence(path: copy.path, view: .walApplied, label: nil)
        let mainOnly = try Connection.openEvidence(path: copy.path, view: .mainFileOnly, label: nil)
        return WALBelonging.foreignSign(walView: walView, mainOnly: mainOnly)
    }

    /// Every SQLite file with a `-wal` beside it in a genuine fixture folder.
    static func genuineFamilies(_ folder: String) throws -> [URL] {
        guard let real = ProjectPaths.realFixtures() else { return [] }
        let dir = real.appendingPathComponent(folder)
        return try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted().map { dir.appendingPathComponent($0) }.filter { url in
            guard FileManager.default.fileExists(atPath: url.path + "-wal"), let handle = FileHandle(forReadingAtPath: url.path) else { return false }
            defer { try? handle.close() }
            return (try? handle.read(upToCount: 16)) == Data("SQLite format 3\0".utf8)
        }
    }

    @Test("no genuine store's own -wal is said not to belong", .enabled(if: ProjectPaths.hasRealFixtures, Comment(rawValue: ProjectPaths.realFixturesMissing)),
          arguments: ProjectPaths.realFixtureFolders())
    func genuineWALsBelong(_ folder: String) throws {
        let scratch = try TemporaryFolder("wal-belonging-real")
        for main in try Self.genuineFamilies(folder) {
            #expect(try Self.sign(of: main, in: scratch) == nil, "\(folder)/\(main.lastPathComponent)")
        }
    }

    @Test("no builder store's own -wal is said not to belong, a late -wal included")
    func builderWALsBelong() throws {
        let scratch = try TemporaryFolder("wal-belonging-builder")
        var mains = [try SampleStores.demo(in: scratch)]
        // Kept alive: each pulled pair lives in a folder of its own, removed with it.
        let pulled = try [LateWAL.Later.update, .insert].map { try LateWAL.pulledTodo($0) }
        mains += pulled.map(\.store)
        let url = scratch.path("todo-wal.store")
        let writer = try StoreWriter(url: url, model: SampleModels.todo)
        try writer.transaction { w in _ = try w.insert("TodoList", ["name": .string("Inbox")]) }
        try writer.checkpoint()
        try writer.transaction { w in _ = try w.insert("TodoItem", ["title": .string("in the -wal")]) }
        try writer.close(leavingWAL: true)
        mains.append(url)
        for main in mains { #expect(try Self.sign(of: main, in: scratch) == nil, "\(main.path)") }
    }

    @Test("another database's -wal, and another Core Data store's, are said not to belong, with the reason")
    func foreignWALs() throws {
        let scratch = try TemporaryFolder("wal-belonging-foreign")
        let demo = try SampleStores.demo(in: scratch)
        // A plain SQLite database's -wal, written by SQLite itself, with the demo's page size.
        let plainWAL = scratch.path("plain.db-wal-kept")
        try ForeignWAL.plainDatabase(copiedTo: plainWAL, in: scratch.url)
        let plainSign = try #require(try Self.sign(of: demo, wal: plainWAL, in: scratch))
        #expect(plainSign.contains("none of the main file's"), "\(plainSign)")

        // Another store of the same model, made in WAL mode and never checkpointed: its -wal
        // rewrites page 1 and Z_METADATA with its own UUID.
        let otherWAL = scratch.path("other.store-wal-kept")
        try ForeignWAL.otherStore(copiedTo: otherWAL, in: scratch.url)
        let sign = try #require(try Self.sign(of: demo, wal: otherWAL, in: scratch))
        #expect(sign.contains("Z_UUID") || sign.contains("metadata") || sign.contains("schema"), "\(sign)")
    }
}
