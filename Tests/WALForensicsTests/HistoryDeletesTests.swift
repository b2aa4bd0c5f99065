import Acquisition
import CoreDataStore
import Foundation
import SQLiteAccess
import StoreBuilder
import StoreTestSupport
import Testing
@testable import WALForensics

/// `recover` and persistent history: deletes that kept values (`ZTOMBSTONE0…n`) are versions of
/// their own when nothing else gives the record back; a carved record whose key was lost takes
/// the key of the one delete whose identifying kept values are its own; carved and committed
/// deletes carry the history transaction that deleted them. The truth is what SQLite holds in
/// ACHANGE (read on a copy) and what the test wrote.
@Suite("recover: deleted records from persistent history")
struct HistoryDeletesTests {
    /// SQLite on a copy of a store and its `-wal` (the truth is read from copies, never the original);
    /// the folder is returned with it, to live as long as the connection.
    static func sqliteCopy(of url: URL) throws -> (TemporaryFolder, Connection) {
        let folder = try TemporaryFolder("recover-history-truth")
        for suffix in ["", "-wal"] where FileManager.default.fileExists(atPath: url.path + suffix) {
            try FileManager.default.copyItem(at: URL(fileURLWithPath: url.path + suffix), to: folder.path("copy.store" + suffix))
        }
        return (folder, try Connection.open(path: folder.path("copy.store").path, mode: .readWrite))
    }

    /// ACHANGE's deletes as SQLite reads them on a copy: entity number, key, transaction, kept values.
    static func storedDeletes(_ corpus: HistoryCorpus.Corpus) throws -> [(entity: Int, pk: Int64, transaction: Int64, kept: [DatabaseValue])] {
        let (folder, db) = try sqliteCopy(of: corpus.url)
        defer { _ = folder }
        let columns = try db.rows("SELECT name FROM pragma_table_info('ACHANGE') WHERE name LIKE 'ZTOMBSTONE%' ORDER BY cid").compactMap { $0[0].string }
        return try db.rows("SELECT ZENTITY, ZENTITYPK, ZTRANSACTIONID, \(columns.joined(separator: ", ")) FROM ACHANGE WHERE ZCHANGETYPE = 2").map { row in
            (row[0].int ?? -1, row[1].int64 ?? -1, row[2].int64 ?? -1, Array(row.values.dropFirst(3)))
        }
    }

    /// `Z_PRIMARYKEY`'s number for an entity, read with SQLite from a copy.
    static func entityNumber(_ name: String, _ corpus: HistoryCorpus.Corpus) throws -> Int? {
        let (folder, db) = try sqliteCopy(of: corpus.url)
        defer { _ = folder }
        return try db.rows("SELECT Z_ENT FROM Z_PRIMARYKEY WHERE Z_NAME = ?", [.text(name)]).first?[0].int
    }

    static func text(_ v: RecordVersion, _ name: String) -> String? {
        guard case .text(let t)? = v.values.first(where: { $0.name == name })?.value else { return nil }
        return t
    }

