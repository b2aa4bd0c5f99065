import CoreDataStore
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import SQLiteAccess
import StoreFormats
import StoreTestSupport
import Testing
@testable import WALForensics

/// Records whose payload spills to overflow pages (texts of 5–20 KB at page size 4096), written by
/// SQLite itself and then deleted in the main file (freeblocks and freelist leaves), superseded in
/// committed frames, left in an older WAL generation, in frames after the last commit and in a kept
/// `-journal`. The truth is what SQLite stored (read back from it); recall and precision are
/// measured as `CarvingCorpus` measures them, every value compared whole.
@Suite("Carving records whose payload spills to overflow pages")
struct OverflowCarvingTests {
    typealias Place = CarvingCorpus.Place

    /// Bytes of the big text of `pk` at `version`: 5 000 to 20 000, so every record spills.
    static func size(_ pk: Int64, _ version: Int) -> Int { 5000 + Int((pk * 1237 + Int64(version) * 611) % 15000) }

    /// A text of `bytes` bytes no other version shares a piece of (a counter after the version's
    /// own tag), and which does not contain the version's name (recall looks for the name).
    static func bigText(pk: Int64, version: Int, pending: Bool, bytes: Int) -> String {
        var s = ""
        var i = 0
        let tag = "\(pending ? "P" : "O")\(pk).\(version)"
        while s.utf8.count < bytes {
            s += "\(tag):\(i);"
            i += 1
        }
        return String(s.prefix(bytes))
    }

    /// The corpus's schema: `CarvingCorpus`' tables.
    static let schema = CarvingCorpus.schema

    /// Bytes that may hold overflow pages, and which offsets in them are the start of a page's
    /// content (just after its 4-byte next-page number).
    struct ChainBytes {
        let data: Data
        let isContentStart: (Int) -> Bool

        static func mainFile(_ data: Data, pageSize: Int) -> ChainBytes {
            ChainBytes(data: data) { $0 % pageSize == 4 }
        }
        static func wal(_ data: Data, pageSize: Int) -> ChainBytes {
            ChainBytes(data: data) { $0 >= 56 && ($0 - 56) % (pageSize + 24) == 4 }
        }
        /// A `-journal`: records of a page number, the page and a checksum after a header of one sector.
        static func journal(_ data: Data, pageSize: Int) -> ChainBytes {
            ChainBytes(data: data) { offset in
                [512, 1024, 2048, 4096, 8192, 16384, 32768, 65536].contains { offset >= $0 + 4 && (offset - $0 - 4) % (pageSize + 8) == 4 }
            }
        }
    }

    /// Whether a copy of a spilled version is in `region` with its whole payload readable: its
    /// name followed by the start of its note somewhere in `region` (the cell's local part), and
    /// the rest of the note as whole overflow pages' content, each piece starting where a page's
    /// content starts, in `chains`. A copy whose local part was cut short, or one of whose overflow
    /// pages was overwritten (made a freelist trunk, taken by another record), is not in the bytes,
    /// and no carver could read it back: it does not count against recall.
    static func whole(name: String, note: String, in region: Data, chains: [ChainBytes]) -> Bool {
        whole(name: name, value: Array(note.utf8), in: region, chains: chains)
    }

    /// `whole(name:note:in:chains:)` for a value of any bytes (a blob) stored right after the name.
    static func whole(name: String, value note: [UInt8], in region: Data, chains: [ChainBytes]) -> Bool {
        let name = Array(name.utf8)
        let head = name + note.prefix(16)
        let local: Int? = region.withUnsafeBytes { (r: UnsafeRawBufferPointer) -> Int? in
            head.withUnsafeBytes { (h: UnsafeRawBufferPointer) -> Int? in
                var best: Int?
                for start in Self.occurrences(h, in: r) {
                    var length = 0
                    while length < note.count, start + name.count + length < r.count, r[start + name.count + length] == note[length] { length += 1 }
                    best = max(best ?? 0, length)
                }
                return best
            }
        }
        guard var at = local else { return false }
        while at < note.count {
            var best = 0
            for chain in chains {
                chain.data.withUnsafeBytes { (h: UnsafeRawBufferPointer) in
                    note.withUnsafeBytes { (n: UnsafeRawBufferPointer) in
                        let probe = UnsafeRawBufferPointer(rebasing: n[at ..< at + min(24, n.count - at)])
                        for start in Self.occurrences(probe, in: h) where chain.isContentStart(start) {
                            var length = 0
                            while at + length < n.count, start + length < h.count, h[start + length] == n[at + length] { length += 1 }
                            best = max(best, length)
                        }
                    }
                }
            }
            guard best > 0 else { return false }
            at += best
        }
        return true
    }

