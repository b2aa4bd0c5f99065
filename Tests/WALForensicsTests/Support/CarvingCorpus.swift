import CoreDataStore
import Foundation
import SQLiteAccess
import StoreFormats
import StoreTestSupport
@testable import WALForensics

/// Corpora of record versions written by SQLite itself, each version with a unique text, and how
/// recover's listing of them is measured: recall per place the bytes are in, precision over all it lists.
enum CarvingCorpus {
    /// One version written: entity, key, its values by column (Z_OPT left out) and its unique text.
    struct Written {
        let entity: Int
        let pk: Int64
        let text: String
        let values: [String: DatabaseValue]
    }

    /// Everything the corpus wrote, in order.
    final class Ledger {
        var written: [Written] = []
        var items: [Int64: (version: Int, opt: Int)] = [:]

        static func padded(_ n: Int64) -> String {
            let s = String(n)
            return String(repeating: "0", count: max(0, 5 - s.count)) + s
        }

        func itemValues(_ pk: Int64, version: Int, pending: Bool = false) -> [String: DatabaseValue] {
            let text = "\(pending ? "pend" : "item")-\(Self.padded(pk))-v\(version)"
            return ["ZNAME": .text(text), "ZQUANTITY": .integer((pk * 7 + Int64(version)) % 1000),
                    "ZADDED": .real(700_000_000.5 + Double(pk) + Double(version) / 4),
                    "ZNOTE": .text(String(repeating: "n", count: Int((pk + Int64(version) * 13) % 40)))]
        }

        /// INSERT or UPDATE of an item to `version`, recorded.
        func item(_ c: Connection, _ pk: Int64, version: Int, pending: Bool = false) throws {
            let v = itemValues(pk, version: version, pending: pending)
            let opt = (items[pk]?.opt ?? 0) + 1
            if items[pk] == nil {
                try c.run("INSERT INTO ZITEM (Z_PK, Z_ENT, Z_OPT, ZQUANTITY, ZADDED, ZNAME, ZNOTE) VALUES (?, 1, ?, ?, ?, ?, ?)",
                          [.integer(pk), .integer(Int64(opt)), v["ZQUANTITY"]!, v["ZADDED"]!, v["ZNAME"]!, v["ZNOTE"]!])
            } else {
                try c.run("UPDATE ZITEM SET Z_OPT = ?, ZQUANTITY = ?, ZADDED = ?, ZNAME = ?, ZNOTE = ? WHERE Z_PK = ?",
                          [.integer(Int64(opt)), v["ZQUANTITY"]!, v["ZADDED"]!, v["ZNAME"]!, v["ZNOTE"]!, .integer(pk)])
            }
            items[pk] = (version, opt)
            // The values as SQLite stored them (a whole TIMESTAMP is stored as an integer), asked of SQLite.
            let row = try c.rows("SELECT ZQUANTITY, ZADDED, ZNAME, ZNOTE FROM ZITEM WHERE Z_PK = ?", [.integer(pk)])[0]
            let stored = Dictionary(uniqueKeysWithValues: zip(["ZQUANTITY", "ZADDED", "ZNAME", "ZNOTE"], row.values))
            written.append(Written(entity: 1, pk: pk, text: v["ZNAME"]!.string!, values: stored))
        }

        func delete(_ c: Connection, _ pk: Int64) throws {
            try c.run("DELETE FROM ZITEM WHERE Z_PK = ?", [.integer(pk)])
            items[pk] = nil
        }

        func tag(_ c: Connection, _ pk: Int64) throws {
            let label = "tag-\(Self.padded(pk))-v0"
            try c.run("INSERT INTO ZTAG (Z_PK, Z_ENT, Z_OPT, ZITEM, ZLABEL) VALUES (?, 2, 1, ?, ?)", [.integer(pk), .integer(pk), .text(label)])
            written.append(Written(entity: 2, pk: pk, text: label, values: ["ZITEM": .integer(pk), "ZLABEL": .text(label)]))
        }
    }

    static let schema = """
        CREATE TABLE Z_PRIMARYKEY (Z_ENT INTEGER PRIMARY KEY, Z_NAME VARCHAR, Z_SUPER INTEGER, Z_MAX INTEGER);
        INSERT INTO Z_PRIMARYKEY VALUES (1, 'Item', 0, 0), (2, 'Tag', 0, 0);
        CREATE TABLE ZITEM (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZQUANTITY INTEGER, ZADDED TIMESTAMP, ZNAME VARCHAR, ZNOTE VARCHAR);
        CREATE TABLE ZTAG (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZITEM INTEGER, ZLABEL VARCHAR);
        """