    @Test("tombstones, keys from history, deletes attached: each history delete stands in exactly one version")
    func corpusFromHistory() throws {
        let corpus = try HistoryCorpus.corpus()
        let before = try FolderSnapshot(corpus.folder.url)
        let session = try EvidenceSession()
        defer { session.scratch.remove() }
        let evidence = try WALEvidence(copy: try session.workingCopy(of: corpus.url), displayPath: corpus.url.path)
        let versions = try RecordRecovery.versions(evidence, carve: true)
        let stored = try Self.storedDeletes(corpus)
        let task = try #require(try Self.entityNumber("Task", corpus)), flag = try #require(try Self.entityNumber("Flag", corpus))
        #expect(stored.count == 35 + 1 + 4)

        // Every delete history holds names exactly one version of that record, with its transaction.
        for d in stored {
            let holding = versions.filter { $0.entityNumber == d.entity && $0.pk == d.pk && $0.endingTransactions.contains { $0.id == d.transaction } }
            #expect(holding.count == 1, "entity \(d.entity) #\(d.pk): \(holding.count) versions name its delete")
            guard let v = holding.first else { continue }
            // Whatever the version, it is the record the test wrote under that key.
            let name = d.entity == task ? "title" : "label"
            if v.confidence != .tombstone {
                #expect(Self.text(v, name) == corpus.texts[d.entity == task ? "Task" : "Flag"]?[Int(d.pk)], "\(v.entity)#\(v.pk)")
            }
        }
        // Tombstones: only where nothing else gave the record back, with the kept values SQLite stored.
        let tombstones = versions.filter { $0.confidence == .tombstone }
        for v in tombstones {
            #expect(v.state == .deleted && v.sources.isEmpty && v.finds.isEmpty && v.historyDeletes.count == 1)
            let others = versions.filter { $0.entityNumber == v.entityNumber && $0.pk == v.pk && $0.confidence != .tombstone && $0.state != .live }
            #expect(others.isEmpty, "\(v.entity)#\(v.pk) is a tombstone and another version")
            let truth = try #require(stored.first { $0.entity == v.entityNumber && $0.pk == v.pk })
            if v.entityNumber == task {
                guard case .uuid(let text)? = v.values.first(where: { $0.name == "id" })?.value, let uuid = UUID(uuidString: text) else {
                    Issue.record("a Task's tombstone keeps its id: \(v.values)"); continue
                }
                #expect(truth.kept.contains(.blob(withUnsafeBytes(of: uuid.uuid) { Data($0) })))
                #expect(uuid == corpus.ids[Int(v.pk)])
            }
        }
        // Carved Tasks whose key was lost took it from their delete's UUID, and it is theirs.
        let keyed = versions.filter { $0.entityNumber == task && $0.state == .carved && $0.confidence == .headerRebuilt && $0.pkIsKnown }
        #expect(!keyed.isEmpty, "the corpus has Task cells that lost their key, given back by history")
        for v in keyed {
            #expect(!v.uncertainColumns.contains("Z_PK"))
            #expect(Self.text(v, "title") == corpus.texts["Task"]?[Int(v.pk)])
        }
        // A Boolean names no record: carved Flags that lost their key keep it unknown, though one
        // delete alone kept `done` true and some of them hold `done` true.
        let flagsKeyless = versions.filter { $0.entityNumber == flag && $0.confidence == .headerRebuilt }
        #expect(!flagsKeyless.isEmpty, "the corpus has Flag cells that lost their key")
        #expect(flagsKeyless.allSatisfy { !$0.pkIsKnown && $0.historyDeletes.isEmpty })
        // The -wal's deletes are committed versions with their commit's transaction, not tombstones.
        let walDeleted = versions.filter { $0.state == .deleted && !$0.sources.isEmpty }
        #expect(walDeleted.count == 4)
        for v in walDeleted {
            #expect(v.endedBy?.transactions.count == 1 && v.historyDeletes.isEmpty, "\(v.entity)#\(v.pk): \(v.endedBy?.transactions.map(\.id) ?? []) \(v.historyDeletes.map(\.id))")
        }

        // The filters apply to history's versions as to any other.
        let onlyTombstones = try RecordRecovery.versions(evidence, filter: .init(entity: "Flag", states: [.deleted]), carve: true)
        #expect(onlyTombstones.allSatisfy { $0.entity == "Flag" && $0.state == .deleted })
        #expect(onlyTombstones.count == versions.filter { $0.entityNumber == flag && $0.state == .deleted }.count)
        try session.finish()
        #expect(try FolderSnapshot(corpus.folder.url) == before, "the evidence must stay byte-identical")
    }

