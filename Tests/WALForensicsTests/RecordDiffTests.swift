import CoreDataStore
import Foundation
import SQLiteAccess
import StoreBuilder
import StoreFormats
import StoreTestSupport
import Testing
@testable import WALForensics

/// `wal --diff` record by record, checked against SQLite itself: for every commit k the WAL is cut
/// after commit k's frame and SQLite opens that copy; the rows it shows at k − 1 and k are the truth
/// every inserted, updated and deleted record (and its values) is compared with.
@Suite("What the WAL changed, record by record")
struct RecordDiffTests {
    /// Checks every commit's record diff against SQLite's images; returns them for further checks.
    @discardableResult
    static func checkEveryCommit(_ copy: SQLiteWALBuilder.Copy, evidence: WALEvidence) throws -> [RecordDiff] {
        let wal = try #require(evidence.wal)
        let pageSize = try #require(wal.pageSize)
        var diffs: [RecordDiff] = []
        var commits: [Int] = []
        try RecordDiff.forEachCommit(evidence) { commit, diff in
            commits.append(commit)
            diffs.append(diff)
        }
        #expect(commits == Array(1...evidence.commitCount))
        var before = try RecordTruth.sqliteImage(copy, frames: 0, pageSize: pageSize)
        for (index, diff) in diffs.enumerated() {
            let commit = index + 1
            let after = try RecordTruth.sqliteImage(copy, frames: wal.transactions[index].commitFrame, pageSize: pageSize)
            #expect(diff.diff.from == commit - 1 && diff.diff.to == commit)
            let names = AttributeNames.read(try PointInTime.open(evidence, commit: commit))
            let fieldColumns = try RecordTruth.fieldColumns(try PointInTime.open(evidence, commit: commit))
            for table in Set(before.keys).union(after.keys).sorted() {
                let old = before[table] ?? [:], new = after[table] ?? [:]
                let records = diff.groups.filter { $0.group.table == table }.flatMap(\.records)
                func pks(_ kind: RecordChange.Kind) -> Set<Int64> { Set(records.filter { $0.kind == kind }.compactMap(\.pk)) }
                // Updated: a value differs in a column both states have (a dropped or added column is not an update).
                func same(_ a: [String: DatabaseValue]?, _ b: [String: DatabaseValue]?) -> Bool {
                    guard let a, let b else { return a == nil && b == nil }
                    return Set(a.keys).intersection(b.keys).allSatisfy { a[$0] == b[$0] }
                }
                let differing = Set(old.keys).intersection(new.keys).filter { !same(old[$0], new[$0]) }
                #expect(pks(.inserted) == Set(new.keys).subtracting(old.keys), "commit \(commit) \(table) inserted")
                #expect(pks(.deleted) == Set(old.keys).subtracting(new.keys), "commit \(commit) \(table) deleted")
                #expect(pks(.updated) == differing, "commit \(commit) \(table) updated")
                // Each value is the stored one: of the later state for inserts, the earlier for deletes.
                // Which stored columns a shown name stands for: the rows reader's fields, else the column itself.
                func columns(_ name: String) -> [String] { fieldColumns[table]?[name] ?? [name] }
                // The names a changed column may be shown under: its property (a composite's element by the
                // composite's name), or the column itself when no property shows it.
                func shownNames(_ column: String) -> Set<String> {
                    var out: Set<String> = [column]
                    for (name, cols) in fieldColumns[table] ?? [:] where cols.contains(column) { out.insert(name) }
                    return out
                }
                for r in records {
                    guard let pk = r.pk else { continue }
                    switch r.kind {
                    case .inserted, .deleted:
                        let row = (r.kind == .inserted ? new : old)[pk] ?? [:]
                        #expect(!r.values.isEmpty, "commit \(commit) \(table)#\(pk) has values")
                        for v in r.values {
                            // A property whose column this state lacks has no value.
                            if columns(v.name).isEmpty, case .null = v.value { continue }
                            #expect(columns(v.name).contains { RecordTruth.matches(v.value, row[$0]) },
                                    "commit \(commit) \(table)#\(pk) \(r.kind) \(v.name): \(v.value) vs \(columns(v.name).map { row[$0] as Any })")
                        }
                    case .updated:
                        let was = old[pk] ?? [:], now = new[pk] ?? [:]
                        let changedColumns = Set(was.keys).intersection(now.keys).filter { was[$0] != now[$0] && $0 != "Z_OPT" }
                        let shown = Set(r.changes.map(\.name))
                        for c in changedColumns {
                            #expect(!shown.isDisjoint(with: shownNames(c)), "commit \(commit) \(table)#\(pk) column \(c) changed: \(shown)")
                        }
                        for name in shown {
                            #expect(columns(name).contains(where: changedColumns.contains), "commit \(commit) \(table)#\(pk) \(name) did change")
                        }
                        for c in r.changes {
                            #expect(columns(c.name).contains { RecordTruth.matches(c.old, was[$0]) }, "commit \(commit) \(table)#\(pk) \(c.name) old")
                            #expect(columns(c.name).contains { RecordTruth.matches(c.new, now[$0]) }, "commit \(commit) \(table)#\(pk) \(c.name) new")
                        }
                    }
                }
            }
            // The history transactions of this commit: the ATRANSACTION rows it inserted, as SQLite shows them.
            if let transactions = after["ATRANSACTION"] {
                let inserted = Set(transactions.keys).subtracting((before["ATRANSACTION"] ?? [:]).keys)
                let found = try #require(diff.transactions, "commit \(commit) reads history")
                #expect(Set(found.map(\.id)) == inserted, "commit \(commit) transactions")
                for t in found { #expect(t.referenceSeconds == transactions[t.id]?["ZTIMESTAMP"]?.double) }
            } else {
                #expect(diff.transactions == nil)
            }
            before = after
        }
        return diffs
    }

