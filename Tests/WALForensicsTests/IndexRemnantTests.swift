import CoreDataStore
import Acquisition
import Foundation
import SQLiteAccess
import StoreFormats
import StoreTestSupport
import Testing
@testable import WALForensics

/// Records only an index still names: a store written by SQLite with a unique index on the name,
/// rows deleted and their table pages rewritten (so the table cells are gone), in the main file
/// and in WAL commits. The truth is what SQLite wrote; recall is measured over the deleted records
/// whose names are still in an index page's bytes (main file pages and WAL frames of type 2 or 10).
@Suite("recover: records only an index still names")
struct IndexRemnantTests {
    static let schema = """
        CREATE TABLE Z_PRIMARYKEY (Z_ENT INTEGER PRIMARY KEY, Z_NAME VARCHAR, Z_SUPER INTEGER, Z_MAX INTEGER);
        INSERT INTO Z_PRIMARYKEY VALUES (1, 'Item', 0, 0);
        CREATE TABLE ZITEM (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZQUANTITY INTEGER, ZNAME VARCHAR, ZNOTE VARCHAR);
        CREATE UNIQUE INDEX Z_Item_UNIQUE_name ON ZITEM (ZNAME);
        """

    /// Names of many lengths: short ones (one-byte text type) and ones over 57 bytes (two-byte type).
    static func name(_ pk: Int64) -> String {
        "item \(pk) " + String(repeating: ["birch", "tallow", "rope"][Int(pk % 3)], count: Int(pk % 17))
    }

    final class Ledger {
        var names: [Int64: String] = [:]
        var notes: [Int64: Set<String>] = [:]
        var next: Int64 = 1

        func insert(_ c: Connection, count: Int) throws {
            for _ in 0 ..< count {
                let note = "note \(next) " + String(repeating: "n", count: Int(next % 30))
                try c.run("INSERT INTO ZITEM VALUES (?, 1, 1, ?, ?, ?)", [.integer(next), .integer(next % 13), .text(Self.name(next)), .text(note)])
                names[next] = Self.name(next)
                notes[next, default: []].insert(note)
                next += 1
            }
            try c.run("UPDATE Z_PRIMARYKEY SET Z_MAX = ? WHERE Z_ENT = 1", [.integer(next - 1)])
        }

        /// Every remaining row's note grows: the table's pages are rewritten over the freed cells.
        func growNotes(_ c: Connection, by text: String) throws {
            try c.run("UPDATE ZITEM SET ZNOTE = ZNOTE || ?", [.text(text)])
            for row in try c.rows("SELECT Z_PK, ZNOTE FROM ZITEM") {
                if let pk = row[0].int64, let note = row[1].string { notes[pk, default: []].insert(note) }
            }
        }

        static func name(_ pk: Int64) -> String { IndexRemnantTests.name(pk) }
    }

    static func text(_ value: FieldValue) -> String? {
        if case .text(let s) = value { return s }
        return nil
    }

    static func makeCorpus() throws -> (Ledger, SQLiteWALBuilder.Copy, SQLiteWALBuilder) {
        let ledger = Ledger()
        var builder = try SQLiteWALBuilder("index-remnants") { c in
            try c.execute("PRAGMA secure_delete = OFF")
            try c.execute(Self.schema)
            try c.execute("BEGIN")
            try ledger.insert(c, count: 1500)
            try c.execute("COMMIT")
            try c.execute("BEGIN")
            try c.run("DELETE FROM ZITEM WHERE Z_PK % 5 = 0 OR Z_PK BETWEEN 600 AND 700")
            try c.execute("COMMIT")
            try c.execute("BEGIN")
            try ledger.growNotes(c, by: String(repeating: "g", count: 24))
            try ledger.insert(c, count: 100)
            try c.execute("COMMIT")
        }
        // WAL commits: more deletes, and the table rewritten again after each.
        for round in 0 ..< 4 {
            try builder.writer.execute("BEGIN")
            try builder.writer.run("DELETE FROM ZITEM WHERE Z_PK % 11 = ?", [.integer(Int64(round + 1))])
            try builder.writer.execute("COMMIT")
            try builder.writer.execute("BEGIN")
            try ledger.growNotes(builder.writer, by: "w\(round)")
            try ledger.insert(builder.writer, count: 20)
            try builder.writer.execute("COMMIT")
        }
        return (ledger, try builder.copy(), builder)
    }

