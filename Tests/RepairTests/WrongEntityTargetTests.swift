import Acquisition
import Checks
import CoreDataStore
import Findings
import Foundation
import Repair
import SQLiteAccess
import StoreBuilder
import StoreTestSupport
import Testing

/// Relationships to rows that exist by Z_PK but carry a wrong Z_ENT: check names the cause, the
/// repair never removes such a reference, and verification proves nothing was lost — every
/// expectation here is computed by SQLite from a copy of the input and from the output.
@Suite("References to rows with a wrong Z_ENT")
struct WrongEntityTargetTests {
    /// 7 attachments point at notes 1 and 2, whose Z_ENT becomes `zEnt`; one more points at a
    /// note that does not exist.
    static func store(in folder: URL, zEnt: (StoreWriter) throws -> Int) throws -> URL {
        try InvariantFixture.make(in: folder) { w in
            let note = w.layout.column(entity: "Attachment", property: "note")!
            try w.transaction(nil) { w in
                for i in 0..<6 { try w.insert("Attachment", ["note": .object(entity: "Note", pk: 1 + i % 2)]) }
            }
            try w.executeRaw("UPDATE ZNOTE SET Z_ENT = \(try zEnt(w)) WHERE Z_PK IN (1, 2)")
            try w.transaction(nil) { w in _ = try w.insert("Attachment", [:]) }
            try w.executeRaw("UPDATE ZATTACHMENT SET \(note) = 999 WHERE Z_PK = (SELECT max(Z_PK) FROM ZATTACHMENT)")
        }
    }

    /// Facts from SQLite on a copy of the family: (attachment, note) for every reference to a ZNOTE row that exists.
    static func facts(_ url: URL, _ sql: String) throws -> [[DatabaseValue]] {
        let copy = try TemporaryFolder("wrong-ent-facts")
        for suffix in ["", "-wal"] where FileManager.default.fileExists(atPath: url.path + suffix) {
            try FileManager.default.copyItem(atPath: url.path + suffix, toPath: copy.path("s.store").path + suffix)
        }
        return try Connection.open(path: copy.path("s.store").path, mode: .readOnly).rows(sql).map(\.values)
    }

    static func findings(_ url: URL) throws -> [Finding] {
        let session = try EvidenceSession()
        defer { session.scratch.remove() }
        let store = try RepairInputs.acquire(url, session: session)
        return try StoreChecker(opened: try OpenedStore.open(store.copy, displayPath: url.path), notes: store.copy.notes).run()
    }

    static func repair(_ url: URL, to out: URL, plan: RepairPlan? = nil) throws -> RepairOutcome {
        let session = try EvidenceSession()
        defer { session.scratch.remove() }
        var repairer = Repairer(session: session, store: try RepairInputs.acquire(url, session: session))
        repairer.givenPlan = plan
        return try repairer.run(output: out)
    }

    static let layout = try! StoreLayout(model: InvariantFixture.model)
    static var noteColumn: String { layout.column(entity: "Attachment", property: "note")! }
    static var existing: String { "SELECT a.Z_PK, a.\(noteColumn) FROM ZATTACHMENT a JOIN ZNOTE n ON n.Z_PK = a.\(noteColumn) ORDER BY a.Z_PK" }

