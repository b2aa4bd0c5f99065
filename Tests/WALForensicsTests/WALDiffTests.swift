import Foundation
import SQLiteAccess
import StoreBuilder
import StoreFormats
import StoreTestSupport
import Testing
@testable import WALForensics

/// `--diff`: rows inserted, updated and deleted between two states, per
/// entity, computed set against set inside SQLite.
@Suite("What the WAL changed")
struct WALDiffTests {
    func pks(_ keys: [WALDiff.RowKey]) -> [Int] { keys.compactMap { $0.first?.int } }

    @Test("a Core Data store written with the store builder: entity names, attribute names, commit ranges")
    func coreDataStore() throws {
        let folder = try TemporaryFolder("diff-coredata")
        let url = folder.path("default.store")
        let writer = try StoreWriter(url: url, model: SampleModels.todo)
        try writer.transaction { w in
            let list = try w.insert("TodoList", ["name": .string("Home")])
            for i in 1...10 {
                try w.insert("TodoItem", ["id": .uuid(UUID()), "title": .string("task \(i)"), "createdAt": .date(Date(timeIntervalSince1970: 0)),
                                          "list": .object(entity: "TodoList", pk: list)])
            }
        }
        try writer.checkpoint()
        try writer.transaction { w in
            for i in 11...12 {
                try w.insert("TodoItem", ["id": .uuid(UUID()), "title": .string("task \(i)"), "createdAt": .date(Date(timeIntervalSince1970: 0)),
                                          "list": .object(entity: "TodoList", pk: 1)])
            }
        }
        try writer.transaction { w in
            try w.update("TodoItem", pk: 3, ["title": .string("renamed"), "isCompleted": .bool(true)])
            try w.delete("TodoItem", pk: 4)
        }
        try writer.transaction { w in
            try w.update("TodoList", pk: 1, ["name": .string("Work")])
        }
        let main = try Data(contentsOf: url)
        let walData = try Data(contentsOf: URL(fileURLWithPath: url.path + "-wal"))
        try writer.close(leavingWAL: true)
        let evidence = WALEvidence(displayPath: "default.store", mainFile: main, walData: walData)
        #expect(evidence.commitCount == 3)

        let names = AttributeNames.read(try PointInTime.open(evidence, commit: nil))
        let diff = try WALDiff.compute(evidence, attributeNames: names)
        let item = try #require(diff.groups.first { $0.entity == "TodoItem" })
        #expect(item.table == "ZTODOITEM")
        #expect(item.keyColumns == ["Z_PK"])
        #expect(pks(item.inserted) == [11, 12])
        #expect(pks(item.deleted) == [4])
        #expect(item.updated.map { $0.key.first?.int } == [3])
        #expect(item.updated.first?.changedColumns == ["Z_OPT", "ZISCOMPLETED", "ZTITLE"])
        #expect(item.updated.first?.changedAttributes.map(Set.init) == ["isCompleted", "title"])
        #expect(item.unchanged == 8)
        let list = try #require(diff.groups.first { $0.entity == "TodoList" })
        #expect(list.updated.first?.changedAttributes == ["name"])
        #expect(list.insertedCount == 0 && list.deletedCount == 0)
        // History rows are entities too.
        #expect(diff.groups.first { $0.entity == "TRANSACTION" }?.insertedCount == 3)

        // Only the second commit.
        let middle = try WALDiff.compute(evidence, from: 1, to: 2)
        let middleItem = try #require(middle.groups.first { $0.entity == "TodoItem" })
        #expect(middleItem.inserted.isEmpty)
        #expect(pks(middleItem.deleted) == [4])
        #expect(middleItem.updated.map(\.changedColumns) == [["Z_OPT", "ZISCOMPLETED", "ZTITLE"]])
        #expect(middle.groups.first { $0.entity == "TodoList" }?.isUnchanged == true)
        // Nothing between a state and itself.
        #expect(try WALDiff.compute(evidence, from: 2, to: 2).groups.allSatisfy(\.isUnchanged))
        // Out of range names the option and the store.
        let error = try #require(throws: WALForensicsError.self) { try WALDiff.compute(evidence, from: 4) }
        #expect(error.description.hasPrefix("default.store has 3 valid WAL commits, so --from 4 is out of range"))
    }