    /// Which bytes a place is in.
    enum Place: String, CaseIterable {
        case mainFile = "main file", committedWAL = "committed frames", uncommitted = "uncommitted frames",
             olderGeneration = "older WAL generation", journal = "-journal"
    }

    struct Measure {
        var present = 0, found = 0
        var recall: Double { present == 0 ? 1 : Double(found) / Double(present) }
    }

    /// The places of a listed version: its committed runs (main file for commit 0, else the
    /// committed frames) and its finds.
    static func places(_ v: RecordVersion) -> Set<Place> {
        var out: Set<Place> = []
        // A committed version is in the main file when commit 0 held it, in the committed frames
        // when a later commit did (an unchanged row is copied into every frame of its page).
        for s in v.sources {
            if s.firstCommit == 0 { out.insert(.mainFile) }
            if s.lastCommit >= 1 { out.insert(.committedWAL) }
        }
        for f in v.finds {
            switch f.origin {
            case .mainFile: out.insert(.mainFile)
            case .committedFrame: out.insert(.committedWAL)
            case .uncommittedFrame: out.insert(.uncommitted)
            case .olderGeneration: out.insert(.olderGeneration)
            case .journal: out.insert(.journal)
            }
        }
        return out
    }

    static func text(_ v: RecordVersion) -> String? {
        for value in v.values where value.name == "ZNAME" || value.name == "ZLABEL" {
            if case .text(let s) = value.value { return s }
        }
        return nil
    }

    /// Whether a listed version is exactly a version written.
    static func matches(_ v: RecordVersion, _ w: Written) -> Bool {
        guard v.entityNumber == w.entity, !v.pkIsKnown || v.pk == w.pk else { return false }
        let got = Dictionary(v.values.map { ($0.name, String(reflecting: $0.value)) }, uniquingKeysWith: { a, _ in a })
        let want = Dictionary(w.values.map { ($0.key, String(reflecting: ValueDecoder.natural($0.value))) }, uniquingKeysWith: { a, _ in a })
        return got == want
    }

    /// Recall per place and precision over every listed version; prints the figures.
    static func measure(_ versions: [RecordVersion], written: [Written], regions: [Place: Data], label: String)
        -> (recall: [Place: Measure], precision: Double, wrong: [String]) {
        let byText = Dictionary(grouping: written, by: \.text)
        var wrong: [String] = []
        var correct = 0
        for v in versions {
            if let t = text(v), let candidates = byText[t], candidates.contains(where: { matches(v, $0) }) {
                correct += 1
            } else {
                wrong.append("\(v.state.rawValue) \(v.entity)#\(v.pk) \(v.values.map { "\($0.name)=\(String(reflecting: $0.value))" })")
            }
        }
        var recall: [Place: Measure] = [:]
        for (place, bytes) in regions {
            var m = Measure()
            var missed: [String] = []
            for w in written {
                guard let at = bytes.range(of: Data(w.text.utf8)) else { continue }
                m.present += 1
                if versions.contains(where: { text($0) == w.text && matches($0, w) && places($0).contains(place) }) {
                    m.found += 1
                } else if missed.count < 5 {
                    let from = max(bytes.startIndex, at.lowerBound - 24)
                    missed.append(w.text + " after " + bytes[from ..< at.lowerBound].map { String(format: "%02x", $0) }.joined())
                }
            }
            if !missed.isEmpty { print("[\(label)] \(place.rawValue) missed, e.g.: \(missed)") }
            recall[place] = m
        }
        let precision = versions.isEmpty ? 1 : Double(correct) / Double(versions.count)
        let line = Place.allCases.compactMap { p in recall[p].map { "\(p.rawValue) \($0.found)/\($0.present) (\(String(format: "%.3f", $0.recall)))" } }
        print("[\(label)] recall: " + line.joined(separator: ", ") + "; precision \(correct)/\(versions.count) (\(String(format: "%.3f", precision)))")
        return (recall, precision, wrong)
    }

