import Acquisition
import CoreDataStore
import Foundation
@testable import Reports
import SQLiteAccess
import StoreBuilder
import StoreFormats
import StoreTestSupport
import Testing

/// `rows --format jsonl/array/csv/tsv` reads through `RowScan` and `RowBytesEncoder`,
/// not through `RowReader.forEach` and the `JSONValue` rendering. The old path stays the
/// reference: on every entity of every sample store, of a store of odd values written for this
/// test, and of every real store, both paths must write the same bytes.
@Suite("rows: the byte writer writes what the reference rendering writes")
struct RowsFastPathTests {
    static let formats: [(RowsWriter.Format, Bool)] = [(.jsonl, false), (.array, false), (.csv, false), (.tsv, false), (.csv, true), (.tsv, true)]

    /// The output of every format for every entity, by both paths; a difference names the first differing line.
    static func compareAllEntities(in input: URL, filters: [String] = [], limit: Int? = nil) throws -> (entities: Int, rows: Int) {
        let session = try EvidenceSession()
        defer { session.scratch.remove() }
        var entities = 0
        var rows = 0
        for store in try session.stores(from: [input.path]) {
            let opened: OpenedStore
            do {
                opened = try OpenedStore.open(store.copy, displayPath: store.displayPath)
            } catch ModelError.notCoreData {
                continue  // plain SQLite (a backup's Manifest.db, an FTS store): no rows command
            }
            for mapping in opened.map.entities where mapping.tableExists {
                let reader = RowReader(map: opened.map, entity: mapping, decoder: opened.decoder)
                guard let resolved = try? filters.map({ try reader.filter($0) }) else { continue }
                for (format, raw) in formats {
                    var reference: [UInt8] = []
                    var fast: [UInt8] = []
                    let labels = reader.fields.map(\.label)
                    let old = RowsWriter(format: format, fields: labels, header: [], rawCSV: raw, write: { reference += $0.utf8 })
                    let new = RowsWriter(format: format, fields: labels, header: [], rawCSV: raw, write: { _ in },
                                         writeBytes: { fast += $0 })
                    #expect(new.takesScanRows)
                    old.begin()
                    try reader.forEach(opened.connection, filters: resolved, limit: limit) { try old.add($0) }
                    old.end()
                    new.begin()
                    try reader.scan(opened.connection, filters: resolved, limit: limit)?.forEach { try new.add($0) }
                    new.end()
                    #expect(old.count == new.count, "\(store.displayPath) \(mapping.entity.name) \(format)")
                    if reference != fast {
                        let a = String(decoding: reference, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
                        let b = String(decoding: fast, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
                        let line = zip(a, b).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? min(a.count, b.count)
                        Issue.record("\(store.displayPath) \(mapping.entity.name) \(format)\(raw ? " raw" : ""): line \(line) differs:\n  reference \(line < a.count ? String(a[line]) : "(none)")\n  fast      \(line < b.count ? String(b[line]) : "(none)")")
                    }
                    rows += new.count
                }
                entities += 1
            }
        }
        try session.finish()
        return (entities, rows)
    }

    /// Values no app writes, put in by SQL: wrong storage classes, invalid UTF-8, control and
    /// separator characters, formulas, numbers at the edges of their printing rules.
    static func writeOddValues(to url: URL) throws {
        let model = ModelDescription(entities: [
            EntityDescription("Odd", attributes: [
                AttributeDescription("text", .string), AttributeDescription("count", .integer64),
                AttributeDescription("ratio", .double), AttributeDescription("flag", .boolean),
                AttributeDescription("when", .date), AttributeDescription("id", .uuid),
                AttributeDescription("bytes", .binaryData), AttributeDescription("amount", .decimal),
                AttributeDescription("link", .uri),
            ], relationships: [RelationshipDescription("parent", to: "Group", inverse: "children")]),
            EntityDescription("SubOdd", parent: "Odd", attributes: [AttributeDescription("extra", .string)]),
            EntityDescription("Group", attributes: [AttributeDescription("_entity", .string), AttributeDescription("_rank", .integer32)],
                              relationships: [RelationshipDescription("children", to: "Odd", inverse: "parent", toMany: true)]),
            EntityDescription("SpecialGroup", parent: "Group"),
        ])
        let writer = try StoreWriter(url: url, model: model)
        let texts: [DatabaseValue] = [
            .text("plain"), .text(""), .text("ünïcødé ✓ 𝄞"), .text("line\nbreak\r\ttab \"quoted\" back\\slash"),
            .text("\u{1}\u{1f}\u{7f} nul\u{0}in"), .text("sep\u{2028}para\u{2029}"), .text("=SUM(A1)"), .text("+1"), .text("-12.5"),
            .text("+3e5"), .text("-"), .text("@home"), .text("\tlead"), .text("\rlead"), .text("a,b"), .text("1.e5"), .text("-1e"),
            .integer(42), .real(2.5), .blob(Data([0xff, 0xfe, 0x41])), .null,
        ]
        let numbers: [DatabaseValue] = [.integer(0), .integer(-1), .integer(Int64.max), .integer(Int64.min), .real(3.0), .real(3.5),
                                        .real(-0.0), .real(1e300), .text("12"), .blob(Data([1])), .null]
        let reals: [DatabaseValue] = [.real(0.1), .real(-0.0), .real(0.0), .real(1e15), .real(999_999_999_999_999.0), .real(1e-7),
                                      .real(-2.0), .real(1e100), .integer(7), .integer(Int64.max), .text("x"), .null]
        let flags: [DatabaseValue] = [.integer(0), .integer(1), .integer(2), .integer(-1), .real(1.0), .real(0.5), .text("true"), .null]
        let dates: [DatabaseValue] = [.real(0), .real(700_000_000.123456), .real(-0.5), .real(-978_307_200), .real(-70_000_000_000),
                                      .real(0.0000004), .real(0.9999996), .real(1e12), .real(-1e12 + 1), .real(1e300), .integer(86_400),
                                      .real(12_345.25), .text("2024-01-01"), .blob(Data([1, 2])), .null]
        let ids: [DatabaseValue] = [.blob(Data((0 ..< 16).map { UInt8($0 * 17) })), .blob(Data(repeating: 0xAB, count: 15)),
                                    .text("0be4c4b0-0000-4000-8000-000000000001"), .text("not a uuid"), .integer(5), .null]
        let blobs: [DatabaseValue] = [.blob(Data()), .blob(Data(0 ..< 40)), .text("text in a blob"), .integer(3), .null]
        let amounts: [DatabaseValue] = [.text("12.3400"), .integer(-7), .real(0.25), .null]
        try writer.transaction { w in
            try w.insert("Group", ["_entity": .string("a group"), "_rank": .int(1)])
            try w.insert("SpecialGroup", ["_entity": .string("=special"), "_rank": .int(2)])
            for i in 0 ..< 40 {
                let values: [String: BuilderValue] = ["text": .string("row \(i)"), "parent": .object(entity: i % 2 == 0 ? "Group" : "SpecialGroup", pk: i % 2 + 1)]
                _ = try w.insert(i % 3 == 0 ? "SubOdd" : "Odd", values)
            }
        }
        func put(_ column: String, _ values: [DatabaseValue]) throws {
            for (i, value) in values.enumerated() {
                try writer.executeRaw("UPDATE ZODD SET \(column) = ? WHERE Z_PK = ?", [value, .integer(Int64(i + 1))])
            }
        }
        try put("ZTEXT", texts)
        try put("ZEXTRA", texts.reversed())
        try put("ZCOUNT", numbers)
        try put("ZRATIO", reals)
        try put("ZFLAG", flags)
        try put("ZWHEN", dates)
        try put("ZID", ids)
        try put("ZBYTES", blobs)
        try put("ZAMOUNT", amounts)
        try put("ZLINK", texts.shuffled())
        // Invalid UTF-8 stored as text, and relationship keys of odd classes.
        try writer.executeRaw("UPDATE ZODD SET ZTEXT = CAST(X'61FF62C3' AS TEXT) WHERE Z_PK = 30")
        try writer.executeRaw("UPDATE ZODD SET ZPARENT = 1.0 WHERE Z_PK = 31")
        try writer.executeRaw("UPDATE ZODD SET ZPARENT = 'x' WHERE Z_PK = 32")
        try writer.executeRaw("UPDATE ZODD SET ZPARENT = 2 WHERE Z_PK = 33")
        // The destination's entity key column is Z<n>_PARENT, n the number the builder gave Group.
        for n in 1 ... 4 { try? writer.executeRaw("UPDATE ZODD SET Z\(n)_PARENT = 99 WHERE Z_PK = 33") }
        try writer.executeRaw("UPDATE ZODD SET ZPARENT = -4 WHERE Z_PK = 34")
        try writer.close()
    }

    @Test("a store of odd values: every format, every entity, byte for byte")
    func oddValues() throws {
        let folder = try TemporaryFolder("rows-fast-odd")
        let url = folder.path("odd.store")
        try Self.writeOddValues(to: url)
        let result = try Self.compareAllEntities(in: url)
        #expect(result.entities >= 4 && result.rows > 0, "the odd store was read: \(result)")
        // --where and --limit go through the same statement on both paths.
        let filtered = try Self.compareAllEntities(in: url, filters: ["flag=true"], limit: 30)
        #expect(filtered.entities >= 2 && filtered.rows > 0 && filtered.rows < result.rows, "filtered: \(filtered) of \(result)")
        let limited = try Self.compareAllEntities(in: url, limit: 3)
        #expect(limited.rows > 0 && limited.rows < result.rows)
    }

    @Test("the sample stores: demo container, hostile report sample, library store")
    func samples() throws {
        let folder = try TemporaryFolder("rows-fast-samples")
        try DemoContainer.write(into: folder.path("demo"))
        try ReportSamples.write(to: folder.path("hostile.store"))
        try LibraryStore.write(folder.path("library.store"))
        for input in ["demo", "hostile.store", "library.store"] {
            let result = try Self.compareAllEntities(in: folder.path(input))
            #expect(result.entities > 0, "\(input) has entities to compare")
        }
    }

    @Test("every real store", .enabled(if: ProjectPaths.hasRealFixtures, Comment(rawValue: ProjectPaths.realFixturesMissing)),
          arguments: ProjectPaths.realFixtureFolders())
    func realStore(_ name: String) throws {
        let folder = try #require(ProjectPaths.realFixtures()).appendingPathComponent(name)
        guard let store = try ProjectPaths.realStoreFile(in: folder) else { return }
        let before = try FolderSnapshot(folder)
        let result = try Self.compareAllEntities(in: store)
        print("\(name): \(result.entities) entities, \(result.rows) rows compared in every format")
        #expect(try FolderSnapshot(folder) == before, "the real fixture is unchanged")
    }

    @Test("dates and UUIDs as bytes are the Strings' bytes")
    func valueBytes() {
        var generator = SystemRandomNumberGenerator()
        var samples: [Double] = [0, -0.0, 0.5, -0.5, 1e12 - 1, -1e12 + 1, 1e12, .nan, .infinity, -.infinity, 0.0000004, 0.0000005,
                                 0.9999995, -0.9999995, 59.999_999_6, 700_000_000.1, -978_307_200, -978_307_200.000_001, -70_000_000_000]
        for _ in 0 ..< 20_000 { samples.append(Double.random(in: -1e11 ... 1e11, using: &generator)) }
        for _ in 0 ..< 2_000 { samples.append(Double(Int.random(in: -2_000_000_000 ... 2_000_000_000, using: &generator)) / 1000) }
        for seconds in samples {
            var bytes: [UInt8] = []
            ValueDecoder.appendISO8601(referenceSeconds: seconds, to: &bytes)
            #expect(String(decoding: bytes, as: UTF8.self) == ValueDecoder.iso8601(referenceSeconds: seconds), "\(seconds)")
        }
        for _ in 0 ..< 2_000 {
            let data = Data((0 ..< 16).map { _ in UInt8.random(in: 0 ... 255, using: &generator) })
            var bytes: [UInt8] = []
            data.withUnsafeBytes { ValueDecoder.appendUUID($0, to: &bytes) }
            #expect(String(decoding: bytes, as: UTF8.self) == ValueDecoder.uuidString(data))
        }
    }
}
