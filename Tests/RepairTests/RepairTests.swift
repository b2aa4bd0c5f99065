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
    /// What a case plants, and what SQLite must find changed between a WAL-applied copy of the
    /// input and the output: every changed value, deleted and inserted row, nothing else. The
    /// expectation is written from the plant and read from the copy (`before`), not from the plan.
    struct Case: Sendable, CustomStringConvertible {
        let id: String
        let action: String
        let plant: @Sendable (StoreWriter) throws -> Void
        let expected: @Sendable (_ before: Connection, _ layout: StoreLayout) throws -> Set<RowChange>
        var description: String { id }
    }

    static func table(_ layout: StoreLayout, _ entity: String) -> String { layout.entity(entity)!.table }
    /// The Z_OPT a bump gives the row: one more than it had.
    static func bumped(_ db: Connection, _ table: String, _ pk: Int) throws -> DatabaseValue {
        .integer(try #require(try db.scalar("SELECT Z_OPT FROM \(table) WHERE Z_PK = ?", [.integer(Int64(pk))]).int64) + 1)
    }

    static let cases: [Case] = [
        Case(id: "zmax-below-max-pk", action: "raise-z-max", plant: { try $0.executeRaw("UPDATE Z_PRIMARYKEY SET Z_MAX = 1 WHERE Z_NAME = 'Note'") }) { db, layout in
            let ent = try #require(try db.scalar("SELECT Z_ENT FROM Z_PRIMARYKEY WHERE Z_NAME = 'Note'").int)
            let maxPK = try db.scalar("SELECT max(Z_PK) FROM \(table(layout, "Note"))")
            return [.changed("Z_PRIMARYKEY", "\(ent)", "Z_MAX", to: maxPK)]
        },
        Case(id: "dangling-to-one", action: "nullify-dangling-to-one", plant: { w in
            try w.executeRaw("UPDATE ZATTACHMENT SET \(w.layout.column(entity: "Attachment", property: "note")!) = 999 WHERE Z_PK = 1")
        }) { db, layout in
            let t = table(layout, "Attachment")
            return [.changed(t, "1", layout.column(entity: "Attachment", property: "note")!, to: .null),
                    .changed(t, "1", layout.foreignEntityKeyColumn(entity: "Attachment", relationship: "note")!, to: .null),
                    .changed(t, "1", "Z_OPT", to: try bumped(db, t, 1))]
        },
        Case(id: "fek-mismatch", action: "fix-entity-key", plant: { w in
            try w.executeRaw("UPDATE ZATTACHMENT SET \(w.layout.foreignEntityKeyColumn(entity: "Attachment", relationship: "note")!) = 1 WHERE Z_PK = 2")
        }) { db, layout in
            let t = table(layout, "Attachment")
            // Attachment 2 belongs to the checklist note: its entity key becomes that entity's number.
            return [.changed(t, "2", layout.foreignEntityKeyColumn(entity: "Attachment", relationship: "note")!, to: .integer(Int64(layout.entity("ChecklistNote")!.number))),
                    .changed(t, "2", "Z_OPT", to: try bumped(db, t, 2))]
        },
        Case(id: "one-to-one-mismatch", action: "align-one-to-one", plant: { w in
            try w.executeRaw("UPDATE ZPROFILE SET \(w.layout.column(entity: "Profile", property: "account")!) = NULL WHERE Z_PK = 1")
        }) { db, layout in
            let t = table(layout, "Profile")
            return [.changed(t, "1", layout.column(entity: "Profile", property: "account")!, to: .integer(1)),
                    .changed(t, "1", "Z_OPT", to: try bumped(db, t, 1))]
        },
        Case(id: "orphan-join-rows", action: "delete-orphan-join-rows", plant: { w in
            let j = w.layout.joinTables[0]
            try w.executeRaw("INSERT INTO \(j.name) (\(j.firstColumn), \(j.secondColumn)) VALUES (999, 1)")
        }) { _, layout in
            [.deleted(layout.joinTables[0].name, "999,1")]
        },
        Case(id: "unique-duplicates", action: "resolve-duplicates", plant: { w in
            try w.executeRaw("DROP INDEX Z_Tag_UNIQUE_name")
            try w.executeRaw("UPDATE ZTAG SET ZNAME = 'a', Z_OPT = 5 WHERE Z_PK = 2")
        }) { db, layout in
            // Tag 2 (Z_OPT 5) is kept, tag 1 goes; every note tagged 1 is tagged 2 instead.
            let t = table(layout, "Tag"), j = layout.joinTables[0]
            let (tagColumn, noteColumn) = j.firstEntity == "Tag" ? (j.firstColumn, j.secondColumn) : (j.secondColumn, j.firstColumn)
            func key(note: Int64, tag: Int) -> String { j.firstEntity == "Tag" ? "\(tag),\(note)" : "\(note),\(tag)" }
            var expected: Set<RowChange> = [.deleted(t, "1"), .changed(t, "2", "Z_OPT", to: try bumped(db, t, 2))]
            let tagged = Set(try db.rows("SELECT \(noteColumn) FROM \(j.name) WHERE \(tagColumn) = 1").compactMap { $0[0].int64 })
            let taggedTwo = Set(try db.rows("SELECT \(noteColumn) FROM \(j.name) WHERE \(tagColumn) = 2").compactMap { $0[0].int64 })
            for note in tagged {
                expected.insert(.deleted(j.name, key(note: note, tag: 1)))
                if !taggedTwo.contains(note) { expected.insert(.inserted(j.name, key(note: note, tag: 2))) }
            }
            return expected
        },
        Case(id: "bad-z-opt", action: "set-z-opt", plant: { try $0.executeRaw("UPDATE ZACCOUNT SET Z_OPT = NULL WHERE Z_PK = 1") }) { _, layout in
            [.changed(table(layout, "Account"), "1", "Z_OPT", to: .integer(1))]
        },
    ]

    @Test("the WAL-bearing fixture: its -wal holds commits, and the planted damage, that the main file alone lacks (SQLite on copies)")
    func walBearingFixture() throws {
        let folder = try TemporaryFolder("repair-wal-fixture")
        let url = try InvariantFixture.make(in: folder.url, leavingWAL: true) { try $0.executeRaw("UPDATE Z_PRIMARYKEY SET Z_MAX = 1 WHERE Z_NAME = 'Note'") }
        let wal = URL(fileURLWithPath: url.path + "-wal")
        #expect(try SQLiteCopies.walFrames(wal) > 0, "the -wal holds frames")
        let copies = try TemporaryFolder("repair-wal-fixture-copies")
        let applied = try Connection.open(path: try SQLiteCopies.walApplied(url, in: copies.url).path, mode: .readOnly)
        let mainOnly = try Connection.open(path: try SQLiteCopies.mainFileOnly(url, in: copies.url).path, mode: .readOnly)
        func titles(_ db: Connection) throws -> [String] { try db.rows("SELECT ZTITLE FROM ZNOTE ORDER BY Z_PK").compactMap { $0[0].string } }
        let withWAL = try titles(applied), alone = try titles(mainOnly)
        #expect(withWAL == alone + InvariantFixture.walTitles, "the main file lacks the last commit: \(alone) vs \(withWAL)")
        #expect(try mainOnly.scalar("SELECT count(*) FROM ZATTACHMENT").int! + 1 == (try applied.scalar("SELECT count(*) FROM ZATTACHMENT").int!))
        let zMax = "SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_NAME = 'Note'"
        #expect(try mainOnly.scalar(zMax).int == alone.count, "the main file alone is not damaged")
        #expect(try applied.scalar(zMax).int == 1, "the damage lives only in the -wal")
        #expect(try RepairInputs.checkIDs(url) == ["zmax-below-max-pk"], "check reads the -wal")
    }

    @Test("each repairable problem, with and without a -wal: SQLite finds exactly the planned changes between a WAL-applied copy of the input and the output",
          arguments: cases, [false, true])
    func repair(_ c: Case, leavingWAL: Bool) throws {
        let folder = try TemporaryFolder("repair-\(c.id)")
        let url = try InvariantFixture.make(in: folder.url, leavingWAL: leavingWAL) { try c.plant($0) }
        #expect(FileManager.default.fileExists(atPath: url.path + "-wal") == leavingWAL)
        #expect(try RepairInputs.checkIDs(url) == [c.id])
        let before = try FolderSnapshot(folder.url)
        let truth = try TemporaryFolder("repair-truth")
        let applied = try SQLiteCopies.walApplied(url, in: truth.url)
        let layout = try StoreLayout(model: InvariantFixture.model)
        let expected = try c.expected(try Connection.open(path: applied.path, mode: .readOnly), layout)

        let out = try TemporaryFolder("repair-out")
        let fixed = out.path("fixed.store")
        let session = try EvidenceSession()
        defer { session.scratch.remove() }
        let outcome = try Repairer(session: session, store: try RepairInputs.acquire(url, session: session)).run(output: fixed)
        try session.finish()
        #expect(try FolderSnapshot(folder.url) == before, "the input family is byte-identical")
        #expect(outcome.written)
        #expect(outcome.plan.actions.map(\.name) == [c.action])

        let diff = try StoreDiff(before: applied, after: fixed)
        #expect(diff.schemaChanges.isEmpty, "\(diff.schemaChanges)")
        #expect(diff.changes == expected, "found: \(diff.listed)")
        #expect(diff.tables == outcome.plan.touchedTables, "the tables that changed are the ones the plan names")
        let rows = Set(diff.changes.map { "\($0.table)[\($0.key)]" })
        #expect(outcome.changes.reduce(0, +) == rows.count, "the log's rows changed per action agree with SQLite: \(outcome.changes) vs \(rows.sorted())")
        let named = Set(outcome.plan.actions.flatMap(\.columns))
        for change in diff.changes {
            guard let column = change.column, !["Z_OPT", "Z_MAX", "Z_ENT"].contains(column) else { continue }
            #expect(named.contains("\(change.table).\(column)"), "\(change) is a column the plan names")
        }

        #expect(try RepairInputs.checkIDs(fixed).isEmpty, "every check passes on the output")
        #expect(!FileManager.default.fileExists(atPath: fixed.path + "-wal"), "the output is one file")
        // The output file by itself (no -wal beside it) holds the input's -wal commits: merged.
        let alone = try Connection.open(path: try SQLiteCopies.mainFileOnly(fixed, in: truth.url, name: "fixed-alone.store").path, mode: .readOnly)
        let titles = Set(try alone.rows("SELECT ZTITLE FROM ZNOTE").compactMap { $0[0].string })
        #expect(titles.isSuperset(of: leavingWAL ? InvariantFixture.walTitles : []))
        #expect(try alone.scalar("SELECT count(*) FROM ZNOTE").int == (try Connection.open(path: applied.path, mode: .readOnly).scalar("SELECT count(*) FROM ZNOTE").int))
        #expect(FileManager.default.fileExists(atPath: out.path(".fixed_SUPPORT/_EXTERNAL_DATA").path), "external data comes along")
        let db = try Connection.open(path: fixed.path, mode: .readOnly)
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
            var repairer = Repairer(session: session, store: try RepairInputs.acquire(url, session: session))
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
        let (plan, findings) = try Repairer(session: session, store: try RepairInputs.acquire(url, session: session)).plan()
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
            _ = try Repairer(session: session, store: try RepairInputs.acquire(url, session: session)).run(output: folder.path("taken.store"))
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
        let outcome = try Repairer(session: session, store: try RepairInputs.acquire(url, session: session)).run(output: out.path("fixed.store"))
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
        #expect(Set(try RepairInputs.checkIDs(url)) == ["zmax-below-max-pk", "orphan-join-rows"])
        let joinRowsBefore: Int
        do {
            let db = try Connection.open(path: url.path, mode: .readOnly)
            joinRowsBefore = try db.scalar("SELECT count(*) FROM \(j.name)").int ?? -1
        }
        let out = try TemporaryFolder("repair-without-rowid-out")
        let session = try EvidenceSession()
        defer { session.scratch.remove() }
        let outcome = try Repairer(session: session, store: try RepairInputs.acquire(url, session: session)).run(output: out.path("fixed.store"))
        #expect(outcome.written)
        #expect(Set(outcome.plan.actions.map(\.name)) == ["delete-orphan-join-rows", "raise-z-max"])
        #expect(try RepairInputs.checkIDs(out.path("fixed.store")).isEmpty)
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
        #expect(try RepairInputs.checkIDs(url).contains("zmax-below-max-pk"), "text sorts above every integer Z_MAX")
        let out = try TemporaryFolder("repair-text-keys-out")
        let session = try EvidenceSession()
        defer { session.scratch.remove() }
        let outcome = try Repairer(session: session, store: try RepairInputs.acquire(url, session: session)).run(output: out.path("fixed.store"))
        #expect(!outcome.plan.actions.contains { $0.name == "raise-z-max" })
        #expect(outcome.plan.unrepaired.contains { $0.id == "zmax-below-max-pk" })
        #expect(outcome.plan.notes.contains { $0.contains("ZTAG") && $0.contains("not stored as integers") }, "\(outcome.plan.notes)")
    }
}
