import Acquisition
import Checks
import CoreDataStore
import Findings
import Foundation
import Repair
import SQLiteAccess
import StoreBuilder
import StoreFormats
import StoreTestSupport
import Testing

@Suite("Repair on a copy")
struct RepairTests {
    static func acquire(_ url: URL, session: EvidenceSession) throws -> AcquiredStore {
        try #require(try session.stores(from: [url.path]).first)
    }

    static func checkIDs(_ url: URL) throws -> [String] {
        let session = try EvidenceSession()
        defer { session.scratch.remove() }
        let store = try acquire(url, session: session)
        let opened = try OpenedStore.open(store.copy, displayPath: url.path)
        return try StoreChecker(opened: opened, notes: store.copy.notes).run().map(\.id)
    }

    struct Case: Sendable, CustomStringConvertible {
        let id: String
        let action: String
        let plant: @Sendable (StoreWriter) throws -> Void
        var description: String { id }
    }

    static let cases: [Case] = [
        Case(id: "zmax-below-max-pk", action: "raise-z-max") { try $0.executeRaw("UPDATE Z_PRIMARYKEY SET Z_MAX = 1 WHERE Z_NAME = 'Note'") },
        Case(id: "dangling-to-one", action: "nullify-dangling-to-one") { w in
            try w.executeRaw("UPDATE ZATTACHMENT SET \(w.layout.column(entity: "Attachment", property: "note")!) = 999 WHERE Z_PK = 1")
        },
        Case(id: "fek-mismatch", action: "fix-entity-key") { w in
            try w.executeRaw("UPDATE ZATTACHMENT SET \(w.layout.foreignEntityKeyColumn(entity: "Attachment", relationship: "note")!) = 1 WHERE Z_PK = 2")
        },
        Case(id: "one-to-one-mismatch", action: "align-one-to-one") { w in
            try w.executeRaw("UPDATE ZPROFILE SET \(w.layout.column(entity: "Profile", property: "account")!) = NULL WHERE Z_PK = 1")
        },
        Case(id: "orphan-join-rows", action: "delete-orphan-join-rows") { w in
            let j = w.layout.joinTables[0]
            try w.executeRaw("INSERT INTO \(j.name) (\(j.firstColumn), \(j.secondColumn)) VALUES (999, 1)")
        },
        Case(id: "unique-duplicates", action: "resolve-duplicates") { w in
            try w.executeRaw("DROP INDEX Z_Tag_UNIQUE_name")
            try w.executeRaw("UPDATE ZTAG SET ZNAME = 'a', Z_OPT = 5 WHERE Z_PK = 2")
        },
        Case(id: "bad-z-opt", action: "set-z-opt") { try $0.executeRaw("UPDATE ZACCOUNT SET Z_OPT = NULL WHERE Z_PK = 1") },
    ]

    @Test("each repairable problem: planned, repaired on a copy, the check passes on the output, the input is unchanged", arguments: cases)
    func repair(_ c: Case) throws {
        let folder = try TemporaryFolder("repair-\(c.id)")
        let url = try InvariantFixture.make(in: folder.url) { try c.plant($0) }
        #expect(try Self.checkIDs(url) == [c.id])
        let before = try FolderSnapshot(folder.url)
        let out = try TemporaryFolder("repair-out")
        let session = try EvidenceSession()
        defer { session.scratch.remove() }
        let outcome = try Repairer(session: session, store: try Self.acquire(url, session: session)).run(output: out.path("fixed.store"))
        try session.finish()
        #expect(try FolderSnapshot(folder.url) == before, "the input is byte-identical")
        #expect(outcome.written)
        #expect(outcome.plan.actions.map(\.name) == [c.action])
        #expect(outcome.changes.first ?? 0 > 0)
        #expect(try Self.checkIDs(out.path("fixed.store")).isEmpty, "every check passes on the output")
        // Untouched tables hash as before; the output keeps metadata and model cache.
        for (table, hash) in outcome.tablesBefore where !outcome.plan.touchedTables.contains(table) {
            #expect(outcome.tablesAfter[table] == hash, "\(table)")
        }
        #expect(!FileManager.default.fileExists(atPath: out.path("fixed.store").path + "-wal"), "the WAL is merged")
        #expect(FileManager.default.fileExists(atPath: out.path(".fixed_SUPPORT/_EXTERNAL_DATA").path), "external data comes along")
        let db = try Connection.open(path: out.path("fixed.store").path, mode: .readOnly)
        #expect(try db.scalar("SELECT count(*) FROM Z_MODELCACHE").int == 1)
        #expect(try db.scalar("SELECT Z_UUID FROM Z_METADATA").string != nil)
        #expect(try db.journalMode() == "wal", "same journal mode as the input")
    }