    @Test("a Core Data store with several WAL commits: every commit's records and values are what SQLite shows")
    func builderStore() throws {
        let folder = try TemporaryFolder("record-diff")
        let url = folder.path("default.store")
        let writer = try StoreWriter(url: url, model: SampleModels.todo)
        let day = Date(timeIntervalSince1970: 1_722_000_000)
        try writer.transaction { w in
            _ = try w.insert("TodoList", ["name": .string("Home")])
            _ = try w.insert("TodoList", ["name": .string("Work")])
            for i in 1...6 {
                try w.insert("TodoItem", ["id": .uuid(UUID()), "title": .string("task \(i)"), "createdAt": .date(day),
                                          "list": .object(entity: "TodoList", pk: 1)])
            }
        }
        try writer.checkpoint()
        try writer.transaction(.init(author: "sync", bundleID: "com.example.todo")) { w in
            try w.insert("TodoItem", ["id": .uuid(UUID()), "title": .string("=1+2 \u{1B}[31m"), "createdAt": .date(day.addingTimeInterval(0.5)),
                                      "notes": .string("from the WAL"), "list": .object(entity: "TodoList", pk: 2)])
        }
        try writer.transaction(.init(author: "app", bundleID: "com.example.todo", contextName: "editor")) { w in
            try w.update("TodoItem", pk: 3, ["title": .string("renamed"), "isCompleted": .bool(true), "createdAt": .date(day.addingTimeInterval(60))])
            try w.update("TodoItem", pk: 4, ["list": .object(entity: "TodoList", pk: 2)])
            try w.delete("TodoItem", pk: 5)
        }
        try writer.transaction(.init(bundleID: "com.example.todo.widget")) { w in
            try w.update("TodoList", pk: 1, ["name": .string("Home & Garden")])
            try w.delete("TodoItem", pk: 7)
            try w.insert("TodoItem", ["id": .uuid(UUID()), "title": .string("task 8"), "createdAt": .date(day), "list": .object(entity: "TodoList", pk: 1)])
        }
        let main = try Data(contentsOf: url)
        let walData = try Data(contentsOf: URL(fileURLWithPath: url.path + "-wal"))
        try writer.close(leavingWAL: true)
        let copy = try SQLiteWALBuilder.Copy.holding(main: main, wal: walData, in: folder.path("copy"))
        let evidence = WALEvidence(displayPath: "default.store", mainFile: main, walData: walData)
        #expect(evidence.commitCount == 3)

        let diffs = try Self.checkEveryCommit(copy, evidence: evidence)
        // What each kind looks like, beyond the generic check: a date, a UUID, a to-one.
        let third = try #require(diffs.dropFirst().first)
        let item = try #require(third.groups.first { $0.group.entity == "TodoItem" })
        let renamed = try #require(item.records.first { $0.pk == 3 })
        #expect(renamed.kind == .updated)
        #expect(Set(renamed.changes.map(\.name)) == ["title", "isCompleted", "createdAt"])
        let moved = try #require(item.records.first { $0.pk == 4 })
        if case .object(let entity, let pk)? = moved.changes.first(where: { $0.name == "list" })?.new {
            #expect(entity == "TodoList" && pk == 2)
        } else {
            Issue.record("the to-one change is decoded as Entity#pk")
        }
        let gone = try #require(item.records.first { $0.pk == 5 })
        #expect(gone.kind == .deleted)
        if case .uuid? = gone.values.first(where: { $0.name == "id" })?.value {} else { Issue.record("a UUID attribute decodes as a UUID") }
        if case .date? = gone.values.first(where: { $0.name == "createdAt" })?.value {} else { Issue.record("a date attribute decodes as a date") }
        // The transaction each commit wrote, with its writer.
        #expect(third.transactions?.map(\.author) == ["app"])
        #expect(third.transactions?.first?.contextName == "editor")
        #expect(diffs.last?.transactions?.first?.bundleID == "com.example.todo.widget")

        // One diff over the whole WAL: the main file against the last commit, with the same truth.
        let whole = try RecordDiff.compute(evidence)
        let records = whole.groups.filter { $0.group.entity == "TodoItem" }.flatMap(\.records)
        #expect(Set(records.filter { $0.kind == .deleted }.compactMap(\.pk)) == [5])
        #expect(Set(records.filter { $0.kind == .inserted }.compactMap(\.pk)) == [8])
        #expect(whole.transactions?.count == 3)
    }

