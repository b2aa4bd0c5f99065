import Acquisition
import CoreDataStore
import Foundation
import SQLiteAccess
import StoreBuilder
import StoreTestSupport
import Testing

/// Reading Core Data structures from builder-made stores that exercise what the real ones lack.
@Suite("Core Data store reading")
struct StoreReadingTests {
    static func inspect(_ url: URL) throws -> StoreInspection {
        let session = try EvidenceSession()
        defer { session.scratch.remove() }
        let result = try StoreInspector.inspect(try session.workingCopy(of: url))
        try session.finish()
        return result
    }

    @Test("entity numbering, parents, shared tables and counts with and without subentities")
    func inheritance() throws {
        let folder = try TemporaryFolder("inheritance")
        let url = folder.path("Shapes.sqlite")
        let w = try StoreWriter(url: url, model: ShapesFixture.model, options: .init(historyTracking: false))
        try w.transaction(nil) { w in
            try w.insert("Polygon", ["name": .string("triangle"), "sides": .int(3)])
            try w.insert("Square", ["name": .string("s1"), "sides": .int(4), "side": .double(2)])
            try w.insert("Square", ["name": .string("s2"), "sides": .int(4), "side": .double(3)])
            try w.insert("Circle", ["name": .string("c"), "radius": .double(1)])
            try w.insert("Canvas", ["title": .string("one")])
        }
        try w.checkpoint()
        try w.transaction(nil) { w in try w.insert("Circle", ["name": .string("c2"), "radius": .double(5)]) }
        try w.close(leavingWAL: true)

        let report = try Self.inspect(url)
        let byName = Dictionary(uniqueKeysWithValues: report.entities.map { ($0.entity.name, $0) })
        // Depth-first, parent before children, siblings alphabetical.
        #expect(report.entities.map(\.entity.name) == ["Canvas", "Shape", "Circle", "Polygon", "Square"])
        #expect(byName["Square"]?.entity.parentName == "Polygon")
        #expect(byName["Square"]?.entity.table == "ZSHAPE")
        #expect(byName["Shape"]?.entity.subtreeNumbers == [2, 3, 4, 5])
        #expect(byName["Shape"]?.counts.rows == 0)
        #expect(byName["Shape"]?.counts.rowsIncludingSubentities == 5)
        #expect(byName["Shape"]?.counts.rowsMainFileOnly == 0)
        #expect(byName["Polygon"]?.counts.rowsIncludingSubentities == 3)
        #expect(byName["Circle"]?.counts.rows == 2)
        #expect(byName["Circle"]?.counts.rowsMainFileOnly == 1)
        #expect(byName["Square"]?.counts.maxPK == 5)
        // Z_MAX lives on the root row only.
        #expect(byName["Shape"]?.entity.zMax == 5)
        #expect(byName["Square"]?.entity.zMax == 0)
        #expect(report.stack.stack == .coreData)
        #expect(report.wal.commits == 1)
        #expect(report.history?.present == false)
    }

    @Test("the demo-style SwiftData store is recognised as SwiftData, with history counted")
    func swiftDataStack() throws {
        let folder = try TemporaryFolder("demo")
        try DemoContainer.write(into: folder.url)
        let report = try Self.inspect(folder.path("Library/Application Support/default.store"))
        #expect(report.format == .coreData)
        #expect(report.stack.stack == .swiftData)
        #expect(report.history?.transactions == 6)
        let items = try #require(report.entities.first { $0.entity.name == "TodoItem" })
        #expect(items.counts.rows == 7)
        #expect(items.counts.rowsMainFileOnly == 6)
        #expect(report.wal.present && report.wal.commits == 3)
    }

    @Test("a plain SQLite database is reported as such, not rejected")
    func plainSQLite() throws {
        let folder = try TemporaryFolder("plain")
        let url = folder.path("plain.db")
        let db = try Connection.open(path: url.path, mode: .create)
        try db.execute("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('a'), ('b');")
        _ = db
        let report = try Self.inspect(url)
        #expect(report.format == .sqlite)
        #expect(report.stack.stack == .unknown)
        #expect(report.tables.map(\.name) == ["notes"])
        #expect(report.tables.first?.rows == 2)
    }

    @Test("header says WAL but no -wal came with the store: a note, not silence")
    func walModeWithoutWAL() throws {
        let folder = try TemporaryFolder("nowal")
        let url = folder.path("default.store")
        let w = try StoreWriter(url: url, model: SampleModels.todo)
        try w.transaction { try $0.insert("TodoList", ["name": .string("x")]) }
        try w.checkpoint()
        try w.transaction { try $0.insert("TodoList", ["name": .string("y")]) }
        try w.close(leavingWAL: true)
        try FileManager.default.removeItem(atPath: url.path + "-wal")
        try FileManager.default.removeItem(atPath: url.path + "-shm")
        let report = try Self.inspect(url)
        #expect(report.notes.contains { $0.contains("no -wal file came with the store") })
        #expect(report.entities.first { $0.entity.name == "TodoList" }?.counts.rows == 1)
    }
}
