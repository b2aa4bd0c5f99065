import Foundation
import SQLiteAccess
import StoreBuilder
import StoreTestSupport
import Testing

/// NSPersistentCloudKitContainer's own tables (`ANSCK…`, entities `NSCK…` from 17001) are read by
/// `rows`, `schema` and `check`; history tables without Z_PRIMARYKEY rows are still history.
@Suite("CloudKit mirroring tables")
struct CloudKitMirroringTests {
    static func store(in folder: URL) throws -> URL {
        let url = folder.appendingPathComponent("Mirrored.sqlite")
        let writer = try StoreWriter(url: url, model: SampleModels.todo, options: .init(journalMode: .delete))
        try writer.transaction(.init(bundleID: "com.example.todo")) { w in
            let list = try w.insert("TodoList", ["name": .string("Home")])
            try w.insert("TodoItem", ["title": .string("a"), "list": .object(entity: "TodoList", pk: list)])
        }
        // The mirroring tables as Core Data creates them, with two records' metadata.
        try writer.executeRaw("CREATE TABLE ANSCKRECORDMETADATA ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZENTITYID INTEGER, ZENTITYPK INTEGER, ZRECORDZONE INTEGER, ZCKRECORDNAME VARCHAR, ZCKRECORDSYSTEMFIELDS BLOB )")
        try writer.executeRaw("CREATE TABLE ANSCKRECORDZONE ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZCKOWNERNAME VARCHAR, ZCKRECORDZONENAME VARCHAR )")
        try writer.executeRaw("INSERT INTO Z_PRIMARYKEY (Z_ENT, Z_NAME, Z_SUPER, Z_MAX) VALUES (17002, 'NSCKRecordMetadata', 0, 2), (17004, 'NSCKRecordZone', 0, 1)")
        try writer.executeRaw("INSERT INTO ANSCKRECORDZONE VALUES (1, 17004, 1, '__defaultOwner__', 'com.apple.coredata.cloudkit.zone')")
        try writer.executeRaw("INSERT INTO ANSCKRECORDMETADATA VALUES (1, 17002, 1, 1, 1, 1, 'rec-1', x'00'), (2, 17002, 1, 2, 1, 1, 'rec-2', x'01')")
        // History tables without their Z_PRIMARYKEY rows (as a store that turned history off leaves them).
        try writer.executeRaw("DELETE FROM Z_PRIMARYKEY WHERE Z_ENT >= 16001 AND Z_ENT <= 16003")
        try writer.close()
        return url
    }

    @Test("rows lists NSCKRecordMetadata, schema maps its columns and knows the tables, check finds nothing false")
    func mirroring() throws {
        let folder = try TemporaryFolder("cloudkit")
        let url = try Self.store(in: folder.url)
        let before = try FolderSnapshot(folder.url)
        // What SQLite holds, read on a copy.
        let copy = folder.path("facts.sqlite")
        try FileManager.default.copyItem(at: url, to: copy)
        let db = try Connection.open(path: copy.path, mode: .readOnly)
        let names = try db.rows("SELECT ZCKRECORDNAME FROM ANSCKRECORDMETADATA ORDER BY Z_PK").compactMap { $0[0].string }

        let rows = try CLI.run(["rows", url.path, "NSCKRecordMetadata", "--format", "json"])
        #expect(rows.status == 0, "\(rows.stderr)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(rows.stdout.utf8)) as? [String: Any])
        let listed = (json["rows"] as? [[String: Any]]) ?? []
        #expect(listed.count == names.count)
        #expect(listed.compactMap { ($0["values"] as? [String: Any])?["ckrecordname"] as? String } == names, "\(listed.first ?? [:])")

        let schema = try CLI.run(["schema", url.path, "--format", "json"])
        #expect(schema.status == 0, "\(schema.stderr)")
        let s = try #require(try JSONSerialization.jsonObject(with: Data(schema.stdout.utf8)) as? [String: Any])
        #expect((s["problems"] as? [String]) == [], "\(s["problems"] ?? "")")
        #expect((s["unknownTables"] as? [String]) == [], "history and CloudKit tables are known: \(s["unknownTables"] ?? "")")
        #expect(((s["unknownColumns"] as? [Any]) ?? []).isEmpty, "\(s["unknownColumns"] ?? "")")
        let entities = ((s["entities"] as? [[String: Any]]) ?? []).compactMap { $0["name"] as? String }
        #expect(entities.contains("NSCKRecordMetadata") && entities.contains("NSCKRecordZone"))

        let check = try CLI.run(["check", url.path, "--format", "json"])
        #expect(check.status == 0, "\(check.stdout)\(check.stderr)")
        #expect(try FolderSnapshot(folder.url).entries.filter { $0.key != copy.path } == before.entries)
    }
}