    @Test("Apple's stores with tombstones (knowledgeC, Screen Time, Photos 15.7.1 in its -wal): every delete is one version, with SQLite's kept values", .enabled(if: ProjectPaths.hasRealFixtures, Comment(rawValue: ProjectPaths.realFixturesMissing)))
    func appleTombstones() throws {
        let root = try #require(ProjectPaths.realFixtures())
        for path in ["screentime-tombstones/RMAdminStore-Local.sqlite", "knowledgec-tombstones/knowledgec-10.13.db", "photos-macos1571-wal/Photos.sqlite"] {
            let url = root.appendingPathComponent(path)
            let before = try FolderSnapshot(url.deletingLastPathComponent())
            let session = try EvidenceSession()
            defer { session.scratch.remove() }
            let evidence = try WALEvidence(copy: try session.workingCopy(of: url), displayPath: url.path)
            let versions = try RecordRecovery.versions(evidence, carve: true)
            // The truth, on a copy: every delete, with what its ZTOMBSTONE columns hold.
            let (folder, db) = try Self.sqliteCopy(of: url)
            defer { _ = folder }
            let columns = try db.rows("SELECT name FROM pragma_table_info('ACHANGE') WHERE name LIKE 'ZTOMBSTONE%' ORDER BY cid").compactMap { $0[0].string }
            let deletes = try db.rows("SELECT ZENTITY, ZENTITYPK, ZTRANSACTIONID, \(columns.joined(separator: ", ")) FROM ACHANGE WHERE ZCHANGETYPE = 2 AND ZENTITYPK > 0")
            let kept = deletes.filter { $0.values.dropFirst(3).contains { !$0.isNull } }
            #expect(!kept.isEmpty, "\(path)")
            for row in deletes {
                let entity = row[0].int ?? -1, pk = row[1].int64 ?? -1, transaction = row[2].int64 ?? -1
                let holding = versions.filter { $0.entityNumber == entity && $0.pk == pk && $0.endingTransactions.contains { $0.id == transaction } }
                #expect(holding.count == 1, "\(path): entity \(entity) #\(pk)")
                guard let v = holding.first, v.confidence == .tombstone else { continue }
                // The version's values are the delete's kept values, one for each non-NULL column (none
                // where it kept nothing: the version is then the record's entity and key alone).
                let change = try #require(v.historyDeletes.first?.changes.first)
                #expect(change.tombstone.map(\.value) == Array(row.values.dropFirst(3)).filter { !$0.isNull }, "\(path): #\(pk)")
                #expect(v.values.map(\.name) == change.tombstone.map(\.name))
            }
            #expect(versions.filter { $0.confidence == .tombstone }.count <= deletes.count)
            #expect(versions.filter { $0.confidence == .tombstone && $0.values.isEmpty }.count <= deletes.count - kept.count)
            try session.finish()
            #expect(try FolderSnapshot(url.deletingLastPathComponent()) == before, "\(path): the evidence must stay byte-identical")
        }
    }