    /// The deleted keys whose names are in an index page's bytes, by place: main file pages and WAL
    /// frames whose page starts with an index page's type byte.
    static func namedByIndexPages(_ copy: SQLiteWALBuilder.Copy, ledger: Ledger, live: Set<Int64>, pageSize: Int) throws -> [String: Set<Int64>] {
        var main = Data(), frames = Data()
        let db = try Data(contentsOf: copy.db)
        for start in stride(from: 0, to: db.count, by: pageSize) where [2, 10].contains(db[start + (start == 0 ? 100 : 0)]) {
            main.append(db[start ..< start + pageSize])
        }
        let wal = try Data(contentsOf: copy.wal)
        for frame in stride(from: 32, to: wal.count - pageSize - 24 + 1, by: pageSize + 24) where [2, 10].contains(wal[frame + 24]) {
            frames.append(wal[frame + 24 ..< frame + 24 + pageSize])
        }
        func named(in bytes: Data) -> Set<Int64> {
            Set(ledger.names.filter { !live.contains($0.key) && bytes.range(of: Data($0.value.utf8)) != nil }.keys)
        }
        return ["main file": named(in: main), "WAL frames": named(in: frames)]
    }

    @Test("index remnants: recall of the deleted records an index page names, precision 1.0, nothing listed twice")
    func indexCorpus() throws {
        let (ledger, copy, builder) = try Self.makeCorpus()
        defer { withExtendedLifetime(builder) {} }
        let evidence = try copy.evidence(withSharedMemory: false)
        let wal = try #require(evidence.wal)
        let pageSize = try #require(wal.pageSize)
        // The live keys, as SQLite itself reads the copy.
        let answer = try #require(try SQLiteWALBuilder.sqliteAnswer(copy, query: "SELECT Z_PK FROM ZITEM"))
        let live = Set(answer.compactMap { $0.first?.int64 })
        let places = try Self.namedByIndexPages(copy, ledger: ledger, live: live, pageSize: pageSize)
        for (place, keys) in places { #expect(keys.count > 100, "the corpus leaves index entries of deleted records in the \(place): \(keys.count)") }

        let versions = try RecordRecovery.versions(evidence, carve: true)
        // Precision: every version with a key names that key's record and holds its values.
        var wrong: [String] = []
        for v in versions where v.pkIsKnown && v.state != .live {
            let values = Dictionary(v.values.map { ($0.name, Self.text($0.value)) }, uniquingKeysWith: { a, _ in a })
            let nameOK = values["ZNAME"].map { $0 == ledger.names[v.pk] } ?? true
            let noteOK = values["ZNOTE"].map { value in value.map { ledger.notes[v.pk, default: []].contains($0) } ?? false } ?? true
            if !nameOK || !noteOK || ledger.names[v.pk] == nil { wrong.append("\(v.state) #\(v.pk) \(v.confidence) \(values)") }
        }
        #expect(wrong.isEmpty, "listed but never written: \(wrong.prefix(5))")

        // Recall, per place: a deleted record an index page there still names is listed with its key and name.
        let given = Set(versions.filter { v in
            v.pkIsKnown && v.state != .live && v.values.contains { $0.name == "ZNAME" && Self.text($0.value) == ledger.names[v.pk] }
        }.map(\.pk))
        for (place, named) in places.sorted(by: { $0.key < $1.key }) {
            let found = named.intersection(given)
            let recall = Double(found.count) / Double(max(named.count, 1))
            print("[index corpus] \(place): deleted records named by index pages \(named.count), listed with key and name \(found.count) (\(String(format: "%.3f", recall)))")
            #expect(recall >= 0.95, "\(place) missed, e.g.: \(named.subtracting(given).sorted().prefix(10).map { "#\($0) \(ledger.names[$0]!)" })")
        }
        print("[index corpus] index-only versions: \(versions.filter { $0.confidence == .indexOnly }.count)")

        // Only the index gives back some of them, as partial versions: the indexed value and Z_PK.
        let partial = versions.filter { $0.confidence == .indexOnly }
        #expect(!partial.isEmpty, "some records are left only in the index")
        for v in partial {
            #expect(v.state == .carved && v.sources.isEmpty && !v.finds.isEmpty)
            #expect(v.values.map(\.name) == ["ZNAME"])
            #expect(v.uncertainColumns == ["ZQUANTITY", "ZNOTE"], "the columns the index lacks: \(v.uncertainColumns)")
            #expect(!live.contains(v.pk), "a live record's index entry is not a remnant")
        }
        // Nothing twice: one listing per entity, key, state and values, and an index remnant only
        // where no other version of that record is listed.
        var seen: Set<String> = []
        for v in versions where v.pkIsKnown {
            #expect(seen.insert("\(v.entityNumber)/\(v.pk)/\(v.state)/" + RecordRecovery.fingerprint(v.values)).inserted, "#\(v.pk) listed twice")
        }
        let keysOfWhole = Set(versions.filter { $0.confidence != .indexOnly && $0.pkIsKnown }.map(\.pk))
        #expect(partial.allSatisfy { !keysOfWhole.contains($0.pk) })
        #expect(Set(partial.map(\.pk)).count == partial.count)
    }

    /// Every genuine store, carved with every source: no version listed twice (entity, key, state
    /// and values), and an index remnant or a history delete only where nothing else names that key.
    @Test("genuine stores: nothing listed twice, remnants and deletes only where nothing else names the record",
          .enabled(if: ProjectPaths.hasRealFixtures, Comment(rawValue: ProjectPaths.realFixturesMissing)),
          arguments: ProjectPaths.realFixtureFolders())
    func genuineStores(folder: String) throws {
        let root = try #require(ProjectPaths.realFixtures())
        guard let store = try ProjectPaths.realStoreFile(in: root.appendingPathComponent(folder)) else { return }
        let session = try EvidenceSession()
        defer { session.scratch.remove() }
        let evidence = try WALEvidence(copy: try session.workingCopy(of: store), displayPath: store.path)
        let versions = try RecordRecovery.versions(evidence, carve: true)
        var seen: Set<String> = []
        for v in versions where v.pkIsKnown {
            #expect(seen.insert("\(v.entityNumber)/\(v.pk)/\(v.state)/" + RecordRecovery.fingerprint(v.values)).inserted, "\(folder): \(v.entity)#\(v.pk) listed twice")
        }
        let named = Set(versions.filter { $0.pkIsKnown && $0.confidence != .indexOnly && $0.confidence != .tombstone && $0.state != .live }
            .map { "\($0.entityNumber)/\($0.pk)" })
        for v in versions where v.confidence == .indexOnly || v.confidence == .tombstone {
            #expect(!named.contains("\(v.entityNumber)/\(v.pk)"), "\(folder): \(v.entity)#\(v.pk) is \(v.confidence) and another version")
        }
        try session.finish()
    }

    /// Crafted bytes in an index page's free space: readings that would be a wrong key or a
    /// wrong name are turned away, and a store that names no such index is read as before.
    @Test("a rebuilt entry is kept only when exactly one reading passes")
    func rebuildRules() throws {
        let shape = IndexShape(index: "I", tableShape: 0, entity: 1, columns: [CarvingShape.Column(name: "ZNAME", kind: .text)],
                               tableColumns: [4], maxPK: 5000)
        var carver = IndexCarver(shapes: [shape], usableSize: 4096, owners: [:])
        func freeblock(_ body: [UInt8]) -> [IndexEntry] {
            var page = [UInt8](repeating: 0, count: 4096)
            page[0] = 10  // an index leaf, no cells; one freeblock at 1000
            page[1] = 0x03; page[2] = 0xE8
            page[5] = 0x03; page[6] = 0x84  // the cell content area starts at 900
            let size = 4 + body.count
            page[1000 ..< 1004] = [0, 0, UInt8(size >> 8), UInt8(size & 0xFF)]
            page[1004 ..< 1004 + body.count] = body[...]
            var out: [IndexEntry] = []
            page.withUnsafeBytes { carver.carve($0, pageNumber: 7, cells: false, freelistLeaf: false) { out.append($0) } }
            return out
        }
        // "Tallow Birch" and key 2021 (two bytes): one reading.
        let one = freeblock(Array("Tallow Birch".utf8) + [0x07, 0xE5])
        #expect(one.count == 1 && one.first?.rowid == 2021 && one.first?.values == [.text(Array("Tallow Birch".utf8))])
        // Key 50 is the byte "2": read at width 1 it is 50; at width 2 the key would be "h2" = 26674, above Z_MAX.
        #expect(freeblock(Array("Birch".utf8) + [0x32]).first?.rowid == 50)
        // A key above Z_MAX at every width, and a text holding a control byte: nothing.
        #expect(freeblock(Array("Birch".utf8) + [0x7F, 0xFF, 0xFF]).isEmpty)
        #expect(freeblock(Array("Bi\u{1}rch".utf8) + [0x07, 0xE5]).isEmpty)
        // A freeblock whose bytes are all headers (each saying "the next 3840 bytes are free"):
        // every place is looked at (a bounded span each), and none is an entry.
        #expect(freeblock(Array(repeating: [0x00, 0x00, 0x0F, 0x00], count: 700).flatMap { $0 }).isEmpty)
        // A live key: not a remnant.
        carver.isLive = { _, pk in pk == 2021 }
        #expect(freeblock(Array("Tallow Birch".utf8) + [0x07, 0xE5]).isEmpty)
    }
}
