import CoreDataStore
import Foundation
import SQLiteAccess
import StoreBuilder
import StoreTestSupport
import Testing

/// Persistent history in the layout of the framework version the store claims: interned strings
/// (ATRANSACTIONSTRING, the `…TS` columns) from 977 on, text columns before (knowledgeC, 851).
/// Read back with SQLite, and with the project's history reader.
@Suite("history layout by framework version")
struct HistoryLayoutTests {
    static func store(frameworkVersion: Int) throws -> (TemporaryFolder, URL) {
        let folder = try TemporaryFolder("history-layout")
        let url = folder.path("s.sqlite")
        let writer = try StoreWriter(url: url, model: SampleModels.resources, options: .init(frameworkVersion: frameworkVersion))
        try writer.transaction(.init(author: "importer", bundleID: "com.example.app", processName: "App", contextName: "main")) { w in
            try w.insert("Item", ["name": .string("Axe")])
        }
        try writer.close()
        return (folder, url)
    }

    @Test("framework 851: names as text in ATRANSACTION, no string table; 1345: interned", arguments: [851, 1345])
    func layout(frameworkVersion: Int) throws {
        let (folder, url) = try Self.store(frameworkVersion: frameworkVersion)
        defer { withExtendedLifetime(folder) {} }
        let db = try Connection.open(path: url.path, mode: .readOnly)
        let interned = frameworkVersion >= StoreLayout.FrameworkVersion.internedHistoryStrings
        let tables = Set(try db.tableNames())
        #expect(tables.contains("ATRANSACTIONSTRING") == interned)
        #expect(try db.scalar("SELECT count(*) FROM Z_PRIMARYKEY WHERE Z_ENT = 16003").int == (interned ? 1 : 0))
        let columns = try db.columns(of: "ATRANSACTION").map(\.name)
        #expect(columns.contains("ZBUNDLEIDTS") == interned)
        let bundle = interned
            ? try db.scalar("SELECT s.ZNAME FROM ATRANSACTION t JOIN ATRANSACTIONSTRING s ON s.Z_PK = t.ZBUNDLEIDTS").string
            : try db.scalar("SELECT ZBUNDLEID FROM ATRANSACTION").string
        #expect(bundle == "com.example.app")

        // The history reader finds the same writer in either layout.
        let store = try #require(try CoreDataStore.read(db))
        var reader = try HistoryReader(connection: db, store: store, model: try ModelLoader.load(connection: db, store: store))
        var writers: [String] = []
        try reader.forEachTransaction { t in writers.append("\(t.author ?? "-") \(t.bundleID ?? "-") \(t.processName ?? "-") \(t.contextName ?? "-")") }
        #expect(writers == ["importer com.example.app App main"])
    }
}