    /// Every offset where `needle` occurs in `haystack` (memchr on the first byte, then memcmp).
    static func occurrences(_ needle: UnsafeRawBufferPointer, in haystack: UnsafeRawBufferPointer) -> [Int] {
        guard let n = needle.baseAddress, let h = haystack.baseAddress, !needle.isEmpty else { return [] }
        var out: [Int] = []
        var at = 0
        while at + needle.count <= haystack.count, let hit = memchr(h + at, Int32(needle[0]), haystack.count - at - needle.count + 1) {
            let offset = h.distance(to: UnsafeRawPointer(hit))
            if memcmp(h + offset, n, needle.count) == 0 { out.append(offset) }
            at = offset + 1
        }
        return out
    }

    struct Figures {
        var recall: [Place: CarvingCorpus.Measure] = [:]
        /// Listed spilled versions: exactly a version written; differing from one only in columns
        /// they list as uncertain; anything else.
        var exact = 0, uncertainOnly = 0
        /// Per place, the versions found there by carving (a find in that place).
        var carved: [Place: Int] = [:]
        var wrong: [String] = []
        var listed: Int { exact + uncertainOnly + wrong.count }
    }

    /// Recall per place of the spilled versions whose name is in that place's bytes and whose
    /// whole note is in the bytes the place's chains are read from; precision over the listed
    /// versions with a spilled version's name. Prints the figures.
    static func measure(_ versions: [RecordVersion], written: [CarvingCorpus.Written], regions: [Place: Data],
                        chainBytes: [Place: [ChainBytes]], label: String) -> Figures {
        var figures = Figures()
        let byText = Dictionary(grouping: written, by: \.text)
        for v in versions {
            guard let t = CarvingCorpus.text(v), let candidates = byText[t] else { continue }
            if candidates.contains(where: { CarvingCorpus.matches(v, $0) }) {
                figures.exact += 1
            } else if candidates.contains(where: { w in
                v.values.allSatisfy { value in
                    v.uncertainColumns.contains(value.name)
                        || w.values[value.name].map { String(reflecting: ValueDecoder.natural($0)) == String(reflecting: value.value) } ?? false
                }
            }) {
                figures.uncertainOnly += 1
            } else {
                figures.wrong.append("\(v.state.rawValue) \(v.entity)#\(v.pk) \(t) uncertain \(v.uncertainColumns)")
            }
        }
        for (place, bytes) in regions {
            var m = CarvingCorpus.Measure()
            var missed: [String] = []
            for w in written where bytes.range(of: Data(w.text.utf8)) != nil {
                guard let note = w.values["ZNOTE"]?.string, whole(name: w.text, note: note, in: bytes, chains: chainBytes[place] ?? []) else { continue }
                m.present += 1
                if let v = versions.first(where: { CarvingCorpus.text($0) == w.text && CarvingCorpus.matches($0, w) && CarvingCorpus.places($0).contains(place) }) {
                    m.found += 1
                    // Found by carving: a find there, not (only) a committed state.
                    if v.finds.contains(where: { CarvingCorpus.places(RecordVersion.carvedProbe($0)).contains(place) }) {
                        figures.carved[place, default: 0] += 1
                    }
                } else {
                    missed.append(w.text)
                }
            }
            if !missed.isEmpty { print("[\(label)] \(place.rawValue) missed: \(missed.prefix(8))") }
            figures.recall[place] = m
        }
        let line = Place.allCases.compactMap { p in
            figures.recall[p].map { "\(p.rawValue) \($0.found)/\($0.present) (\(figures.carved[p] ?? 0) by carving)" }
        }
        print("[\(label)] recall: " + line.joined(separator: ", ")
              + "; listed \(figures.listed): exact \(figures.exact), differing only in uncertain columns \(figures.uncertainOnly), wrong \(figures.wrong.count)")
        return figures
    }

    /// The corpus tables' shapes as `CarvingShape.shapes` reads them, for carving without a state.
    static let shapes: [CarvingShape] = [
        CarvingShape(table: "ZITEM", columns: [.init(name: "Z_PK", kind: .integer), .init(name: "Z_ENT", kind: .integer),
                                               .init(name: "Z_OPT", kind: .integer), .init(name: "ZQUANTITY", kind: .integer),
                                               .init(name: "ZADDED", kind: .timestamp), .init(name: "ZNAME", kind: .text),
                                               .init(name: "ZNOTE", kind: .text)],
                     entities: [1], pkIndex: 0, entIndex: 1, optIndex: 2),
        CarvingShape(table: "ZTAG", columns: [.init(name: "Z_PK", kind: .integer), .init(name: "Z_ENT", kind: .integer),
                                              .init(name: "Z_OPT", kind: .integer), .init(name: "ZITEM", kind: .integer, isKey: true),
                                              .init(name: "ZLABEL", kind: .text)],
                     entities: [2], pkIndex: 0, entIndex: 1, optIndex: 2),
    ]

