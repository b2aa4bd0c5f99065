import CoreDataStore
import Foundation
import SQLiteAccess
import StoreFormats
import StoreTestSupport
import Testing
@testable import WALForensics

/// Carving against a ground truth SQLite itself wrote: Core Data-shaped tables (`Z_PK`, `Z_ENT`,
/// `Z_OPT`, `Z_PRIMARYKEY`), secure_delete off and auto_vacuum none, records inserted, updated and
/// deleted in the main file, in a WAL generation later checkpointed and restarted (its tail left as
/// an older generation), in the current generation, and in a transaction spilled to the WAL but
/// never committed; and a `-journal` kept by journal_mode=PERSIST. Every version written has a
/// unique text, so the test knows which versions are in which bytes (their text is there) and
/// measures, per source, recall (versions in those bytes that recover lists with a place there)
/// and precision (listed versions that are exactly a version written).
@Suite("Carving record versions out of free space, freelist pages, uncommitted and older frames, and a -journal")
struct CarvingTests {
    typealias Place = CarvingCorpus.Place

    @Test("WAL corpus: main file, committed, uncommitted and older-generation frames")
    func walCorpus() throws {
        let (ledger, copy, builder) = try CarvingCorpus.makeWAL()
        defer { withExtendedLifetime(builder) {} }
        let evidence = try copy.evidence(withSharedMemory: false)
        if let keep = ProcessInfo.processInfo.environment["CARVE_KEEP"] {
            for f in [copy.db, copy.wal] { try? FileManager.default.copyItem(at: f, to: URL(fileURLWithPath: keep).appendingPathComponent(f.lastPathComponent)) }
        }
        let wal = try #require(evidence.wal)
        let pageSize = try #require(wal.pageSize)
        let lastCommit = try #require(try SQLiteWALBuilder.sqliteLastCommitFrame(copy))
        let walBytes = try Data(contentsOf: copy.wal)
        var regions = CarvingCorpus.walRegions(walBytes, lastCommit: lastCommit, pageSize: pageSize)
        regions[.mainFile] = try Data(contentsOf: copy.db)
        #expect(regions[.uncommitted]!.count > 0, "the corpus has frames after the last commit")
        #expect(regions[.olderGeneration]!.count > 0, "the corpus has an older WAL generation")
        let header = try DatabaseHeader(data: regions[.mainFile]!)
        #expect(header.freelistPageCount > 0, "the corpus has freelist pages")

        let versions = try RecordRecovery.versions(evidence, carve: true)
        let result = CarvingCorpus.measure(versions, written: ledger.written, regions: regions, label: "WAL corpus")
        #expect(result.wrong.isEmpty, "listed but never written: \(result.wrong.prefix(10))")
        #expect(result.precision == 1.0)
        for place in [Place.mainFile, .committedWAL, .uncommitted, .olderGeneration] {
            let m = try #require(result.recall[place])
            #expect(m.present > 0, "\(place.rawValue) holds versions")
            #expect(m.recall >= Self.floor[place]!, "\(place.rawValue): \(m.found)/\(m.present)")
        }
        // The states: uncommitted cells are uncommitted; nothing carved claims a commit.
        #expect(versions.contains { $0.state == .uncommitted })
        #expect(versions.contains { $0.state == .carved })
        for v in versions where v.state == .carved || v.state == .uncommitted {
            #expect(v.sources.isEmpty && !v.finds.isEmpty)
            #expect(v.confidence == .whole || v.uncertainColumns == ["Z_PK"] || v.pkIsKnown)
        }
        // Folded: no two listed versions are the same entity, key and values.
        var seen: Set<String> = []
        for v in versions where v.pkIsKnown {
            let key = "\(v.entityNumber)/\(v.pk)/" + RecordRecovery.fingerprint(v.values)
            #expect(seen.insert(key).inserted, "\(key) listed twice")
        }
        // Without carving the committed versions are unchanged (what RecordRecoveryTests pin down).
        let committed = try RecordRecovery.versions(evidence)
        #expect(committed.allSatisfy { $0.finds.isEmpty && $0.state != .carved && $0.state != .uncommitted })
        #expect(committed.count == versions.filter { !$0.sources.isEmpty }.count)
        // The state filter keeps only what it names, and changes nothing of what it keeps: without
        // `live`, untouched live rows are read only when a carved record could fold into them.
        func described(_ v: RecordVersion) -> String {
            "\(v.entityNumber)/\(v.pkIsKnown ? String(v.pk) : "?")/\(v.state)/\(v.confidence)/\(v.uncertainColumns)/"
                + RecordRecovery.fingerprint(v.values) + "/\(v.sources.map(\.firstCommit))/\(v.finds)"
        }
        for states: Set<RecordVersion.State> in [[.carved], [.deleted, .carved], [.superseded, .uncommitted], [.live]] {
            let filtered = try RecordRecovery.versions(evidence, filter: .init(states: states), carve: true)
            #expect(filtered.map(described) == versions.filter { states.contains($0.state) }.map(described), "--state \(states)")
        }
    }

    /// Recall floors per place, set just under what this corpus measures (the figures are printed):
    /// a record whose bytes SQLite later overwrote in part is in the bytes by its text but cannot
    /// be read back whole, and is rightly not listed.
    static let floor: [Place: Double] = [.mainFile: 0.98, .committedWAL: 0.98, .uncommitted: 0.98, .olderGeneration: 0.98, .journal: 0.98]

    @Test("Journal corpus: journal_mode=PERSIST keeps the pages a transaction changed")
    func journalCorpus() throws {
        let folder = try TemporaryFolder("carve-journal")
        let path = folder.path("db.sqlite").path
        let ledger = CarvingCorpus.Ledger()
        do {
            let c = try Connection.open(path: path, mode: .create)
            try c.execute("PRAGMA page_size = 4096; PRAGMA auto_vacuum = NONE; PRAGMA journal_mode = PERSIST; PRAGMA secure_delete = OFF")
            try c.execute(CarvingCorpus.schema)
            try c.execute("BEGIN")
            for pk in Int64(1) ... 150 { try ledger.item(c, pk, version: 0) }
            try c.execute("COMMIT")
            try c.execute("BEGIN")
            for pk in Int64(1) ... 150 where pk % 3 == 0 { try ledger.delete(c, pk) }
            for pk in Int64(1) ... 150 where pk % 5 == 0 && ledger.items[pk] != nil { try ledger.item(c, pk, version: 1) }
            try c.execute("COMMIT")
        }
        let journal = try Data(contentsOf: URL(fileURLWithPath: path + "-journal"))
        let main = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect(journal.count > 4096, "journal_mode=PERSIST left the journal's records")
        var evidence = WALEvidence(displayPath: "db.sqlite", mainFile: main, walData: nil)
        evidence.journalData = journal
        let versions = try RecordRecovery.versions(evidence, carve: true)
        let result = CarvingCorpus.measure(versions, written: ledger.written, regions: [.mainFile: main, .journal: journal], label: "journal corpus")
        #expect(result.wrong.isEmpty, "listed but never written: \(result.wrong.prefix(10))")
        #expect(result.precision == 1.0)
        for place in [Place.mainFile, .journal] {
            let m = try #require(result.recall[place])
            #expect(m.present > 0, "\(place.rawValue) holds versions")
            #expect(m.recall >= Self.floor[place]!, "\(place.rawValue): \(m.found)/\(m.present)")
        }
    }
}