    @Test("plain SQLite: composite keys and keyless tables are shown column by column, or only counted")
    func plainSQLite() throws {
        var builder = try SQLiteWALBuilder("record-plain") { db in
            try db.execute("""
                CREATE TABLE Z_1ITEMS (Z_1LISTS INTEGER, Z_2ITEMS INTEGER, PRIMARY KEY (Z_1LISTS, Z_2ITEMS));
                CREATE TABLE log (message TEXT);
                CREATE TABLE kv (k TEXT PRIMARY KEY, v) WITHOUT ROWID;
                INSERT INTO Z_1ITEMS VALUES (1, 1), (1, 2);
                INSERT INTO log VALUES ('a');
                INSERT INTO kv VALUES ('one', 1), ('two', 2);
                """)
        }
        try builder.commit("DELETE FROM Z_1ITEMS WHERE Z_2ITEMS = 2; INSERT INTO Z_1ITEMS VALUES (2, 9); INSERT INTO log VALUES ('b'); UPDATE kv SET v = 22 WHERE k = 'two'")
        let diff = try RecordDiff.compute(try builder.copy().evidence())
        #expect(diff.transactions == nil)
        let join = try #require(diff.groups.first { $0.group.table == "Z_1ITEMS" })
        #expect(join.records.map(\.kind) == [.inserted, .deleted])
        #expect(join.records.first?.key == [.integer(2), .integer(9)])
        #expect(join.records.last?.values.map(\.name) == ["Z_1LISTS", "Z_2ITEMS"])
        #expect(try #require(diff.groups.first { $0.group.table == "log" }).records.isEmpty)
        let kv = try #require(diff.groups.first { $0.group.table == "kv" }?.records.first)
        #expect(kv.kind == .updated && kv.changes.map(\.name) == ["v"])
        if case .integer(2) = kv.changes.first?.old, case .integer(22) = kv.changes.first?.new {} else { Issue.record("kv.v 2 → 22") }
    }

    @Test("the genuine SwiftData store: every commit's records against SQLite, deleted items with their names", .enabled(if: ProjectPaths.hasRealFixtures, Comment(rawValue: ProjectPaths.realFixturesMissing)))
    func realStore() throws {
        let real = try #require(ProjectPaths.realFixtures()).appendingPathComponent("swiftdata-resources")
        let folder = try TemporaryFolder("record-real")
        let copy = try SQLiteWALBuilder.Copy.of(store: real.appendingPathComponent("default.store"),
                                                wal: real.appendingPathComponent("default.store-wal"), in: folder.url)
        let evidence = try copy.evidence(withSharedMemory: false)
        let diffs = try Self.checkEveryCommit(copy, evidence: evidence)
        #expect(diffs.count == evidence.commitCount)

        // Every Item deleted in some commit, named as SQLite shows it just before that commit.
        let wal = try #require(evidence.wal)
        var expected: [String] = []
        var previous = try RecordTruth.sqliteImage(copy, frames: 0, pageSize: 4096)["ZITEM"] ?? [:]
        for transaction in wal.transactions {
            let now = try RecordTruth.sqliteImage(copy, frames: transaction.commitFrame, pageSize: 4096)["ZITEM"] ?? [:]
            expected += Set(previous.keys).subtracting(now.keys).sorted().compactMap { previous[$0]?["ZNAME"]?.string }
            previous = now
        }
        let shown = diffs.flatMap { $0.groups.filter { $0.group.entity == "Item" }.flatMap(\.records) }
            .filter { $0.kind == .deleted }
            .compactMap { r -> String? in
                if case .text(let name)? = r.values.first(where: { $0.name == "name" })?.value { return name }
                return nil
            }
        #expect(!expected.isEmpty)
        #expect(shown == expected)
    }