    /// Every record the carver finds in `evidence` and the candidates it turned away, by rule.
    static func carve(_ evidence: WALEvidence) throws -> (hits: [StoreCarver.Hit], rejected: [String: Int]) {
        var carver = try #require(StoreCarver(evidence: evidence, shapes: shapes))
        var hits: [StoreCarver.Hit] = []
        carver.carve { hits.append($0) }
        return (hits, carver.carver.rejected)
    }

    @Test("WAL corpus: spilled records in the main file, committed, uncommitted and older-generation frames")
    func walCorpus() throws {
        let ledger = CarvingCorpus.Ledger()
        var builder = try SQLiteWALBuilder("carve-overflow") { c in
            try c.execute("PRAGMA secure_delete = OFF")
            try c.execute(Self.schema)
            try c.execute("BEGIN")
            for pk in Int64(1) ... 48 { try ledger.bigItem(c, pk, version: 0) }
            for pk in Int64(49) ... 60 { try ledger.item(c, pk, version: 0) }
            try c.execute("COMMIT")
        }
        // Generation 1: commits of new spilled records, an update that rewrites two of them, and a
        // last commit that deletes (scattered and a run) with nothing written after it.
        for round in Int64(0) ..< 16 {
            try builder.writer.execute("BEGIN")
            for k in Int64(0) ..< 3 { try ledger.bigItem(builder.writer, 100 + round * 3 + k, version: 0) }
            try builder.writer.execute("COMMIT")
        }
        try builder.writer.execute("BEGIN")
        for pk: Int64 in [100, 103] { try ledger.bigItem(builder.writer, pk, version: 1) }
        try builder.writer.execute("COMMIT")
        try builder.writer.execute("BEGIN")
        for pk in Int64(1) ... 48 where pk % 4 == 0 && !(20 ... 31).contains(pk) { try ledger.delete(builder.writer, pk) }
        for pk in Int64(20) ... 31 { try ledger.delete(builder.writer, pk) }
        for pk: Int64 in [101, 104, 107] { try ledger.delete(builder.writer, pk) }
        try builder.writer.execute("COMMIT")
        _ = try builder.writer.rows("PRAGMA wal_checkpoint(RESTART)")
        // Generation 2: a commit deleting two spilled records (their cells freed in its frames),
        // then a small one; generation 1's tail stays as an older generation.
        try builder.writer.execute("BEGIN")
        for pk: Int64 in [2, 3] { try ledger.delete(builder.writer, pk) }
        try builder.writer.execute("COMMIT")
        try builder.writer.execute("BEGIN")
        try ledger.item(builder.writer, 49, version: 1)
        try builder.writer.execute("COMMIT")
        // A transaction larger than the page cache spills its frames, overflow pages included.
        try builder.writer.execute("PRAGMA cache_size = 10")
        try builder.writer.execute("BEGIN")
        for pk in Int64(2001) ... 2012 { try ledger.bigItem(builder.writer, pk, version: 0, pending: true) }
        let copy = try builder.copy()
        try builder.writer.execute("ROLLBACK")

        let evidence = try copy.evidence(withSharedMemory: false)
        if let keep = ProcessInfo.processInfo.environment["CARVE_KEEP"] {
            for f in [copy.db, copy.wal] {
                try? FileManager.default.copyItem(at: f, to: URL(fileURLWithPath: keep).appendingPathComponent("overflow-" + f.lastPathComponent))
            }
        }
        let wal = try #require(evidence.wal)
        let pageSize = try #require(wal.pageSize)
        let lastCommit = try #require(try SQLiteWALBuilder.sqliteLastCommitFrame(copy))
        var regions = CarvingCorpus.walRegions(try Data(contentsOf: copy.wal), lastCommit: lastCommit, pageSize: pageSize)
        regions[.mainFile] = try Data(contentsOf: copy.db)
        #expect(regions[.uncommitted]!.count > 0, "the corpus has frames after the last commit")
        #expect(regions[.olderGeneration]!.count > 0, "the corpus has an older WAL generation")
        #expect(try DatabaseHeader(data: regions[.mainFile]!).freelistPageCount > 0, "the corpus has freelist pages")

        let versions = try RecordRecovery.versions(evidence, carve: true)
        let spilled = ledger.written.filter { $0.values["ZNOTE"]?.string.map { $0.utf8.count >= 5000 } ?? false }
        let walBytes = try Data(contentsOf: copy.wal)
        let main = regions[.mainFile]!
        let result = Self.measure(versions, written: spilled, regions: regions,
                                  chainBytes: [.mainFile: [.mainFile(main, pageSize: pageSize)],
                                               .committedWAL: [.wal(walBytes, pageSize: pageSize), .mainFile(main, pageSize: pageSize)],
                                               .uncommitted: [.wal(walBytes, pageSize: pageSize), .mainFile(main, pageSize: pageSize)],
                                               .olderGeneration: [.wal(walBytes, pageSize: pageSize), .mainFile(main, pageSize: pageSize)]],
                                  label: "overflow WAL corpus")
        #expect(result.wrong.isEmpty, "listed but never written: \(result.wrong.prefix(5))")
        #expect(result.exact == result.listed, "precision \(result.exact)/\(result.listed)")
        for place in [Place.mainFile, .committedWAL, .uncommitted, .olderGeneration] {
            let m = try #require(result.recall[place])
            #expect(m.present > 0, "\(place.rawValue) holds spilled versions")
            #expect(m.recall == 1.0, "\(place.rawValue): \(m.found)/\(m.present)")
        }
        // Spilled records were carved, not only read from the committed states.
        let names = Set(spilled.map(\.text))
        let carvedBig = versions.filter { ($0.state == .carved || $0.state == .uncommitted) && CarvingCorpus.text($0).map(names.contains) ?? false }
        #expect(carvedBig.contains { $0.state == .uncommitted })
        #expect(carvedBig.contains { $0.state == .carved })
        // A chain nothing proves is still the freed record's marks the columns read from it.
        for v in carvedBig where v.finds.allSatisfy({ $0.area != .cell }) {
            #expect(v.uncertainColumns.contains("ZNOTE"), "\(v.entity)#\(v.pk): \(v.uncertainColumns)")
        }
        let rejected = try Self.carve(evidence).rejected.filter { $0.key.hasPrefix("overflow") }
        print("[overflow WAL corpus] spilled candidates turned away: \(rejected.sorted { $0.key < $1.key })")
    }