    @Test("duplicates keep the row the rule says, and references move to it")
    func duplicatesKeepRule() throws {
        let folder = try TemporaryFolder("repair-dups")
        let url = try InvariantFixture.make(in: folder.url) { w in
            try w.executeRaw("DROP INDEX Z_Tag_UNIQUE_name")
            try w.executeRaw("UPDATE ZTAG SET ZNAME = 'a', Z_OPT = 5 WHERE Z_PK = 2")
        }
        for (rule, kept) in [(KeepRule.highestOpt, 2), (.oldest, 1)] {
            let out = try TemporaryFolder("repair-dups-out")
            let session = try EvidenceSession()
            var repairer = Repairer(session: session, store: try Self.acquire(url, session: session))
            repairer.keep = rule
            _ = try repairer.run(output: out.path("f.store"))
            session.scratch.remove()
            let db = try Connection.open(path: out.path("f.store").path, mode: .readOnly)
            #expect(try db.rows("SELECT Z_PK FROM ZTAG").map { $0[0].int } == [kept], "\(rule)")
            let layout = try StoreLayout(model: InvariantFixture.model)
            let j = layout.joinTables[0]
            let tagColumn = j.firstEntity == "Tag" ? j.firstColumn : j.secondColumn
            #expect(try db.scalar("SELECT count(*) FROM \(j.name) WHERE \(tagColumn) != ?", [.integer(Int64(kept))]).int == 0,
                    "every note that was tagged with the removed duplicate is tagged with the kept one")
        }
    }

    @Test("--plan writes nothing; a finding without an automatic repair is listed, not touched")
    func planOnly() throws {
        let folder = try TemporaryFolder("repair-plan")
        let url = try InvariantFixture.make(in: folder.url) { w in
            try w.executeRaw("UPDATE Z_PRIMARYKEY SET Z_MAX = 1 WHERE Z_NAME = 'Note'")
            try w.executeRaw("UPDATE ZNOTE SET ZTITLE = NULL WHERE Z_PK = 1")
        }
        let session = try EvidenceSession()
        defer { session.scratch.remove() }
        let (plan, findings) = try Repairer(session: session, store: try Self.acquire(url, session: session)).plan()
        #expect(Set(findings.map(\.id)) == ["zmax-below-max-pk", "required-null"])
        #expect(plan.actions.map(\.name) == ["raise-z-max"])
        #expect(plan.actions.first?.affected == ["2", "3"])
        #expect(plan.unrepaired.map(\.id) == ["required-null"])
    }

    @Test("an existing output is never replaced")
    func neverOverwrites() throws {
        let folder = try TemporaryFolder("repair-exists")
        let url = try InvariantFixture.make(in: folder.url) { try $0.executeRaw("UPDATE Z_PRIMARYKEY SET Z_MAX = 1 WHERE Z_NAME = 'Note'") }
        try Data("keep me".utf8).write(to: folder.path("taken.store"))
        let session = try EvidenceSession()
        defer { session.scratch.remove() }
        #expect(throws: RepairError.outputExists(path: folder.path("taken.store").path)) {
            _ = try Repairer(session: session, store: try Self.acquire(url, session: session)).run(output: folder.path("taken.store"))
        }
        #expect(try String(contentsOf: folder.path("taken.store"), encoding: .utf8) == "keep me")
    }

    @Test("key arithmetic on stored values is checked: the last key that fits, and none past 2^63−1")
    func keyArithmetic() throws {
        #expect(RepairPlanner.nextKey(after: 41) == 42)
        #expect(RepairPlanner.nextKey(after: Int64.max) == nil)
        #expect(RepairPlanner.nextKey(after: Int64.max - 1) == Int64.max)
        #expect(RepairPlanner.lastKey(from: Int64.max - 2, count: 3) == Int64.max)
        #expect(RepairPlanner.lastKey(from: Int64.max - 2, count: 4) == nil)
        #expect(RepairPlanner.lastKey(from: 1, count: Int.max) == Int64.max)
        #expect(RepairPlanner.lastKey(from: 2, count: Int.max) == nil)
        #expect(RepairPlanner.lastKey(from: Int64.min, count: 1) == Int64.min)
        // Allocation keeps one key free for the app's next insert.
        #expect(try RepairPlanner.allocateKeys(zMax: Int64.max - 4, maxPK: 5, count: 3, store: "s", entity: "E") == (Int64.max - 3)...(Int64.max - 1))
        #expect(throws: RepairError.noRoomForKeys(store: "s", entity: "E", value: Int64.max - 3, needed: 3)) {
            try RepairPlanner.allocateKeys(zMax: 5, maxPK: Int64.max - 3, count: 3, store: "s", entity: "E")
        }
        #expect(try RepairPlanner.allocateKeys(zMax: -9, maxPK: -3, count: 2, store: "s", entity: "E") == 1...2)
    }

    @Test("a row whose Z_OPT is already 2^63−1 is bumped to 1, an integer, not to SQLite's overflowed REAL")
    func zOptAtTheTop() throws {
        let folder = try TemporaryFolder("repair-zopt-top")
        let url = try InvariantFixture.make(in: folder.url) { w in
            try w.executeRaw("UPDATE ZATTACHMENT SET \(w.layout.column(entity: "Attachment", property: "note")!) = 999, Z_OPT = 9223372036854775807 WHERE Z_PK = 1")
        }
        let out = try TemporaryFolder("repair-zopt-top-out")
        let session = try EvidenceSession()
        defer { session.scratch.remove() }
        let outcome = try Repairer(session: session, store: try Self.acquire(url, session: session)).run(output: out.path("fixed.store"))
        #expect(outcome.written)
        let db = try Connection.open(path: out.path("fixed.store").path, mode: .readOnly)
        #expect(try db.scalar("SELECT typeof(Z_OPT) || ':' || Z_OPT FROM ZATTACHMENT WHERE Z_PK = 1").string == "integer:1")
    }

    /// Rebuilds `table` as a WITHOUT ROWID table with the same columns, rows and primary key.
    static func withoutRowid(_ w: StoreWriter, _ table: String, key: String, columns: String) throws {
        try w.executeRaw("CREATE TABLE storelens_wr (\(columns), PRIMARY KEY (\(key))) WITHOUT ROWID")
        try w.executeRaw("INSERT INTO storelens_wr SELECT * FROM \(table)")
        try w.executeRaw("DROP TABLE \(table)")
        try w.executeRaw("ALTER TABLE storelens_wr RENAME TO \(table)")
    }

    @Test("WITHOUT ROWID entity and join tables are checked and repaired by their primary key")
    func withoutRowidTables() throws {
        let folder = try TemporaryFolder("repair-without-rowid")
        let layout = try StoreLayout(model: InvariantFixture.model)
        let j = layout.joinTables[0]
        let url = try InvariantFixture.make(in: folder.url) { w in
            let tagColumns = try Connection.open(path: folder.path("default.store").path, mode: .readOnly)
                .columns(of: "ZTAG").map { "\($0.name) \($0.declaredType)" }.joined(separator: ", ")
            try Self.withoutRowid(w, "ZTAG", key: "Z_PK", columns: tagColumns)
            try Self.withoutRowid(w, j.name, key: "\(j.firstColumn), \(j.secondColumn)", columns: "\(j.firstColumn) INTEGER, \(j.secondColumn) INTEGER")
            try w.executeRaw("INSERT INTO \(j.name) (\(j.firstColumn), \(j.secondColumn)) VALUES (999, 1)")
            try w.executeRaw("UPDATE Z_PRIMARYKEY SET Z_MAX = 1 WHERE Z_NAME = 'Tag'")
        }
        // The tables really are WITHOUT ROWID (SQLite says so), so a rowid query would fail.
        do {
            let db = try Connection.open(path: url.path, mode: .readOnly)
            #expect(throws: (any Error).self) { _ = try db.rows("SELECT rowid FROM ZTAG") }
            #expect(throws: (any Error).self) { _ = try db.rows("SELECT rowid FROM \(j.name)") }
        }
        #expect(Set(try Self.checkIDs(url)) == ["zmax-below-max-pk", "orphan-join-rows"])
        let joinRowsBefore: Int
        do {
            let db = try Connection.open(path: url.path, mode: .readOnly)
            joinRowsBefore = try db.scalar("SELECT count(*) FROM \(j.name)").int ?? -1
        }
        let out = try TemporaryFolder("repair-without-rowid-out")
        let session = try EvidenceSession()
        defer { session.scratch.remove() }
        let outcome = try Repairer(session: session, store: try Self.acquire(url, session: session)).run(output: out.path("fixed.store"))
        #expect(outcome.written)
        #expect(Set(outcome.plan.actions.map(\.name)) == ["delete-orphan-join-rows", "raise-z-max"])
        #expect(try Self.checkIDs(out.path("fixed.store")).isEmpty)
        let db = try Connection.open(path: out.path("fixed.store").path, mode: .readOnly)
        let firstIsNote = j.firstEntity == "Note" || j.firstEntity == "ChecklistNote"
        let noteColumn = firstIsNote ? j.firstColumn : j.secondColumn
        #expect(try db.scalar("SELECT count(*) FROM \(j.name)").int == joinRowsBefore - 1, "only the orphan row is gone")
        #expect(try db.scalar("SELECT count(*) FROM \(j.name) WHERE \(noteColumn) = 999 OR \(firstIsNote ? j.secondColumn : j.firstColumn) = 999").int == 0)
    }

    @Test("Z_PK stored as text: raise-z-max is left out with a note instead of a plan that fails its own verification")
    func textKeys() throws {
        let folder = try TemporaryFolder("repair-text-keys")
        let url = try InvariantFixture.make(in: folder.url) { w in
            // The table rebuilt by a CSV import, as in the real coredata-2017-text-keys store: untyped columns, text keys.
            try w.executeRaw("CREATE TABLE storelens_text (Z_PK, Z_ENT, Z_OPT, ZNAME)")
            try w.executeRaw("INSERT INTO storelens_text SELECT CAST(Z_PK AS TEXT), Z_ENT, Z_OPT, ZNAME FROM ZTAG")
            try w.executeRaw("DROP TABLE ZTAG")
            try w.executeRaw("ALTER TABLE storelens_text RENAME TO ZTAG")
        }
        #expect(try Self.checkIDs(url).contains("zmax-below-max-pk"), "text sorts above every integer Z_MAX")
        let out = try TemporaryFolder("repair-text-keys-out")
        let session = try EvidenceSession()
        defer { session.scratch.remove() }
        let outcome = try Repairer(session: session, store: try Self.acquire(url, session: session)).run(output: out.path("fixed.store"))
        #expect(!outcome.plan.actions.contains { $0.name == "raise-z-max" })
        #expect(outcome.plan.unrepaired.contains { $0.id == "zmax-below-max-pk" })
        #expect(outcome.plan.notes.contains { $0.contains("ZTAG") && $0.contains("not stored as integers") }, "\(outcome.plan.notes)")
    }
}