    @Test("a crafted history: repeated, keyless, unknown-entity and odd-typed deletes are bounded, named or left out, never a crash")
    func craftedHistory() throws {
        let folder = try TemporaryFolder("recover-history-crafted")
        let url = folder.path("default.store")
        let writer = try StoreWriter(url: url, model: HistoryCorpus.model)
        var pk = 0
        try writer.transaction { pk = try $0.insert("Task", ["id": .uuid(UUID()), "title": .string("kept")]) }
        try writer.transaction { try $0.delete("Task", pk: pk) }
        let task = try #require(try writer.layout.entities.first { $0.description.name == "Task" }).number
        let transaction = try #require(try Connection.open(path: url.path, mode: .readOnly).rows("SELECT max(Z_PK) FROM ATRANSACTION").first?[0].int64)
        func change(_ entity: DatabaseValue, _ key: DatabaseValue, _ kept: DatabaseValue) throws {
            try writer.executeRaw("INSERT INTO ACHANGE (Z_ENT, Z_OPT, ZCHANGETYPE, ZENTITY, ZENTITYPK, ZTRANSACTIONID, ZTOMBSTONE0) VALUES (16001, 1, 2, ?, ?, ?, ?)",
                                  [entity, key, .integer(transaction), kept])
        }
        // The same record deleted 40 more times, with the same kept value.
        let stored = try #require(try Connection.open(path: url.path, mode: .readOnly).rows("SELECT ZTOMBSTONE0 FROM ACHANGE WHERE ZCHANGETYPE = 2").first?[0])
        for _ in 0 ..< 40 { try change(.integer(Int64(task)), .integer(Int64(pk)), stored) }
        // Keys no record can have, an entity the store does not name, a key stored as text, a 1 MiB value.
        try change(.integer(Int64(task)), .integer(0), .text("zero"))
        try change(.integer(Int64(task)), .integer(-5), .text("negative"))
        try change(.integer(Int64(task)), .null, .text("no key"))
        try change(.integer(9999), .integer(7), .text("unnamed entity"))
        try change(.text("Task"), .integer(8), .text("entity as text"))
        try change(.integer(Int64(task)), .text("9"), .text("key as text"))
        try change(.integer(Int64(task)), .integer(10), .blob(Data(repeating: 0xAB, count: 1 << 20)))
        try writer.close()

        let session = try EvidenceSession()
        defer { session.scratch.remove() }
        let evidence = try WALEvidence(copy: try session.workingCopy(of: url), displayPath: url.path)
        let versions = try RecordRecovery.versions(evidence, carve: true).filter { $0.confidence == .tombstone }
        let repeated = versions.filter { $0.entityNumber == task && $0.pk == Int64(pk) }
        #expect(repeated.count == 1)
        #expect(repeated.first?.historyDeletes.count == HistoryDeletes.perRecordLimit)
        #expect(!versions.contains { $0.pk <= 0 }, "no version of a key no record can have")
        #expect(versions.contains { $0.entity == "#9999" && $0.pk == 7 }, "an unnamed entity is named by its number")
        // The key written as text is key 9 when SQLite stored it as an integer (the column's affinity), as SQLite says.
        // Read on a copy: SQLite opening the original would give it a -wal and -shm, which the
        // session's closing check rightly calls a change to the evidence.
        let (truthFolder, truth) = try Self.sqliteCopy(of: url)
        defer { _ = truthFolder }
        let nineIsInteger = try truth.rows("SELECT count(*) FROM ACHANGE WHERE ZENTITYPK = 9 AND typeof(ZENTITYPK) = 'integer'").first?[0].int == 1
        #expect(versions.contains { $0.pk == 9 } == nineIsInteger)
        let big = try #require(versions.first { $0.entityNumber == task && $0.pk == 10 })
        #expect(big.values.count == 1)
        try session.finish()
    }

    @Test("a history not laid out as Core Data makes it: every other version is still given, none from history")
    func damagedHistoryLayout() throws {
        let folder = try TemporaryFolder("recover-history-damaged")
        let url = folder.path("default.store")
        let writer = try StoreWriter(url: url, model: HistoryCorpus.model)
        var pk = 0
        try writer.transaction { w in
            pk = try w.insert("Task", ["id": .uuid(UUID()), "title": .string("gone")])
            _ = try w.insert("Task", ["id": .uuid(UUID()), "title": .string("stays")])
        }
        try writer.transaction { try $0.delete("Task", pk: pk) }
        try writer.checkpoint()
        try writer.executeRaw("ALTER TABLE ACHANGE RENAME COLUMN ZTRANSACTIONID TO ZXID")
        try writer.close()
        let live = try #require(try Connection.open(path: url.path, mode: .readOnly).rows("SELECT count(*) FROM ZTASK").first?[0].int)

        let session = try EvidenceSession()
        defer { session.scratch.remove() }
        let evidence = try WALEvidence(copy: try session.workingCopy(of: url), displayPath: url.path)
        let versions = try RecordRecovery.versions(evidence, carve: true)
        #expect(versions.filter { $0.state == .live }.count == live)
        #expect(versions.allSatisfy { $0.confidence != .tombstone && $0.historyDeletes.isEmpty })
        try session.finish()
    }