    @Test("Journal corpus: spilled records in a kept -journal and the main file's freelist")
    func journalCorpus() throws {
        let folder = try TemporaryFolder("carve-overflow-journal")
        let path = folder.path("db.sqlite").path
        let ledger = CarvingCorpus.Ledger()
        do {
            let c = try Connection.open(path: path, mode: .create)
            try c.execute("PRAGMA page_size = 4096; PRAGMA auto_vacuum = NONE; PRAGMA journal_mode = PERSIST; PRAGMA secure_delete = OFF")
            try c.execute(Self.schema)
            try c.execute("BEGIN")
            for pk in Int64(1) ... 40 { try ledger.bigItem(c, pk, version: 0) }
            try c.execute("COMMIT")
            try c.execute("BEGIN")
            for pk in Int64(1) ... 40 where pk % 3 == 0 { try ledger.delete(c, pk) }
            try c.execute("COMMIT")
        }
        let journal = try Data(contentsOf: URL(fileURLWithPath: path + "-journal"))
        let main = try Data(contentsOf: URL(fileURLWithPath: path))
        var evidence = WALEvidence(displayPath: "db.sqlite", mainFile: main, walData: nil)
        evidence.journalData = journal
        let versions = try RecordRecovery.versions(evidence, carve: true)
        let result = Self.measure(versions, written: ledger.written, regions: [.mainFile: main, .journal: journal],
                                  chainBytes: [.mainFile: [.mainFile(main, pageSize: 4096)],
                                               .journal: [.journal(journal, pageSize: 4096), .mainFile(main, pageSize: 4096)]],
                                  label: "overflow journal corpus")
        #expect(result.wrong.isEmpty, "listed but never written: \(result.wrong.prefix(3))")
        #expect(result.exact == result.listed, "precision \(result.exact)/\(result.listed)")
        let rejected = try Self.carve(evidence).rejected.filter { $0.key.hasPrefix("overflow") }
        print("[overflow journal corpus] spilled candidates turned away: \(rejected.sorted { $0.key < $1.key })")
        for place in [Place.mainFile, .journal] {
            let m = try #require(result.recall[place])
            #expect(m.present > 0, "\(place.rawValue) holds spilled versions")
            #expect(m.recall == 1.0, "\(place.rawValue): \(m.found)/\(m.present)")
        }
        #expect(versions.contains { $0.state == .carved })
    }