    /// The WAL's bytes cut into regions by what SQLite makes of each frame: up to its last commit
    /// (mxFrame, asked of SQLite on a copy), after it with the header's salts, and with other salts.
    static func walRegions(_ wal: Data, lastCommit: Int, pageSize: Int) -> [Place: Data] {
        func be32(_ at: Int) -> UInt32 { wal[at ..< at + 4].reduce(0) { $0 << 8 | UInt32($1) } }
        let salts = (be32(16), be32(20))
        var out: [Place: Data] = [.committedWAL: Data(), .uncommitted: Data(), .olderGeneration: Data()]
        let frameSize = 24 + pageSize
        var slot = 0
        var sawOther = false
        while 32 + (slot + 1) * frameSize <= wal.count {
            let at = 32 + slot * frameSize
            slot += 1
            let page = wal[at + 24 ..< at + frameSize]
            let mine = (be32(at + 8), be32(at + 12)) == salts && !sawOther
            if !mine { sawOther = true }
            let place: Place = slot <= lastCommit ? .committedWAL : (mine ? .uncommitted : .olderGeneration)
            out[place]!.append(page)
        }
        return out
    }

    /// The WAL corpus, written with SQLite itself: freed cells and freelist pages in the main file,
    /// committed frames, an older WAL generation under a newer one, and frames past the last commit.
    /// The builder is returned too: the copy lives in its folder.
    static func makeWAL(_ name: String = "carve") throws -> (ledger: Ledger, copy: SQLiteWALBuilder.Copy, builder: SQLiteWALBuilder) {
        let ledger = Ledger()
        var builder = try SQLiteWALBuilder(name) { c in
            try c.execute("PRAGMA secure_delete = OFF")
            try c.execute(Self.schema)
            try c.execute("BEGIN")
            for pk in Int64(1) ... 400 { try ledger.item(c, pk, version: 0) }
            for pk in Int64(1) ... 60 { try ledger.tag(c, pk) }
            try c.execute("COMMIT")
            try c.execute("BEGIN")
            // Scattered deletes leave freeblocks; a run of deletes empties whole leaves onto the freelist.
            for pk in Int64(1) ... 400 where pk % 9 == 0 && !(150 ... 330).contains(pk) { try ledger.delete(c, pk) }
            for pk in Int64(150) ... 330 { try ledger.delete(c, pk) }
            for pk in Int64(1) ... 400 where pk % 11 == 0 && ledger.items[pk] != nil { try ledger.item(c, pk, version: 1) }
            try c.run("DELETE FROM ZTAG WHERE Z_PK % 4 = 0")
            try c.execute("COMMIT")
        }
        // Generation 1: commits that stay in the WAL, then a checkpoint that restarts it.
        var next: Int64 = 401
        for round in 0 ..< 20 {
            try builder.writer.execute("BEGIN")
            for k in 0 ..< 3 {
                let pk = Int64(1 + (round * 17 + k * 5) % 400)
                if let current = ledger.items[pk] { try ledger.item(builder.writer, pk, version: current.version + 1) }
            }
            for k in 0 ..< 2 {
                let pk = Int64(3 + (round * 23 + k * 7) % 400)
                if ledger.items[pk] != nil { try ledger.delete(builder.writer, pk) }
            }
            for _ in 0 ..< 2 {
                try ledger.item(builder.writer, next, version: 0)
                next += 1
            }
            try builder.writer.execute("COMMIT")
        }
        _ = try builder.writer.rows("PRAGMA wal_checkpoint(RESTART)")
        // Generation 2: a few small commits from frame 1 with new salts; generation 1's tail stays.
        for round in 0 ..< 3 {
            try builder.writer.execute("BEGIN")
            let pk = Int64(5 + round * 31)
            if let current = ledger.items[pk] { try ledger.item(builder.writer, pk, version: current.version + 1) }
            try ledger.item(builder.writer, next, version: 0)
            next += 1
            try builder.writer.execute("COMMIT")
        }
        // A transaction larger than the page cache spills frames into the WAL before it commits.
        try builder.writer.execute("PRAGMA cache_size = 10")
        try builder.writer.execute("BEGIN")
        for pk in Int64(2001) ... 2600 { try ledger.item(builder.writer, pk, version: 0, pending: true) }
        let copy = try builder.copy()
        try builder.writer.execute("ROLLBACK")
        return (ledger, copy, builder)
    }
}