    @Test("plain SQLite: composite keys, keyless tables, WITHOUT ROWID, odd names, tables added and dropped")
    func plainSQLite() throws {
        var builder = try SQLiteWALBuilder("diff-plain") { db in
            try db.execute("""
                CREATE TABLE Z_1ITEMS (Z_1LISTS INTEGER, Z_2ITEMS INTEGER, PRIMARY KEY (Z_1LISTS, Z_2ITEMS));
                CREATE TABLE log (message TEXT);
                CREATE TABLE kv (k TEXT PRIMARY KEY, v) WITHOUT ROWID;
                CREATE TABLE "we""ird; name" ("co""l" INTEGER PRIMARY KEY, "va lue" TEXT);
                CREATE TABLE doomed (x);
                INSERT INTO Z_1ITEMS VALUES (1, 1), (1, 2), (2, 3);
                INSERT INTO log VALUES ('a'), ('b'), ('b');
                INSERT INTO kv VALUES ('one', 1), ('two', 2);
                INSERT INTO "we""ird; name" VALUES (1, 'x'), (2, 'y');
                INSERT INTO doomed VALUES (1);
                """)
        }
        try builder.commit("""
            DELETE FROM Z_1ITEMS WHERE Z_2ITEMS = 2; INSERT INTO Z_1ITEMS VALUES (2, 9);
            INSERT INTO log VALUES ('c'); DELETE FROM log WHERE message = 'a';
            UPDATE kv SET v = 22 WHERE k = 'two'; INSERT INTO kv VALUES ('three', 3);
            UPDATE "we""ird; name" SET "va lue" = 'z' WHERE "co""l" = 2;
            DROP TABLE doomed; CREATE TABLE fresh (y); INSERT INTO fresh VALUES (1), (2)
            """)
        let copy = try builder.copy()
        let diff = try WALDiff.compute(try copy.evidence())
        func group(_ table: String) throws -> WALDiff.Group { try #require(diff.groups.first { $0.table == table }) }

        let join = try group("Z_1ITEMS")
        #expect(join.entity == nil)
        #expect(join.keyColumns == ["Z_1LISTS", "Z_2ITEMS"])
        #expect(join.inserted == [[.integer(2), .integer(9)]])
        #expect(join.deleted == [[.integer(1), .integer(2)]])
        #expect(join.unchanged == 2)

        let log = try group("log")
        #expect(log.keyColumns.isEmpty)
        #expect(log.insertedCount == 1 && log.deletedCount == 1 && log.inserted.isEmpty)

        let kv = try group("kv")
        #expect(kv.inserted == [[.text("three")]])
        #expect(kv.updated.map(\.key) == [[.text("two")]])
        #expect(kv.updated.first?.changedColumns == ["v"])
        #expect(kv.updated.first?.changedAttributes == nil)

        let weird = try group("we\"ird; name")
        #expect(weird.updated.first?.changedColumns == ["va lue"])
        #expect(weird.unchanged == 1)

        #expect(diff.tablesAdded == ["fresh"])
        #expect(diff.tablesRemoved == ["doomed"])
        #expect(try group("fresh").insertedCount == 2)
        #expect(try group("doomed").deletedCount == 1)
    }

    @Test("subentities in one table are told apart by Z_ENT; a large table with few changes is compared set-wise")
    func subentitiesAndScale() throws {
        var builder = try SQLiteWALBuilder("diff-scale") { db in
            try db.execute("""
                CREATE TABLE Z_PRIMARYKEY (Z_ENT INTEGER PRIMARY KEY, Z_NAME VARCHAR, Z_SUPER INTEGER, Z_MAX INTEGER);
                CREATE TABLE Z_METADATA (Z_VERSION INTEGER PRIMARY KEY, Z_UUID VARCHAR(255), Z_PLIST BLOB);
                INSERT INTO Z_PRIMARYKEY VALUES (1, 'Shape', 0, 0), (2, 'Circle', 1, 0), (3, 'Square', 1, 0);
                CREATE TABLE ZSHAPE (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZNAME VARCHAR, ZRADIUS FLOAT, ZSIDE FLOAT);
                """)
            try db.execute("BEGIN")
            let insert = try db.prepare("INSERT INTO ZSHAPE VALUES (?, ?, 1, ?, ?, ?)")
            for pk in 1...200_000 {
                try insert.bind([.integer(Int64(pk)), .integer(pk % 2 == 0 ? 2 : 3), .text("shape \(pk)"),
                                 pk % 2 == 0 ? .real(Double(pk)) : .null, pk % 2 == 0 ? .null : .real(Double(pk))])
                _ = try insert.step()
            }
            try db.execute("COMMIT")
        }
        try builder.commit("""
            UPDATE ZSHAPE SET ZRADIUS = 1.5, Z_OPT = 2 WHERE Z_PK = 100000;
            DELETE FROM ZSHAPE WHERE Z_PK IN (7, 8);
            INSERT INTO ZSHAPE VALUES (200001, 2, 1, 'new circle', 3, NULL)
            """)
        let copy = try builder.copy()
        let clock = ContinuousClock()
        var diff: WALDiff?
        let elapsed = try clock.measure { diff = try WALDiff.compute(try copy.evidence()) }
        print("diff of a 200,000-row table: \(elapsed)")
        let circles = try #require(diff?.groups.first { $0.entity == "Circle" })
        let squares = try #require(diff?.groups.first { $0.entity == "Square" })
        #expect(pks(circles.inserted) == [200_001])
        #expect(pks(circles.deleted) == [8])
        #expect(circles.updated.map { $0.key.first?.int } == [100_000])
        #expect(circles.updated.first?.changedColumns == ["Z_OPT", "ZRADIUS"])
        #expect(circles.unchanged == 100_000 - 2)
        #expect(pks(squares.deleted) == [7])
        #expect(squares.unchanged == 100_000 - 1)
        #expect(diff?.groups.first { $0.entity == "Shape" } == nil, "no row has the abstract parent's Z_ENT")
    }
}