    @Test("a stray Z_ENT: check reports the cause, the repair corrects Z_ENT and keeps all 7 references")
    func strayEntity() throws {
        let folder = try TemporaryFolder("wrong-ent-stray")
        let url = try Self.store(in: folder.url) { _ in 77 }
        let references = try Self.facts(url, Self.existing)
        let wrongRefs = try Self.facts(url, "SELECT count(*) FROM ZATTACHMENT a JOIN ZNOTE n ON n.Z_PK = a.\(Self.noteColumn) WHERE n.Z_ENT = 77")[0][0].int
        #expect(wrongRefs == 7)
        let missing = try Self.facts(url, "SELECT count(*) FROM ZATTACHMENT a WHERE a.\(Self.noteColumn) IS NOT NULL AND a.\(Self.noteColumn) NOT IN (SELECT Z_PK FROM ZNOTE)")[0][0].int

        let findings = try Self.findings(url)
        let wrong = try #require(findings.first { $0.id == "target-wrong-entity" })
        #expect(wrong.evidence["count"] == .int(wrongRefs ?? -1))
        #expect(wrong.message.contains("77"), "names the Z_ENT the rows carry: \(wrong.message)")
        let dangling = try #require(findings.first { $0.id == "dangling-to-one" })
        #expect(dangling.evidence["count"] == .int(missing ?? -1), "only the reference to a row that is not there dangles")

        let out = try TemporaryFolder("wrong-ent-stray-out")
        let outcome = try Self.repair(url, to: out.path("fixed.store"))
        #expect(outcome.written)
        #expect(outcome.plan.actions.map(\.name).contains("correct-target-entity"))
        // SQLite on the output: every reference to an existing row is still there, unchanged.
        let after = try Self.facts(out.path("fixed.store"), "SELECT a.Z_PK, a.\(Self.noteColumn) FROM ZATTACHMENT a ORDER BY a.Z_PK")
        let afterByPK = Dictionary(after.map { ($0[0].int ?? -1, $0[1]) }, uniquingKeysWith: { a, _ in a })
        for row in references { #expect(afterByPK[row[0].int ?? -1] == row[1], "attachment \(row[0]) keeps its note") }
        let noteEnt = try Self.facts(url, "SELECT Z_ENT FROM Z_PRIMARYKEY WHERE Z_NAME = 'Note'")[0][0]
        #expect(try Self.facts(out.path("fixed.store"), "SELECT DISTINCT Z_ENT FROM ZNOTE WHERE Z_PK IN (1, 2)").map { $0[0] } == [noteEnt])
        for table in ["ZNOTE", "ZATTACHMENT", Self.layout.joinTables[0].name] {
            #expect(try Self.facts(url, "SELECT count(*) FROM \(table)")[0][0] == Self.facts(out.path("fixed.store"), "SELECT count(*) FROM \(table)")[0][0], "\(table) keeps every row")
        }
        #expect(try RepairInputs.checkIDs(out.path("fixed.store")).isEmpty)
    }

    @Test("another entity's Z_ENT (a Z_PRIMARYKEY collision): not corrected, refused with a note, and still no reference removed")
    func collidingEntity() throws {
        let folder = try TemporaryFolder("wrong-ent-collision")
        let url = try Self.store(in: folder.url) { w in
            // The Tag entity's own number: which entity the rows are is no longer clear.
            try Connection.open(path: folder.url.appendingPathComponent("default.store").path, mode: .readOnly)
                .scalar("SELECT Z_ENT FROM Z_PRIMARYKEY WHERE Z_NAME = 'Tag'").int ?? -1
        }
        let references = try Self.facts(url, Self.existing)
        #expect(references.count >= 7)
        #expect(try Self.findings(url).contains { $0.id == "target-wrong-entity" })
        let out = try TemporaryFolder("wrong-ent-collision-out")
        let outcome = try Self.repair(url, to: out.path("fixed.store"))
        #expect(!outcome.plan.actions.map(\.name).contains("correct-target-entity"))
        #expect(outcome.plan.unrepaired.contains { $0.id == "target-wrong-entity" })
        #expect(outcome.plan.notes.contains { $0.contains("target-wrong-entity") && $0.contains("ZNOTE") }, "\(outcome.plan.notes)")
        let after = try Self.facts(out.path("fixed.store"), Self.existing)
        #expect(after == references, "every reference to a row that exists is kept")
        #expect(try Self.facts(out.path("fixed.store"), "SELECT count(*) FROM \(Self.layout.joinTables[0].name)")[0][0]
                == Self.facts(url, "SELECT count(*) FROM \(Self.layout.joinTables[0].name)")[0][0])
    }

    @Test("verification proves independently: a plan that nulls a reference to an existing row, or deletes rows it does not declare, is refused")
    func proofCatchesLoss() throws {
        let folder = try TemporaryFolder("wrong-ent-proof")
        let url = try InvariantFixture.make(in: folder.url)
        let plans: [(RepairPlan.Action, String)] = [
            (RepairPlan.Action(name: "bad-nullify", answers: "test", entity: "Attachment", tables: ["ZATTACHMENT"], summary: "", affected: [], count: 1,
                               statements: [.init(sql: "UPDATE ZATTACHMENT SET \(Self.noteColumn) = NULL WHERE Z_PK = 1", arguments: [])],
                               columns: ["ZATTACHMENT.\(Self.noteColumn)"]), "set to NULL"),
            (RepairPlan.Action(name: "bad-delete", answers: "test", entity: "Tag", tables: ["ZTAG"], summary: "", affected: [], count: 1,
                               statements: [.init(sql: "DELETE FROM ZTAG WHERE Z_PK = 2", arguments: [])]), "lost"),
            (RepairPlan.Action(name: "bad-repoint", answers: "test", entity: "Attachment", tables: ["ZATTACHMENT"], summary: "", affected: [], count: 1,
                               statements: [.init(sql: "UPDATE ZATTACHMENT SET \(Self.noteColumn) = 2 WHERE Z_PK = 1", arguments: [])]), "no action names"),
        ]
        for (action, expected) in plans {
            let out = try TemporaryFolder("wrong-ent-proof-out")
            do {
                _ = try Self.repair(url, to: out.path("fixed.store"), plan: RepairPlan(actions: [action], unrepaired: []))
                Issue.record("\(action.name) was accepted")
            } catch let RepairError.verificationFailed(_, detail) {
                #expect(detail.contains(expected), "\(action.name): \(detail)")
            }
            #expect(try FileManager.default.contentsOfDirectory(atPath: out.url.path).isEmpty, "\(action.name): nothing written")
        }
    }
}
