import Acquisition
import Checks
import CoreDataStore
import Findings
import Foundation
import SQLiteAccess
import StoreBuilder
import StoreFormats
import StoreTestSupport
import Testing

enum CheckFixture {
    static let model = InvariantFixture.model
    static func make(in folder: URL, plant: (StoreWriter) throws -> Void = { _ in }) throws -> URL {
        try InvariantFixture.make(in: folder, plant: plant)
    }

    /// - Parameter twoThreads: give the checker a second connection, so the checks run on two threads.
    static func check(_ url: URL, only: Set<StoreChecker.Check>? = nil, options: OpenOptions = OpenOptions(ignoreMismatchedWAL: true),
                      twoThreads: Bool = false) throws -> [Finding] {
        let session = try EvidenceSession()
        defer { session.scratch.remove() }
        let copy = try session.workingCopy(of: url, options: options)
        let opened = try OpenedStore.open(copy, displayPath: url.path)
        let checker = twoThreads ? StoreChecker(opened: opened, copy: copy) : StoreChecker(opened: opened, notes: copy.notes)
        let findings = try checker.run(only: only)
        try session.finish()
        return findings
    }
}

@Suite("Core Data invariants")
struct CheckTests {
    struct Plant: Sendable, CustomStringConvertible {
        let id: String
        let pks: [Int]
        let plant: @Sendable (StoreWriter, StoreLayout) throws -> Void
        var description: String { id }
    }

    static func column(_ layout: StoreLayout, _ entity: String, _ property: String) -> String {
        layout.column(entity: entity, property: property) ?? "?"
    }

    static let plants: [Plant] = [
        Plant(id: "zmax-below-max-pk", pks: [2, 3]) { w, _ in try w.executeRaw("UPDATE Z_PRIMARYKEY SET Z_MAX = 1 WHERE Z_NAME = 'Note'") },
        Plant(id: "zmax-exhausted", pks: []) { w, _ in try w.executeRaw("UPDATE Z_PRIMARYKEY SET Z_MAX = 9223372036854775807 WHERE Z_NAME = 'Tag'") },
        Plant(id: "unknown-entity-rows", pks: [2]) { w, _ in try w.executeRaw("UPDATE ZNOTE SET Z_ENT = 99 WHERE Z_PK = 2") },
        Plant(id: "dangling-to-one", pks: [1]) { w, l in try w.executeRaw("UPDATE ZATTACHMENT SET \(column(l, "Attachment", "note")) = 999 WHERE Z_PK = 1") },
        Plant(id: "fek-mismatch", pks: [2]) { w, l in
            let fek = try #require(l.foreignEntityKeyColumn(entity: "Attachment", relationship: "note"))
            try w.executeRaw("UPDATE ZATTACHMENT SET \(fek) = 1 WHERE Z_PK = 2")  // the target is a ChecklistNote (2)
        },
        Plant(id: "one-to-one-mismatch", pks: [1]) { w, l in try w.executeRaw("UPDATE ZPROFILE SET \(column(l, "Profile", "account")) = NULL WHERE Z_PK = 1") },
        Plant(id: "orphan-join-rows", pks: []) { w, l in
            let join = try #require(l.joinTables.first)
            try w.executeRaw("INSERT INTO \(join.name) (\(join.firstColumn), \(join.secondColumn)) VALUES (999, 1)")
        },
        Plant(id: "required-null", pks: [1]) { w, _ in try w.executeRaw("UPDATE ZNOTE SET ZTITLE = NULL WHERE Z_PK = 1") },
        Plant(id: "unique-duplicates", pks: [1, 2]) { w, _ in
            try w.executeRaw("DROP INDEX Z_Tag_UNIQUE_name")
            try w.executeRaw("UPDATE ZTAG SET ZNAME = 'a' WHERE Z_PK = 2")
        },
        Plant(id: "bad-z-opt", pks: [1]) { w, _ in try w.executeRaw("UPDATE ZACCOUNT SET Z_OPT = NULL WHERE Z_PK = 1") },
        Plant(id: "history-unknown-entity", pks: []) { w, _ in
            try w.executeRaw("INSERT INTO ACHANGE (Z_PK, Z_ENT, ZCHANGETYPE, ZENTITY, ZENTITYPK, ZTRANSACTIONID) VALUES (900, 16001, 0, 77, 1, 1)")
            try w.executeRaw("UPDATE Z_PRIMARYKEY SET Z_MAX = 901 WHERE Z_ENT = 16001")
        },
        Plant(id: "history-missing-transaction", pks: []) { w, _ in
            try w.executeRaw("INSERT INTO ACHANGE (Z_PK, Z_ENT, ZCHANGETYPE, ZENTITY, ZENTITYPK, ZTRANSACTIONID) VALUES (901, 16001, 0, 1, 1, 555)")
            try w.executeRaw("UPDATE Z_PRIMARYKEY SET Z_MAX = 901 WHERE Z_ENT = 16001")
        },
        Plant(id: "metadata-model-mismatch", pks: []) { w, _ in
            let plist = BinaryPlistWriter.encode(.dictionary(["NSStoreType": .string("SQLite"), "NSStoreModelVersionIdentifiers": .array([.string("1.0.0")]),
                                                               "NSStoreModelVersionHashes": .dictionary(["Note": .data(Data(count: 32)), "Gone": .data(Data(count: 32))])]))
            try w.executeRaw("UPDATE Z_METADATA SET Z_PLIST = ?", [.blob(plist)])
        },
        Plant(id: "external-data-missing", pks: [2]) { w, _ in
            let folder = w.supportFolder.appendingPathComponent("_EXTERNAL_DATA")
            for name in try FileManager.default.contentsOfDirectory(atPath: folder.path) {
                try FileManager.default.removeItem(at: folder.appendingPathComponent(name))
            }
        },
        Plant(id: "cloudkit-orphan-metadata", pks: [2]) { w, _ in
            try w.executeRaw("CREATE TABLE ANSCKRECORDMETADATA ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZENTITYID INTEGER, ZENTITYPK INTEGER, ZCKRECORDNAME VARCHAR )")
            try w.executeRaw("INSERT INTO ANSCKRECORDMETADATA VALUES (1, 17012, 1, 1, 1, 'a'), (2, 17012, 1, 1, 42, 'b')")
        },
    ]