    @Test("A freed record whose overflow pages SQLite gave to another record is turned away, not read with the other's bytes")
    func reusedChain() throws {
        let folder = try TemporaryFolder("carve-overflow-reuse")
        let path = folder.path("db.sqlite").path
        let ledger = CarvingCorpus.Ledger()
        let c = try Connection.open(path: path, mode: .create)
        try c.execute("PRAGMA page_size = 4096; PRAGMA auto_vacuum = NONE; PRAGMA secure_delete = OFF")
        try c.execute(Self.schema)
        try c.execute("BEGIN")
        for pk in Int64(1) ... 12 { try ledger.item(c, pk, version: 0) }
        try ledger.bigItem(c, 20, version: 0)
        try ledger.bigItem(c, 21, version: 0)
        try c.execute("COMMIT")
        // Item 20 deleted, then a tag as large takes its pages: SQLite says the freelist is empty again.
        try ledger.delete(c, 20)
        let freed = try c.scalar("PRAGMA freelist_count").int ?? 0
        let label = Self.bigText(pk: 1, version: 9, pending: false, bytes: Self.size(20, 0) + 4092)
        try c.run("INSERT INTO ZTAG (Z_PK, Z_ENT, Z_OPT, ZITEM, ZLABEL) VALUES (1, 2, 1, NULL, ?)", [.text(label)])
        let afterReuse = try c.scalar("PRAGMA freelist_count").int ?? -1
        // Item 21 deleted, a tag takes its pages and is deleted in turn: the pages are free again, holding the tag's bytes.
        try ledger.delete(c, 21)
        try c.run("INSERT INTO ZTAG (Z_PK, Z_ENT, Z_OPT, ZITEM, ZLABEL) VALUES (2, 2, 1, NULL, ?)",
                  [.text(Self.bigText(pk: 2, version: 9, pending: false, bytes: Self.size(21, 0)))])
        try c.run("DELETE FROM ZTAG WHERE Z_PK = 2")
        let main = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect(freed > 0 && afterReuse == 0, "item 20's pages were reused (freelist \(freed) -> \(afterReuse))")
        #expect(main.range(of: Data("big-00020-v0".utf8)) != nil, "item 20's cell is still in the file")

        let evidence = WALEvidence(displayPath: "db.sqlite", mainFile: main, walData: nil)
        let versions = try RecordRecovery.versions(evidence, carve: true)
        let spilled = ledger.written.filter { $0.text.hasPrefix("big") }
        let figures = Self.measure(versions, written: spilled, regions: [.mainFile: main],
                                   chainBytes: [.mainFile: [.mainFile(main, pageSize: 4096)]], label: "reused chains")
        // Nothing listed with another record's bytes unless it says which columns are not proven.
        #expect(figures.wrong.isEmpty, "\(figures.wrong)")
        #expect(!versions.contains { CarvingCorpus.text($0) == "big-00020-v0" }, "item 20 is listed with bytes its pages no longer hold")
        for v in versions where CarvingCorpus.text(v) == "big-00021-v0" {
            #expect(v.uncertainColumns.contains("ZNOTE"), "item 21's note came from freed pages: \(v.uncertainColumns)")
        }
        let rejected = try Self.carve(evidence).rejected
        #expect(rejected.filter { $0.key.hasPrefix("overflow") }.values.reduce(0, +) > 0, "\(rejected)")
        print("[reused chains] turned away: \(rejected.filter { $0.key.hasPrefix("overflow") }.sorted { $0.key < $1.key })")
    }