    /// History Core Data pruned (`deleteHistory`): the delete's ACHANGE and ATRANSACTION rows
    /// deleted by SQLite with `secure_delete` off, so their bytes stay in free space; the deleted
    /// Tasks' table cells overwritten by a later rewrite. Each delete whose row's bytes are still
    /// in the file names its record again, with its key, its transaction and the UUID it kept.
    @Test("pruned history: deletes carved from ACHANGE's freed rows name their records, with the values they kept")
    func prunedHistory() throws {
        let folder = try TemporaryFolder("recover-pruned-history")
        let url = folder.path("default.store")
        let writer = try StoreWriter(url: url, model: HistoryCorpus.model)
        try writer.executeRaw("PRAGMA secure_delete = OFF")
        var ids: [Int: UUID] = [:], titles: [Int: String] = [:]
        try writer.transaction { w in
            for n in 0 ..< 120 {
                let id = UUID(), title = "task-\(n)-" + String(repeating: "t", count: n % 11)
                let pk = try w.insert("Task", ["id": .uuid(id), "title": .string(title), "body": .string("b")])
                ids[pk] = id
                titles[pk] = title
            }
        }
        let deleted = ids.keys.sorted().enumerated().filter { $0.offset % 3 == 0 }.map(\.element)
        try writer.transaction(.init(author: "cleaner")) { w in for pk in deleted { try w.delete("Task", pk: pk) } }
        // The rows that remain rewritten larger, over the freed cells of the deleted ones.
        try writer.transaction { w in for pk in ids.keys.sorted() where !deleted.contains(pk) { try w.update("Task", pk: pk, ["body": .string(String(repeating: "r", count: 90))]) } }
        let truth = try Connection.open(path: url.path, mode: .readOnly)
        let pruned = try #require(try truth.rows("SELECT DISTINCT ZTRANSACTIONID FROM ACHANGE WHERE ZCHANGETYPE = 2").first?[0].int64)
        try writer.executeRaw("DELETE FROM ACHANGE WHERE ZTRANSACTIONID = ?", [.integer(pruned)])
        try writer.executeRaw("DELETE FROM ATRANSACTION WHERE Z_PK = ?", [.integer(pruned)])
        try writer.checkpoint()
        try writer.close()
        #expect(try truth.rows("SELECT count(*) FROM ACHANGE WHERE ZCHANGETYPE = 2").first?[0].int == 0, "the deletes are gone from the table")
        let task = try #require(try truth.rows("SELECT Z_ENT FROM Z_PRIMARYKEY WHERE Z_NAME = 'Task'").first?[0].int)
        let file = try Data(contentsOf: url)

        let session = try EvidenceSession()
        defer { session.scratch.remove() }
        let evidence = try WALEvidence(copy: try session.workingCopy(of: url), displayPath: url.path)
        let versions = try RecordRecovery.versions(evidence, carve: true)
        // A delete is in the bytes when the UUID it kept is (the carved row holds it); each such one
        // names its Task: a version with that key whose deletes include the pruned transaction.
        let present = deleted.filter { pk in file.range(of: withUnsafeBytes(of: ids[pk]!.uuid) { Data($0) }) != nil }
        let named = versions.filter { $0.entityNumber == task && $0.historyDeletes.contains { $0.id == pruned } }
        #expect(present.count > deleted.count / 2, "the corpus leaves pruned deletes in the bytes: \(present.count) of \(deleted.count)")
        let found = Set(named.map { Int($0.pk) }).intersection(present)
        print("[pruned history] deletes in the bytes: \(present.count) of \(deleted.count); named again: \(found.count); as tombstones: \(named.filter { $0.confidence == .tombstone }.count)")
        #expect(Double(found.count) >= 0.95 * Double(present.count), "missed: \(Set(present).subtracting(found).sorted().prefix(10))")
        // Precision: every record named by a pruned delete was deleted, with the UUID it kept.
        for v in named {
            #expect(deleted.contains(Int(v.pk)), "#\(v.pk) was never deleted")
            if v.confidence == .tombstone {
                #expect(v.state == .deleted && !v.finds.isEmpty && v.sources.isEmpty)
                guard case .uuid(let text)? = v.values.first(where: { $0.name == "id" })?.value else { Issue.record("#\(v.pk): \(v.values)"); continue }
                #expect(UUID(uuidString: text) == ids[Int(v.pk)])
            } else if let title = Self.text(v, "title") {
                #expect(title == titles[Int(v.pk)])
            }
        }
        // One version per deleted record: no key stands twice among the deletes.
        #expect(Set(named.map(\.pk)).count == named.count)
        try session.finish()
    }

