import Acquisition
import CoreDataStore
import Foundation
import SQLiteAccess
import StoreBuilder
import StoreTestSupport
import Testing
@testable import WALForensics

/// Every carved version `recover` gives must obey what Core Data guarantees of its entity, read
/// independently with SQLite on a copy: its `Z_PK` and every to-one key at most their entity's
/// `Z_MAX` (or the table's largest `Z_PK` where `Z_MAX` fell behind; nothing for an entity whose
/// `Z_MAX` is 0), every Binary, Transformable and UUID value a blob or NULL, and not every property
/// NULL. Run over every genuine store in `../shared` and the history corpus.
@Suite("recovered versions obey their entities")
struct RecoveredVersionRulesTests {
    /// Table → the largest key a row of it can have, from `Z_PRIMARYKEY` and the table, by SQLite.
    static func bounds(_ url: URL) throws -> (bounds: [String: Int64], tables: [String: String]) {
        let truth = try SQLiteOracle(copying: url)
        var roots: [Int: (name: String, parent: Int, max: Int64)] = [:]
        for row in try truth.rows("SELECT Z_ENT, Z_NAME, Z_SUPER, Z_MAX FROM Z_PRIMARYKEY") {
            if let n = row[0].int, let name = row[1].string { roots[n] = (name, row[2].int ?? 0, row[3].int64 ?? 0) }
        }
        var bounds: [String: Int64] = [:], tableOf: [String: String] = [:]
        for (number, entry) in roots {
            var root = number, steps = 0
            while let p = roots[root]?.parent, p != 0, roots[p] != nil, steps < 64 { root = p; steps += 1 }
            guard let r = roots[root] else { continue }
            let table = "Z" + r.name.uppercased()
            tableOf[entry.name] = table
            let largest = (try? truth.rows("SELECT max(Z_PK) FROM \(Identifier.quoted(table))").first?[0].int64 ?? 0) ?? 0
            bounds[table] = max(r.max, largest ?? 0)
        }
        return (bounds, tableOf)
    }

    /// The rules each carved version of the store at `url` breaks, one line each.
    static func violations(_ url: URL) throws -> [String] {
        let (bounds, tableOf) = try Self.bounds(url)
        let session = try EvidenceSession()
        defer { session.scratch.remove() }
        let copy = try session.workingCopy(of: url)
        let evidence = try WALEvidence(copy: copy, displayPath: url.lastPathComponent)
        let opened = try OpenedStore.open(copy, displayPath: url.lastPathComponent)
        var out: [String] = []
        for v in try RecordRecovery.versions(evidence, carve: true) where v.state == .carved && v.confidence != .indexOnly {
            let what = "\(v.entity)#\(v.pk) [\(v.confidence.rawValue)]"
            if v.pkIsKnown, let bound = bounds[v.table], v.pk > bound { out.append("\(what): Z_PK over its entity's Z_MAX \(bound)") }
            if v.values.allSatisfy({ if case .null = $0.value { return true } else { return false } }) { out.append("\(what): every property NULL") }
            let entity = opened.map.entity(named: v.entity)
            for value in v.values {
                switch value.value {
                case .object(let destination, let pk):
                    if let table = tableOf[destination], let bound = bounds[table], pk > bound { out.append("\(what).\(value.name) → \(destination)#\(pk), over its Z_MAX \(bound)") }
                case .integer, .real, .text, .bool, .date, .decimal:
                    if let type = entity?.attribute(named: value.name)?.attribute.type, [.binary, .transformable, .uuid].contains(type) {
                        out.append("\(what).\(value.name): a \(type) attribute holding a non-blob value")
                    }
                default: break
                }
            }
        }
        try session.finish()
        return out
    }