    @Test("Blobs that spill: deleted 5–40 KB blobs read back byte for byte from the main file's free space and freelist")
    func blobs() throws {
        let folder = try TemporaryFolder("carve-overflow-blobs")
        let path = folder.path("db.sqlite").path
        let c = try Connection.open(path: path, mode: .create)
        try c.execute("PRAGMA page_size = 4096; PRAGMA auto_vacuum = NONE; PRAGMA secure_delete = OFF")
        try c.execute("""
            CREATE TABLE Z_PRIMARYKEY (Z_ENT INTEGER PRIMARY KEY, Z_NAME VARCHAR, Z_SUPER INTEGER, Z_MAX INTEGER);
            INSERT INTO Z_PRIMARYKEY VALUES (1, 'Attachment', 0, 0);
            CREATE TABLE ZATTACHMENT (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZTITLE VARCHAR, ZDATA BLOB);
            """)
        try c.execute("BEGIN")
        for pk in 1 ... 30 {
            try c.run("INSERT INTO ZATTACHMENT VALUES (?, 1, 1, ?, randomblob(?))",
                      [.integer(Int64(pk)), .text("attachment-\(pk)"), .integer(Int64(5000 + pk * 1181 % 35000))])
        }
        try c.execute("COMMIT")
        // What SQLite stored, read back before the deletes.
        var stored: [Int64: [UInt8]] = [:]
        for row in try c.rows("SELECT Z_PK, ZDATA FROM ZATTACHMENT") {
            if let pk = row[0].int, case .blob(let data) = row[1] { stored[Int64(pk)] = Array(data) }
        }
        try c.execute("BEGIN")
        try c.run("DELETE FROM ZATTACHMENT WHERE Z_PK % 3 = 0 OR Z_PK BETWEEN 11 AND 16")
        try c.execute("COMMIT")
        let deleted = Set(stored.keys.filter { $0 % 3 == 0 || (11 ... 16).contains($0) })
        let main = try Data(contentsOf: URL(fileURLWithPath: path))
        let shape = CarvingShape(table: "ZATTACHMENT", columns: [.init(name: "Z_PK", kind: .integer), .init(name: "Z_ENT", kind: .integer),
                                                                 .init(name: "Z_OPT", kind: .integer), .init(name: "ZTITLE", kind: .text),
                                                                 .init(name: "ZDATA", kind: .any)],
                                 entities: [1], pkIndex: 0, entIndex: 1, optIndex: 2)
        var carver = try #require(StoreCarver(evidence: WALEvidence(displayPath: "db.sqlite", mainFile: main, walData: nil), shapes: [shape]))
        var recovered: Set<Int64> = []
        var wrong: [String] = []
        carver.carve { hit in
            guard case .text(let title) = hit.record.values[3], case .blob(let data) = hit.record.values[4],
                  data.count > 4061 else { return }
            // The key from the rowid, else from the title (a freed cell lost its rowid).
            let pk = hit.record.rowid ?? Int64(String(decoding: title, as: UTF8.self).dropFirst("attachment-".count)) ?? 0
            if stored[pk] == data { recovered.insert(pk) } else { wrong.append("attachment \(pk) from \(hit.find.area) page \(hit.find.page)") }
            #expect(hit.record.uncertainColumns == [4], "a freed cell's blob is read from free pages: uncertain")
        }
        // In the bytes: its title followed by the blob's start, and the rest as whole overflow pages.
        let present = deleted.filter { pk in
            Self.whole(name: "attachment-\(pk)", value: stored[pk]!, in: main, chains: [.mainFile(main, pageSize: 4096)])
        }
        print("[spilled blobs] \(recovered.intersection(deleted).count) of \(present.count) deleted blobs in the bytes (of \(deleted.count) deleted) read back byte for byte; turned away: \(carver.carver.rejected.filter { $0.key.hasPrefix("overflow") })")
        #expect(wrong.isEmpty, "\(wrong)")
        #expect(!present.isEmpty)
        // Recall against the oracle: every blob it finds whole is read back. The oracle is the
        // stricter of the two (it wants the blob's start right after the title in the freed cell,
        // and a random blob's bytes can defeat that), so a blob read back that it missed is not a
        // failure: every blob read back was compared byte for byte with what SQLite stored above.
        #expect(present.isSubset(of: recovered), "recovered \(recovered.intersection(deleted).sorted()), in the bytes \(present.sorted())")
    }

    // MARK: - Crafted chains

    /// SQLite's varint of `v`.
    static func varint(_ v: UInt64) -> [UInt8] {
        if v > 0x00ff_ffff_ffff_ffff {
            var out: [UInt8] = []
            var x = v >> 8
            for _ in 0 ..< 8 { out.insert(UInt8(x & 0x7f) | 0x80, at: 0); x >>= 7 }
            return out + [UInt8(v & 0xff)]
        }
        var groups: [UInt8] = [UInt8(v & 0x7f)]
        var x = v >> 7
        while x != 0 { groups.insert(UInt8(x & 0x7f) | 0x80, at: 0); x >>= 7 }
        return groups
    }