    @Test("subentities, a transformable, a composite, external data, a decimal and an FEK: every commit against SQLite, values as rows decodes them")
    func libraryStore() throws {
        let folder = try TemporaryFolder("record-library")
        let live = folder.path("live")
        try FileManager.default.createDirectory(at: live, withIntermediateDirectories: true)
        let url = live.appendingPathComponent("db.sqlite")
        try LibraryStore.write(url)
        // More commits on top of the builder's WAL, written by SQLite itself, copied while it holds the store open.
        let writer = try Connection.open(path: url.path, mode: .readWrite)
        try writer.execute("PRAGMA wal_autocheckpoint = 0")
        try writer.disableCheckpointOnClose()
        let names = AttributeNames.read(writer)
        func column(_ table: String, _ name: String) throws -> String {
            try #require(names[table]?.first { $0.value == name }?.key, "\(table).\(name)")
        }
        let preferences = try column("ZBORROWER", "preferences"), city = try column("ZBORROWER", "address.city")
        let shelf = try #require(names["ZMEDIA"]?.first { $0.value == "shelf" && !$0.key.hasPrefix("Z_FOK_") }?.key)
        let title = try column("ZMEDIA", "title")
        let archive = KeyedArchiveWriter()
        let prefs = try archive.finish(root: archive.dictionary(keys: [archive.string("theme")], values: [archive.string("light")]))
        try writer.execute("BEGIN")
        try writer.run("UPDATE ZBORROWER SET \(Identifier.quoted(preferences)) = ?, \(Identifier.quoted(city)) = 'Shelbyville', Z_OPT = Z_OPT + 1 WHERE Z_PK = 1", [.blob(prefs)])
        try writer.execute("UPDATE ZMEDIA SET \(Identifier.quoted(shelf)) = NULL, Z_OPT = Z_OPT + 1 WHERE Z_PK = 1; COMMIT")
        try writer.execute("BEGIN; DELETE FROM ZMEDIA WHERE Z_PK = 2; INSERT INTO ZMEDIA (Z_PK, Z_ENT, Z_OPT, \(Identifier.quoted(title))) VALUES (4, 5, 1, 'Arrival'); COMMIT")
        try writer.execute("BEGIN; DELETE FROM ZBORROWER WHERE Z_PK = 1; COMMIT")
        let copyFolder = folder.path("copy")
        try FileManager.default.createDirectory(at: copyFolder, withIntermediateDirectories: true)
        let copy = SQLiteWALBuilder.Copy(folder: copyFolder)
        try FileManager.default.copyItem(at: url, to: copy.db)
        try FileManager.default.copyItem(atPath: url.path + "-wal", toPath: copy.wal.path)
        let evidence = try copy.evidence(withSharedMemory: false)
        #expect(evidence.commitCount == 4)

        let diffs = try Self.checkEveryCommit(copy, evidence: evidence)
        // Every inserted and deleted record's values are exactly what the rows reader decodes for that row.
        for (index, diff) in diffs.enumerated() {
            let states = [try PointInTime.open(evidence, commit: index), try PointInTime.open(evidence, commit: index + 1)]
            for record in diff.groups.flatMap(\.records) where record.kind != .updated {
                let connection = states[record.kind == .deleted ? 0 : 1]
                guard let pk = record.pk, let store = try CoreDataStore.read(connection),
                      let entity = record.entity, store.entities.contains(where: { $0.name == entity }) else { continue }
                let map = try SchemaMap.build(model: try ModelLoader.load(connection: connection, store: store), store: store, connection: connection)
                guard let mapping = map.entity(named: entity) else { continue }
                var shown: [String] = []
                try RowReader(map: map, entity: mapping, decoder: ValueDecoder()).forEach(connection, primaryKeys: [pk]) { row in
                    shown = row.values.map { "\($0.name)=\($0.value)" }
                }
                // The properties rows shows, in its order; anything else is a column no property shows, named as stored.
                let columns = Set(try connection.rows("SELECT name FROM pragma_table_info(?)", [.text(record.table)]).compactMap { $0[0].string })
                #expect(Array(record.values.map { "\($0.name)=\($0.value)" }.prefix(shown.count)) == shown, "commit \(index + 1) \(entity)#\(pk)")
                for extra in record.values.dropFirst(shown.count) { #expect(columns.contains(extra.name), "\(extra.name) is a column") }
            }
        }
        // The kinds of value, one by one.
        let first = try #require(diffs.dropFirst().first)
        let borrower = try #require(first.groups.first { $0.group.entity == "Borrower" }?.records.first)
        #expect(Set(borrower.changes.map(\.name)) == ["preferences", "address"])
        if case .archived(let tree)? = borrower.changes.first(where: { $0.name == "preferences" })?.new {
            #expect("\(tree)".contains("light"))
        } else { Issue.record("the transformable decodes as a keyed-archive tree") }
        let third = try #require(diffs.dropFirst(2).first)
        let media = third.groups.filter { $0.group.table == "ZMEDIA" }.flatMap(\.records)
        #expect(media.first { $0.kind == .deleted }?.entity == "Audiobook")
        #expect(media.first { $0.kind == .inserted }?.entity == "Film")
        let gone = try #require(diffs.last?.groups.first { $0.group.entity == "Borrower" }?.records.first)
        #expect(gone.kind == .deleted)
        if case .uuid(let id)? = gone.values.first(where: { $0.name == "id" })?.value { #expect(id == LibraryStore.borrowerID.uuidString) } else {
            Issue.record("the deleted borrower's UUID")
        }
        if case .composite? = gone.values.first(where: { $0.name == "address" })?.value {} else { Issue.record("the composite address") }
    }

    @Test("a mapped column dropped inside the WAL: each state is decoded by its own schema, the diff stands, --each compares that commit in full")
    func modelThatDoesNotFit() throws {
        let folder = try TemporaryFolder("record-misfit")
        let url = folder.path("db.sqlite")
        let writer = try StoreWriter(url: url, model: SampleModels.todo)
        try writer.transaction { w in
            _ = try w.insert("TodoList", ["name": .string("Home")])
            _ = try w.insert("TodoItem", ["id": .uuid(UUID()), "title": .string("kept"), "createdAt": .date(Date()), "list": .object(entity: "TodoList", pk: 1)])
        }
        try writer.close()
        let db = try Connection.open(path: url.path, mode: .readWrite)
        try db.execute("PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0")
        try db.disableCheckpointOnClose()
        try db.execute("BEGIN; ALTER TABLE ZTODOITEM DROP COLUMN ZNOTES; INSERT INTO ZTODOITEM (Z_PK, Z_ENT, Z_OPT, ZTITLE) VALUES (9, (SELECT Z_ENT FROM Z_PRIMARYKEY WHERE Z_NAME = 'TodoItem'), 1, 'raw'); COMMIT")
        let evidence = WALEvidence(displayPath: "db.sqlite", mainFile: try Data(contentsOf: url),
                                   walData: try Data(contentsOf: URL(fileURLWithPath: url.path + "-wal")))
        let diff = try RecordDiff.compute(evidence)
        // --each compares a commit that changed the schema in full.
        try Self.checkEveryCommit(SQLiteWALBuilder.Copy(folder: folder.url), evidence: evidence)
        let inserted = try #require(diff.groups.first { $0.group.entity == "TodoItem" }?.records.first { $0.kind == .inserted })
        #expect(inserted.pk == 9)
        // Each state is mapped by its own schema: the dropped column reads as no value, as rows reads it.
        #expect(inserted.values.map(\.name) == ["createdAt", "id", "isCompleted", "notes", "title", "list"])
        if case .text("raw")? = inserted.values.first(where: { $0.name == "title" })?.value {} else { Issue.record("title") }
        if case .null? = inserted.values.first(where: { $0.name == "notes" })?.value {} else { Issue.record("notes has no column") }
    }
}
