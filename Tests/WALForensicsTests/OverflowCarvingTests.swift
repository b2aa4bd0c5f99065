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
/// measured as `CarvingTests` measures them, every value compared whole.
@Suite("Carving records whose payload spills to overflow pages")
struct OverflowCarvingTests {
    typealias Place = CarvingTests.Place

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

    /// The corpus's schema: `CarvingTests`' tables.
    static let schema = CarvingTests.schema

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
        let name = Array(name.utf8), note = Array(note.utf8)
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
        var recall: [Place: CarvingTests.Measure] = [:]
        /// Listed spilled versions: exactly a version written; differing from one only in columns
        /// they list as uncertain; anything else.
        var exact = 0, uncertainOnly = 0
        var wrong: [String] = []
        var listed: Int { exact + uncertainOnly + wrong.count }
    }

    /// Recall per place of the spilled versions whose name is in that place's bytes and whose
    /// whole note is in the bytes the place's chains are read from; precision over the listed
    /// versions with a spilled version's name. Prints the figures.
    static func measure(_ versions: [RecordVersion], written: [CarvingTests.Written], regions: [Place: Data],
                        chainBytes: [Place: [ChainBytes]], label: String) -> Figures {
        var figures = Figures()
        let byText = Dictionary(grouping: written, by: \.text)
        for v in versions {
            guard let t = CarvingTests.text(v), let candidates = byText[t] else { continue }
            if candidates.contains(where: { CarvingTests.matches(v, $0) }) {
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
            var m = CarvingTests.Measure()
            var missed: [String] = []
            for w in written where bytes.range(of: Data(w.text.utf8)) != nil {
                guard let note = w.values["ZNOTE"]?.string, whole(name: w.text, note: note, in: bytes, chains: chainBytes[place] ?? []) else { continue }
                m.present += 1
                if versions.contains(where: { CarvingTests.text($0) == w.text && CarvingTests.matches($0, w) && CarvingTests.places($0).contains(place) }) {
                    m.found += 1
                } else {
                    missed.append(w.text)
                }
            }
            if !missed.isEmpty { print("[\(label)] \(place.rawValue) missed: \(missed.prefix(8))") }
            figures.recall[place] = m
        }
        let line = Place.allCases.compactMap { p in figures.recall[p].map { "\(p.rawValue) \($0.found)/\($0.present)" } }
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
        let ledger = CarvingTests.Ledger()
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
        var regions = CarvingTests.walRegions(try Data(contentsOf: copy.wal), lastCommit: lastCommit, pageSize: pageSize)
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
        let carvedBig = versions.filter { ($0.state == .carved || $0.state == .uncommitted) && CarvingTests.text($0).map(names.contains) ?? false }
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
        let ledger = CarvingTests.Ledger()
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
}

extension CarvingTests.Ledger {
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
        written.append(CarvingTests.Written(entity: 1, pk: pk, text: name,
                                            values: Dictionary(uniqueKeysWithValues: zip(["ZQUANTITY", "ZADDED", "ZNAME", "ZNOTE"], row.values))))
    }
}