    static func be32(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8(v >> 16 & 0xff), UInt8(v >> 8 & 0xff), UInt8(v & 0xff)] }

    /// A ZITEM record (Z_PK NULL, Z_ENT 1, Z_OPT 1, ZQUANTITY 5, ZADDED, ZNAME, ZNOTE), its note
    /// declared `noteLength` bytes long (the body then holds only the bytes given).
    static func itemRecord(name: String, note: [UInt8], noteLength: Int? = nil) -> [UInt8] {
        let types: [UInt64] = [0, 9, 9, 1, 7, UInt64(13 + 2 * name.utf8.count), UInt64(13 + 2 * (noteLength ?? note.count))]
        let typeBytes = types.flatMap(varint)
        let header = varint(UInt64(typeBytes.count + 1)) + typeBytes
        let added = (700_000_000.25).bitPattern
        let real = (0 ..< 8).map { UInt8(added >> (56 - 8 * UInt64($0)) & 0xff) }
        return header + [5] + real + Array(name.utf8) + note
    }

    /// A table-leaf page whose one cell holds `payload` (declared `declared` bytes) with rowid
    /// `rowid`: the local part SQLite's rules give, then `first` as the first overflow page.
    static func leafPage(payload: [UInt8], declared: Int? = nil, rowid: UInt64, first: UInt32, pageSize: Int = 4096) -> (page: [UInt8], rest: [UInt8]) {
        let p = declared ?? payload.count
        let usable = pageSize, maxLocal = usable - 35, minLocal = (usable - 12) * 32 / 255 - 23
        let k = minLocal + (p - minLocal) % (usable - 4)
        let local = min(p <= maxLocal ? p : (k <= maxLocal ? k : minLocal), payload.count)
        let cell = varint(UInt64(p)) + varint(rowid) + payload.prefix(local) + be32(first)
        var page = [UInt8](repeating: 0, count: pageSize)
        let at = pageSize - cell.count
        page[0] = 13
        page[4] = 1
        page[5] = UInt8(at >> 8); page[6] = UInt8(at & 0xff)
        page[8] = UInt8(at >> 8); page[9] = UInt8(at & 0xff)
        page.replaceSubrange(at ..< pageSize, with: cell)
        return (page, Array(payload.dropFirst(local)))
    }

    /// An overflow page: next page number, then content.
    static func overflowPage(next: UInt32, _ content: ArraySlice<UInt8>, pageSize: Int = 4096) -> [UInt8] {
        var page = be32(next) + content
        page += [UInt8](repeating: 0, count: pageSize - page.count)
        return page
    }

    /// A `-journal` with a zeroed header (as journal_mode=PERSIST leaves it) holding these page images.
    static func journal(_ records: [(UInt32, [UInt8])]) -> Data {
        var out = Data(count: 512)
        for (number, page) in records { out += be32(number) + page + [0, 0, 0, 0] }
        return out
    }

    @Test("Crafted overflow chains: page 0, page 1, past the end, a live b-tree page, self-loop, 2-cycle, too short, too long, huge lengths — turned away, no crash, no hang")
    func craftedChains() throws {
        let folder = try TemporaryFolder("carve-overflow-crafted")
        let path = folder.path("db.sqlite").path
        do {
            let c = try Connection.open(path: path, mode: .create)
            try c.execute("PRAGMA page_size = 4096; PRAGMA auto_vacuum = NONE")
            try c.execute(Self.schema)
            // A live record with an overflow chain, for a crafted cell to point into.
            try CarvingCorpus.Ledger().bigItem(c, 50, version: 0)
        }
        let main = try Data(contentsOf: URL(fileURLWithPath: path))
        // The live record's last overflow page, as SQLite's dbstat names it (its next page is 0).
        let overflowPages = try Connection.open(path: path, mode: .readOnly)
            .rows("SELECT pageno FROM dbstat WHERE pagetype = 'overflow'").compactMap { $0[0].int }
        let liveLast = try #require(overflowPages.first { p in main[(p - 1) * 4096 ..< (p - 1) * 4096 + 4].allSatisfy { $0 == 0 } })
        let pages = UInt32(main.count / 4096)
        let rootOfZITEM = try #require(try Connection.open(path: path, mode: .readOnly)
            .scalar("SELECT rootpage FROM sqlite_master WHERE name = 'ZITEM'").int)
        let leaf = pages + 1, x = pages + 2, y = pages + 3
        let note = Array(Self.bigText(pk: 7, version: 0, pending: false, bytes: 9000).utf8)
        let record = Self.itemRecord(name: "crafted-7", note: note)

        func run(_ label: String, _ records: [(UInt32, [UInt8])]) throws -> (hits: [StoreCarver.Hit], rejected: [String: Int]) {
            var evidence = WALEvidence(displayPath: "db.sqlite", mainFile: main, walData: nil)
            evidence.journalData = Self.journal(records)
            let clock = ContinuousClock.now
            let result = try Self.carve(evidence)
            _ = try RecordRecovery.versions(evidence, carve: true)
            #expect(ContinuousClock.now - clock < .seconds(10), "\(label) took too long")
            return (result.hits.filter { $0.record.values.contains(.text(Array("crafted-7".utf8))) }, result.rejected)
        }

        // The control: a chain of two pages in the journal is read back whole, as a live cell's.
        let (page, rest) = Self.leafPage(payload: record, rowid: 7, first: x)
        let control = try run("control", [(leaf, page), (x, Self.overflowPage(next: y, rest.prefix(4092))),
                                          (y, Self.overflowPage(next: 0, rest.dropFirst(4092)))])
        #expect(control.hits.count == 1)
        #expect(control.hits.first?.record.values.last == .text(note), "the control's note is read back whole")
        #expect(control.hits.first?.record.uncertainColumns == [])

        let cases: [(String, [(UInt32, [UInt8])], String?)] = [
            ("first page 0", [(leaf, Self.leafPage(payload: record, rowid: 7, first: 0).page)], "overflow-page-range"),
            ("first page 1", [(leaf, Self.leafPage(payload: record, rowid: 7, first: 1).page)], "overflow-page-range"),
            ("past the end", [(leaf, Self.leafPage(payload: record, rowid: 7, first: 0x7fff_ffff).page)], "overflow-page-range"),
            ("a live b-tree page", [(leaf, Self.leafPage(payload: record, rowid: 7, first: UInt32(rootOfZITEM)).page)], nil),
            // One overflow page wanted, and the one given is the end of another live record's chain.
            ("another live record's overflow page",
             [(leaf, Self.leafPage(payload: Self.itemRecord(name: "crafted-7", note: Array(note.prefix(4400))), rowid: 7, first: UInt32(liveLast)).page)],
             "overflow-reused"),
            ("self-loop", [(leaf, page), (x, Self.overflowPage(next: x, rest.prefix(4092)))], "overflow-loop"),
            ("2-cycle", [(leaf, Self.leafPage(payload: Self.itemRecord(name: "crafted-7", note: note + note), rowid: 7, first: x).page),
                         (x, Self.overflowPage(next: y, rest.prefix(4092))), (y, Self.overflowPage(next: x, rest.prefix(4092)))], "overflow-loop"),
            ("chain ends early", [(leaf, page), (x, Self.overflowPage(next: 0, rest.prefix(4092)))], "overflow-chain-length"),
            ("chain goes on", [(leaf, page), (x, Self.overflowPage(next: y, rest.prefix(4092))), (y, Self.overflowPage(next: x, rest.dropFirst(4092)))],
             "overflow-chain-length"),
            ("next page past the end", [(leaf, page), (x, Self.overflowPage(next: 0xffff_fff0, rest.prefix(4092)))], "overflow-page-range"),
            // 15 MiB declared: the chain is walked page by page and ends at once (nothing of that size is allocated).
            ("15 MiB declared", [(leaf, Self.leafPage(payload: Self.itemRecord(name: "crafted-7", note: note, noteLength: 15 << 20),
                                                      declared: Self.itemRecord(name: "crafted-7", note: [], noteLength: 15 << 20).count + (15 << 20),
                                                      rowid: 7, first: x).page),
                                 (x, Self.overflowPage(next: x, rest.prefix(4092)))], "overflow-loop"),
            // Over the cap, or absurd: not even a candidate.
            ("1 GiB declared", [(leaf, Self.leafPage(payload: Self.itemRecord(name: "crafted-7", note: note, noteLength: 1 << 30),
                                                     declared: Self.itemRecord(name: "crafted-7", note: [], noteLength: 1 << 30).count + (1 << 30),
                                                     rowid: 7, first: x).page)], nil),
            ("2^62 declared", [(leaf, Self.leafPage(payload: record, declared: 1 << 62, rowid: 7, first: x).page)], nil),
        ]
        for (label, records, reason) in cases {
            let result = try run(label, records)
            #expect(result.hits.isEmpty, "\(label): \(result.hits.count) records")
            if let reason { #expect((result.rejected[reason] ?? 0) > 0, "\(label): \(result.rejected)") }
        }
    }
}

