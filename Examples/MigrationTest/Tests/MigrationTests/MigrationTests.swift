import Foundation
import StoreBuilder
import StorelensKit
import Testing

@Suite("to-do app: the Core Data → SwiftData migration")
struct MigrationTests {
    /// A fresh folder holding both stores, as the app's container would after the migration.
    static func container() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("sltest-migration-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    static func audit(_ folder: URL) throws -> AuditResult {
        try Storelens.audit([folder.path], manifest: try Manifest.parse(TodoStores.manifest, path: "storelens.json"))
    }

    @Test("nothing lost, nothing doubled, one writer")
    func migrationKeepsEveryRecordOnce() throws {
        let folder = try Self.container()
        defer { try? FileManager.default.removeItem(at: folder) }
        try TodoStores.writeLegacy(in: folder)
        try TodoStores.writeNew(in: folder, imported: TodoStores.todos)

        let result = try Self.audit(folder)
        #expect(result.lostRecords.isEmpty, "lost: \(result.lostRecords.map(\.message))")
        #expect(result.doubledRecords.isEmpty, "doubled: \(result.doubledRecords.map(\.message))")
        #expect(result.writerViolations.isEmpty, "other writers: \(result.writerViolations.map(\.message))")
        #expect(!result.findings.any(atOrAbove: .error), "\(result.findings.map { "\($0.id): \($0.message)" })")
        // The audit compared the two sides: an audit that read nothing would pass vacuously.
        let items = try #require(result.entities.first { $0.current == "TodoItem" })
        #expect(items.sides.map(\.records) == [TodoStores.todos.count, TodoStores.todos.count], "\(items.sides)")
    }

    // The same assertions fail when the migration is wrong: these show they can.

    @Test("a record skipped and a record imported twice are caught")
    func brokenImportIsCaught() throws {
        let folder = try Self.container()
        defer { try? FileManager.default.removeItem(at: folder) }
        try TodoStores.writeLegacy(in: folder)
        let t = TodoStores.todos
        try TodoStores.writeNew(in: folder, imported: [t[0], t[1], t[2], t[3], t[1]])   // no #5, #2 twice

        let result = try Self.audit(folder)
        #expect(result.lostRecords.map(\.id) == ["not-migrated"], "\(result.findings.map(\.id))")
        #expect(result.lostRecords.first?.evidence["count"] == .int(1))
        #expect(result.doubledRecords.map(\.id) == ["duplicate-import"], "\(result.findings.map(\.id))")
        #expect(result.writerViolations.isEmpty)
    }

    @Test("the widget writing the items is a second writer")
    func secondWriterIsCaught() throws {
        let folder = try Self.container()
        defer { try? FileManager.default.removeItem(at: folder) }
        try TodoStores.writeLegacy(in: folder)
        try TodoStores.writeNew(in: folder, imported: TodoStores.todos) { store in
            try store.transaction(TodoStores.widget, at: TodoStores.epoch.addingTimeInterval(2 * 86_400)) { w in
                try w.update("TodoItem", pk: 1, ["isCompleted": .bool(false)])
            }
        }
        let result = try Self.audit(folder)
        #expect(result.writerViolations.map(\.id) == ["writer-violation"], "\(result.findings.map(\.id))")
        #expect(result.writerViolations.first?.entity == "TodoItem")
        #expect(result.lostRecords.isEmpty && result.doubledRecords.isEmpty)
    }
}