    /// Carved `ACHANGE` deletes that name keys live in the last state are no deletions: Core Data
    /// never reuses a `Z_PK`, so the live record is not the one they name (they were reported as
    /// deleted tombstones beside the live records). And one delete met in 300 places lists at
    /// most `RecordVersion.findLimit` of them, counting the rest.
    @Test("carved deletes naming live keys are turned away; one delete met 300 times lists 100 finds and counts the rest")
    func carvedDeletesOfLiveKeys() throws {
        let folder = try TemporaryFolder("recover-live-deletes")
        let url = folder.path("default.store")
        let writer = try StoreWriter(url: url, model: HistoryCorpus.model)
        try writer.executeRaw("PRAGMA secure_delete = OFF")
        var pks: [Int] = []
        try writer.transaction { w in
            for n in 0 ..< 12 { pks.append(try w.insert("Task", ["id": .uuid(UUID()), "title": .string("task-\(n)"), "body": .string("b")])) }
        }
        let gone = pks[0]
        try writer.transaction { try $0.delete("Task", pk: gone) }
        let truthFolder = try TemporaryFolder("recover-live-deletes-truth")
        let columns = try Connection.open(path: url.path, mode: .readOnly).rows("SELECT name FROM pragma_table_info('ACHANGE') ORDER BY cid").compactMap { $0[0].string }
        let copied = columns.filter { $0 != "Z_PK" }
        func copies(pk: String, count: Int) -> String {
            let select = copied.map { $0 == "ZENTITYPK" ? pk : Identifier.quoted($0) }.joined(separator: ", ")
            return "INSERT INTO ACHANGE (\(copied.map(Identifier.quoted).joined(separator: ", "))) SELECT \(select) FROM ACHANGE, "
                + "(WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(count)) SELECT i FROM n) WHERE ZCHANGETYPE = 2"
        }
        // The delete of `gone` copied 300 times, and once for each of five live keys; then all of
        // it pruned (deleted with secure_delete off: the bytes stay in free pages and cells).
        try writer.executeRaw(copies(pk: String(gone), count: 300))
        for live in pks[1...5] { try writer.executeRaw(copies(pk: String(live), count: 1)) }
        try writer.executeRaw("DELETE FROM ACHANGE WHERE ZCHANGETYPE = 2")
        try writer.checkpoint()
        try writer.close()
        let copy = truthFolder.path("truth.store")
        try FileManager.default.copyItem(at: url, to: copy)
        let live = Set(try Connection.open(path: copy.path, mode: .readOnly).rows("SELECT Z_PK FROM ZTASK").compactMap { $0[0].int64 })
        #expect(live.count == 11)

        let session = try EvidenceSession()
        defer { session.scratch.remove() }
        let evidence = try WALEvidence(copy: try session.workingCopy(of: url), displayPath: url.path)
        let versions = try RecordRecovery.versions(evidence, carve: true).filter { $0.entity == "Task" }
        for v in versions where live.contains(v.pk) {
            #expect(v.state == .live, "Task #\(v.pk) is live in the last state: no \(v.state) \(v.confidence) version may name it")
        }
        let deleted = try #require(versions.first { $0.pk == Int64(gone) && $0.state == .deleted }, "the pruned delete still names its record")
        #expect(deleted.finds.count == RecordVersion.findLimit)
        #expect(deleted.findsOmitted > 0, "\(deleted.finds.count) listed, \(deleted.findsOmitted) counted")
        #expect(Set(deleted.finds).count == deleted.finds.count)
        try session.finish()
    }
}