    @Test("no carved version of a genuine store breaks its entity's rules", .enabled(if: ProjectPaths.hasRealFixtures, Comment(rawValue: ProjectPaths.realFixturesMissing)),
          arguments: ProjectPaths.realFixtureFolders())
    func genuineStores(_ folder: String) throws {
        guard let real = ProjectPaths.realFixtures() else { return }
        let dir = real.appendingPathComponent(folder)
        for name in try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted() where !name.hasSuffix("-wal") && !name.hasSuffix("-shm") {
            let url = dir.appendingPathComponent(name)
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), !isDirectory.boolValue else { continue }
            guard let handle = FileHandle(forReadingAtPath: url.path) else { continue }
            let head = try handle.read(upToCount: 16)
            try handle.close()
            guard head == Data("SQLite format 3\0".utf8) else { continue }
            let truth = try SQLiteOracle(copying: url)
            guard (try? truth.rows("SELECT count(*) FROM Z_PRIMARYKEY")) != nil else { continue }
            let broken = try Self.violations(url)
            #expect(broken.isEmpty, Comment(rawValue: "\(folder)/\(name): \(broken.count) versions Core Data could not have written:\n" + broken.prefix(20).joined(separator: "\n")))
        }
    }

    @Test("no carved version of the history corpus breaks its entity's rules")
    func historyCorpus() throws {
        let corpus = try HistoryCorpus.corpus()
        #expect(try Self.violations(corpus.url).isEmpty)
    }

    /// Deleted rows Core Data could not have written, left in free space beside ones it could:
    /// a to-one key past its destination's `Z_MAX`, an integer in a Binary attribute, a row of an
    /// entity whose `Z_MAX` is 0. Those are turned away; the honest deleted rows are still given
    /// back (their keys lost with the bytes a freeblock header took, as SQLite's freeing leaves them).
    @Test("crafted free space: to-one keys over Z_MAX, integers in Binary attributes, rows of an entity with Z_MAX 0 are turned away; honest deletes are recovered")
    func craftedFreeSpace() throws {
        let model = ModelDescription(entities: [
            EntityDescription("Owner", attributes: [.init("label", .string)]),
            EntityDescription("Item", attributes: [.init("name", .string), .init("image", .binaryData)],
                              relationships: [RelationshipDescription("owner", to: "Owner")]),
            EntityDescription("Ghost", attributes: [.init("label", .string)]),
        ])
        let folder = try TemporaryFolder("recover-rules")
        let url = folder.path("default.store")
        let writer = try StoreWriter(url: url, model: model, options: .init(journalMode: .delete))
        try writer.executeRaw("PRAGMA secure_delete = OFF")
        var honest: [Int] = []
        try writer.transaction { w in
            for n in 1 ... 3 { _ = try w.insert("Owner", ["label": .string("owner-\(n)")]) }
            for n in 0 ..< 30 {
                honest.append(try w.insert("Item", ["name": .string("item-\(n)-" + String(repeating: "x", count: n % 7)), "image": .data(Data([1, 2, 3])),
                                                    "owner": .object(entity: "Owner", pk: 1 + n % 3)]))
            }
        }
        let item = try #require(try writer.layout.entities.first { $0.description.name == "Item" }).number
        let ghost = try #require(try writer.layout.entities.first { $0.description.name == "Ghost" }).number
        // Rows no Core Data could write, planted and deleted.
        try writer.executeRaw("INSERT INTO ZITEM (Z_PK, Z_ENT, Z_OPT, ZNAME, ZIMAGE, ZOWNER) VALUES (31, ?, 1, 'owner-over-z-max', X'0102', 9000)", [.integer(Int64(item))])
        try writer.executeRaw("INSERT INTO ZITEM (Z_PK, Z_ENT, Z_OPT, ZNAME, ZIMAGE, ZOWNER) VALUES (32, ?, 1, 'integer-in-binary', 181, 1)", [.integer(Int64(item))])
        try writer.executeRaw("INSERT INTO ZGHOST (Z_PK, Z_ENT, Z_OPT, ZLABEL) VALUES (5, ?, 1, 'ghost-row-never-written')", [.integer(Int64(ghost))])
        try writer.executeRaw("DELETE FROM ZITEM WHERE Z_PK IN (31, 32)")
        try writer.executeRaw("DELETE FROM ZGHOST")
        try writer.transaction { w in for pk in honest.prefix(5) { try w.delete("Item", pk: pk) } }
        try writer.executeRaw("UPDATE Z_PRIMARYKEY SET Z_MAX = 0 WHERE Z_NAME = 'Ghost'")
        try writer.close()

        #expect(try Self.violations(url).isEmpty)
        let session = try EvidenceSession()
        defer { session.scratch.remove() }
        let evidence = try WALEvidence(copy: try session.workingCopy(of: url), displayPath: url.path)
        var all: [RecordVersion] = []
        let turnedAway = try RecordRecovery.forEachVersion(evidence, carve: true) { all.append($0) }
        let carved = all.filter { $0.state == .carved }
        // Each planted row counted under the rule that turned it away (recover --format json's `turnedAway`).
        for rule in ["key-over-z-max", "blob-type", "entity-never-had-rows"] {
            #expect(turnedAway.contains { $0.key.hasPrefix(rule) && $0.value > 0 }, "\(rule): \(turnedAway)")
        }
        func name(_ v: RecordVersion) -> String? { v.values.first { $0.name == "name" || $0.name == "label" }.flatMap { if case .text(let t) = $0.value { return t } else { return nil } } }
        let names = Set(carved.compactMap(name))
        for planted in ["owner-over-z-max", "integer-in-binary", "ghost-row-never-written"] { #expect(!names.contains(planted), "\(planted) was given back") }
        let deleted = (0 ..< 5).map { n in "item-\(n)-" + String(repeating: "x", count: n % 7) }
        #expect(deleted.filter(names.contains).count >= 4, "the honest deletes are still recovered: \(names.sorted())")
        try session.finish()
    }

    /// A page header whose cell content area starts past some of its live cells (stale or
    /// damaged): the claimed free gap then holds live records, which must not come back as
    /// deleted versions. A candidate whose bytes run into a cell the page points to is turned
    /// away (`overlaps-cell`).
    @Test("free space a page header claims over its own live cells gives no version: overlaps-cell")
    func freeSpaceOverLiveCells() throws {
        let model = ModelDescription(entities: [EntityDescription("Item", attributes: [.init("name", .string)])])
        let folder = try TemporaryFolder("recover-overlap")
        let url = folder.path("default.store")
        let writer = try StoreWriter(url: url, model: model, options: .init(journalMode: .delete))
        try writer.transaction { w in for n in 0 ..< 40 { _ = try w.insert("Item", ["name": .string("item-\(n)")]) } }
        try writer.close()
        let truth = try SQLiteOracle(copying: url)
        let root = try #require(try truth.rows("SELECT rootpage FROM sqlite_master WHERE name = 'ZITEM'").first?[0].int)
        let pageSize = try #require(try truth.rows("PRAGMA page_size").first?[0].int)
        var bytes = [UInt8](try Data(contentsOf: url))
        let page = (root - 1) * pageSize
        #expect(bytes[page] == 0x0D, "ZITEM's root is one table leaf")
        let count = Int(bytes[page + 3]) << 8 | Int(bytes[page + 4])
        let cells = (0 ..< count).map { Int(bytes[page + 8 + 2 * $0]) << 8 | Int(bytes[page + 9 + 2 * $0]) }.sorted()
        // The content area said to start halfway through the live cells.
        let claimed = cells[cells.count / 2]
        bytes[page + 5] = UInt8(claimed >> 8)
        bytes[page + 6] = UInt8(claimed & 0xFF)
        try Data(bytes).write(to: url)

        let session = try EvidenceSession()
        defer { session.scratch.remove() }
        let evidence = try WALEvidence(copy: try session.workingCopy(of: url), displayPath: url.path)
        var carved: [RecordVersion] = []
        let turnedAway = try RecordRecovery.forEachVersion(evidence, carve: true) { if $0.state == .carved { carved.append($0) } }
        #expect(carved.isEmpty, "live records read as deleted: \(carved.map { "\($0.entity)#\($0.pk)" })")
        #expect((turnedAway["overlaps-cell"] ?? 0) >= cells.count / 2 - 1, "\(turnedAway)")
        try session.finish()
    }
}