    @Test("each planted problem is found, with its primary keys, and the rest of the store checks clean", arguments: plants)
    func planted(_ p: Plant) throws {
        let folder = try TemporaryFolder("check-\(p.id)")
        let url = try CheckFixture.make(in: folder.url) { w in try p.plant(w, w.layout) }
        let before = try FolderSnapshot(folder.url)
        let findings = try CheckFixture.check(url)
        #expect(try FolderSnapshot(folder.url) == before, "checking leaves the input byte-identical")
        #expect(findings.map(\.id) == [p.id], "\(findings.map { "\($0.id): \($0.message)" })")
        let f = try #require(findings.first)
        if !p.pks.isEmpty {
            #expect(f.evidence["pks"] == .list(p.pks.map(EvidenceValue.int)), "\(f.evidence)")
            #expect(f.evidence["count"] == .int(p.pks.count))
        }
    }

    @Test("every problem at once: two threads find exactly what one finds, in the same order")
    func allAtOnce() throws {
        let folder = try TemporaryFolder("check-all")
        let url = try CheckFixture.make(in: folder.url) { w in
            for p in Self.plants { try p.plant(w, w.layout) }
        }
        let one = try CheckFixture.check(url)
        let two = try CheckFixture.check(url, twoThreads: true)
        // Every plant but the one whose problem another plant hides (none do): each id is found.
        #expect(Set(one.map(\.id)) == Set(Self.plants.map(\.id)), "\(Set(Self.plants.map(\.id)).subtracting(one.map(\.id)))")
        #expect(one.map(\.id) == two.map(\.id))
        #expect(one.map(\.message) == two.map(\.message))
        #expect(one.map(\.evidence) == two.map(\.evidence))
    }

    /// The row screen joins a to-one target only where its Z_PK is the rowid: a hand-made target
    /// table that repeats a Z_PK would give a source row twice, and every other count of the scan
    /// with it. Such a target's checks run their own queries; the counts stay one per row.
    @Test("a target table whose Z_PK repeats: each count is still one per row")
    func repeatedTargetKey() throws {
        let folder = try TemporaryFolder("check-repeated-key")
        var noteColumn = ""
        let url = try CheckFixture.make(in: folder.url) { w in
            noteColumn = Self.column(w.layout, "Attachment", "note")
            try w.executeRaw("UPDATE ZATTACHMENT SET Z_OPT = NULL WHERE \(noteColumn) = 1")
            try w.executeRaw("UPDATE ZATTACHMENT SET \(noteColumn) = 999 WHERE Z_PK = (SELECT max(Z_PK) FROM ZATTACHMENT)")
            try w.executeRaw("CREATE TABLE ZNOTE_REBUILT AS SELECT * FROM ZNOTE")
            try w.executeRaw("INSERT INTO ZNOTE_REBUILT SELECT * FROM ZNOTE WHERE Z_PK = 1")
            try w.executeRaw("DROP TABLE ZNOTE")
            try w.executeRaw("ALTER TABLE ZNOTE_REBUILT RENAME TO ZNOTE")
        }
        // The truth, from the file with SQLite.
        let db = try Connection.open(path: url.path, mode: .readOnly)
        let zOpt = try #require(try db.scalar("SELECT count(*) FROM ZATTACHMENT WHERE Z_OPT IS NULL").int)
        let dangling = try db.rows("SELECT a.Z_PK FROM ZATTACHMENT a WHERE a.\(noteColumn) IS NOT NULL AND NOT EXISTS (SELECT 1 FROM ZNOTE n WHERE n.Z_PK = a.\(noteColumn))").compactMap { $0[0].int }
        #expect(zOpt >= 1 && dangling.count == 1)
        for twoThreads in [false, true] {
            let findings = try CheckFixture.check(url, twoThreads: twoThreads)
            #expect(findings.first { $0.id == "bad-z-opt" && $0.entity == "Attachment" }?.evidence["count"] == .int(zOpt), "\(findings.map(\.message))")
            let found = findings.first { $0.id == "dangling-to-one" && $0.entity == "Attachment" }
            #expect(found?.evidence["pks"] == .list(dangling.map(EvidenceValue.int)), "\(findings.map(\.message))")
        }
    }