extension RecordVersion {
    /// A version with only `find`, for asking `CarvingCorpus.places` where one find is.
    static func carvedProbe(_ find: Find) -> RecordVersion {
        var v = RecordVersion(entity: "", entityNumber: 0, table: "", pk: 0, values: [], state: .carved, sources: [], confidence: .whole)
        v.finds = [find]
        return v
    }
}

extension CarvingCorpus.Ledger {
    /// INSERT or UPDATE of an item to `version` with a text large enough to spill, recorded with
    /// the values SQLite stored.
    func bigItem(_ c: Connection, _ pk: Int64, version: Int, pending: Bool = false) throws {
        let name = "\(pending ? "bpnd" : "big")-\(Self.padded(pk))-v\(version)"
        let note = OverflowCarvingTests.bigText(pk: pk, version: version, pending: pending, bytes: OverflowCarvingTests.size(pk, version))
        let quantity = DatabaseValue.integer((pk * 7 + Int64(version)) % 1000)
        let added = DatabaseValue.real(700_000_000.5 + Double(pk) + Double(version) / 4)
        let opt = (items[pk]?.opt ?? 0) + 1
        if items[pk] == nil {
            try c.run("INSERT INTO ZITEM (Z_PK, Z_ENT, Z_OPT, ZQUANTITY, ZADDED, ZNAME, ZNOTE) VALUES (?, 1, ?, ?, ?, ?, ?)",
                      [.integer(pk), .integer(Int64(opt)), quantity, added, .text(name), .text(note)])
        } else {
            try c.run("UPDATE ZITEM SET Z_OPT = ?, ZQUANTITY = ?, ZADDED = ?, ZNAME = ?, ZNOTE = ? WHERE Z_PK = ?",
                      [.integer(Int64(opt)), quantity, added, .text(name), .text(note), .integer(pk)])
        }
        items[pk] = (version, opt)
        let row = try c.rows("SELECT ZQUANTITY, ZADDED, ZNAME, ZNOTE FROM ZITEM WHERE Z_PK = ?", [.integer(pk)])[0]
        written.append(CarvingCorpus.Written(entity: 1, pk: pk, text: name,
                                             values: Dictionary(uniqueKeysWithValues: zip(["ZQUANTITY", "ZADDED", "ZNAME", "ZNOTE"], row.values))))
    }
}