    @Test("the clean fixture has no findings")
    func clean() throws {
        let folder = try TemporaryFolder("check-clean")
        #expect(try CheckFixture.check(try CheckFixture.make(in: folder.url)).isEmpty)
    }

    @Test("a damaged page is reported by SQLite's own check")
    func sqliteIntegrity() throws {
        let folder = try TemporaryFolder("check-integrity")
        let url = try CheckFixture.make(in: folder.url)
        // Garble the root page of an index: quick_check notices, PRAGMA-free reads of the table do not.
        let root = try Connection.open(path: url.path, mode: .readOnly)
            .scalar("SELECT rootpage FROM sqlite_master WHERE name = 'Z_Tag_UNIQUE_name'").int ?? 0
        #expect(root > 1)
        let handle = try FileHandle(forUpdating: url)
        try handle.seek(toOffset: UInt64((root - 1) * 4096 + 8))
        handle.write(Data(repeating: 0xEE, count: 64))
        try handle.close()
        let findings = try CheckFixture.check(url, only: [.sqliteIntegrity])
        #expect(findings.map(\.id) == ["sqlite-integrity"])
    }

    @Test("a -shm without its -wal, and a -wal of the wrong page size")
    func walFindings() throws {
        let folder = try TemporaryFolder("check-wal")
        let url = folder.path("default.store")
        let w = try StoreWriter(url: url, model: CheckFixture.model)
        try w.transaction { try $0.insert("Tag", ["name": .string("x")]) }
        try w.checkpoint()
        try w.transaction { try $0.insert("Tag", ["name": .string("y")]) }
        try w.close(leavingWAL: true)
        try FileManager.default.removeItem(atPath: url.path + "-wal")
        #expect(try CheckFixture.check(url).map(\.id) == ["wal-missing"])

        let other = folder.path("other.db")
        let db = try Connection.open(path: other.path, mode: .create)
        try db.execute("PRAGMA page_size = 1024; PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0; CREATE TABLE t (x); INSERT INTO t VALUES (1);")
        try db.disableCheckpointOnClose()
        try FileManager.default.copyItem(atPath: other.path + "-wal", toPath: url.path + "-wal")
        #expect(try CheckFixture.check(url).map(\.id) == ["wal-page-size-mismatch"])
    }

    @Test("Apple's layouts: a reflexive join table's rows are checked; an optional to-one with a minimum count may be NULL")
    func appleLayouts() throws {
        let folder = try TemporaryFolder("check-apple")
        let url = folder.path("Photos.sqlite")
        let model = ModelDescription(entities: [
            EntityDescription("Asset", attributes: [.init("title", .string)]),
            EntityDescription("Album", relationships: [.init("keyAsset", to: "Asset", optional: true, minCount: 1)]),
            EntityDescription("Person", relationships: [.init("mergeCandidates", to: "Person", inverse: "mergeCandidates", toMany: true)]),
        ], inheritedPropertiesInCache: .copies)
        let w = try StoreWriter(url: url, model: model)
        try w.transaction { w in
            _ = try w.insert("Album")  // keyAsset NULL: optional wins over NSMinCount 1 (Photos' GenericAlbum.keyAsset)
            let a = try w.insert("Person"), b = try w.insert("Person")
            try w.link("Person", pk: a, "mergeCandidates", to: [b])
        }
        let join = try #require(w.layout.joinTables.first)
        #expect(join.secondColumn == "REFLEXIVE")
        try w.close()
        #expect(try CheckFixture.check(url).isEmpty, "a clean store with Apple's layouts has no findings")

        let planted = folder.path("Planted.sqlite")
        try FileManager.default.copyItem(at: url, to: planted)
        let db = try Connection.open(path: planted.path, mode: .readWrite)
        try db.execute("INSERT INTO \(join.name) (\(join.firstColumn), REFLEXIVE) VALUES (1, 999)")
        let findings = try CheckFixture.check(planted)
        #expect(findings.map(\.id) == ["orphan-join-rows"], "\(findings.map(\.message))")
    }

    @Test("the genuine stores check clean", .enabled(if: ProjectPaths.hasRealFixtures, Comment(rawValue: ProjectPaths.realFixturesMissing)))
    func realStores() throws {
        let real = try #require(ProjectPaths.realFixtures())
        #expect(try CheckFixture.check(real.appendingPathComponent("swiftdata-resources/default.store")).isEmpty)
        #expect(try CheckFixture.check(real.appendingPathComponent("coredata-2014/Model.sqlite")).isEmpty)
    }
}
