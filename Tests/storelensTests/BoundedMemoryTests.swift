import Foundation
import SQLiteAccess
import StoreBuilder
import StoreTestSupport
import Testing

/// Inputs whose size once set the memory a command took. Each test measures the command's peak
/// resident set size (the kernel's count for that one process) and holds it to a bound far below
/// what holding the input would take; never a time.
@Suite("memory bound by the output, not the input")
struct BoundedMemoryTests {
    /// The demo container's store in rollback-journal mode (its WAL checkpointed).
    static func demoStore(in folder: TemporaryFolder) throws -> URL {
        try DemoContainer.write(into: folder.path("c"))
        let store = folder.path("c/Library/Application Support/default.store")
        let db = try Connection.open(path: store.path, mode: .readWrite)
        try db.execute("PRAGMA wal_checkpoint(TRUNCATE); PRAGMA journal_mode = DELETE")
        return store
    }

    /// What SQLite reads through `sql` in a copy of `store` (with `sidecars` copied beside it):
    /// a hot journal among them is rolled back in the copy, by SQLite itself.
    static func truth(_ store: URL, sidecars: [String] = [], in folder: TemporaryFolder, _ sql: String, _ body: (Row) throws -> Void) throws {
        let scratch = folder.path("truth-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        let copy = scratch.appendingPathComponent(store.lastPathComponent)
        for suffix in [""] + sidecars { try FileManager.default.copyItem(atPath: store.path + suffix, toPath: copy.path + suffix) }
        let db = try Connection.open(path: copy.path, mode: .readWrite)
        try db.prepare(sql).forEach(body)
    }

    static let rows = 500_000

    static func expectPeak(_ run: CLI.Measured, under bound: Int) {
        guard let peak = run.peakResidentBytes else {
            print("memory not checked: \(run.unmeasured ?? "")")
            return
        }
        #expect(peak < bound, "peak \(peak >> 20) MB, bound \(bound >> 20) MB")
    }

    @Test("timeline over half a million dated rows: SQLite's own ORDER BY of the same events, ties kept in reading order, in under 150 MB")
    func timelineInBoundedMemory() throws {
        let folder = try TemporaryFolder("bounded-timeline")
        let store = try Self.demoStore(in: folder)
        let db = try Connection.open(path: store.path, mode: .readWrite)
        // About ten rows per instant (ties), a few at the instants of history transactions (ties
        // across sources), some without a date.
        try db.execute("""
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(Self.rows))
            INSERT INTO ZTODOITEM (Z_PK, Z_ENT, Z_OPT, ZISCOMPLETED, ZCREATEDAT, ZTITLE)
            SELECT (SELECT max(Z_PK) FROM ZTODOITEM) + i, (SELECT Z_ENT FROM Z_PRIMARYKEY WHERE Z_NAME = 'TodoItem'), 1, 0,
                   CASE WHEN i % 97 = 0 THEN NULL
                        WHEN i % 1001 = 0 THEN (SELECT ZTIMESTAMP FROM ATRANSACTION WHERE Z_PK >= 1 + (i / 1001) % 5 ORDER BY Z_PK LIMIT 1)
                        ELSE 785000000 + (i * 7919) % 100003 + 0.25 END,
                   'item ' || i FROM n
            """)
        try db.execute("UPDATE Z_PRIMARYKEY SET Z_MAX = (SELECT max(Z_PK) FROM ZTODOITEM) WHERE Z_NAME = 'TodoItem'")
        let tmp = try TemporaryFolder("bounded-timeline-tmp")
        let out = folder.path("timeline.csv")
        let run = try CLI.measured(["timeline", store.path], stdout: out, environment: ["TMPDIR": tmp.url.path], timeout: 600)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: tmp.url.path).isEmpty, "no scratch left")
        // Collecting every event before sorting took about 440 MB for this store; sorted in a
        // scratch file, the peak is about 45 MB whatever the number of rows.
        Self.expectPeak(run, under: 150 << 20)

        // The attribute events are SQLite's ORDER BY of the same values, ties by key (the order
        // the rows are read in); every event is in time order, and at one instant history comes
        // before attributes.
        var expected: [(pk: Int64, micros: Int64)] = []
        expected.reserveCapacity(Self.rows)
        try Self.truth(store, in: folder, "SELECT Z_PK, ZCREATEDAT FROM ZTODOITEM WHERE ZCREATEDAT IS NOT NULL ORDER BY ZCREATEDAT, Z_PK") { row in
            expected.append((row[0].int64 ?? -1, Int64((((row[1].double ?? 0) + 978_307_200) * 1_000_000).rounded())))
        }
        var transactions = 0
        try Self.truth(store, in: folder, "SELECT count(*) FROM ATRANSACTION WHERE ZTIMESTAMP IS NOT NULL") { transactions = $0[0].int ?? -1 }
        let text = try Data(contentsOf: out)
        var lines = text.split(separator: UInt8(ascii: "\n"))
        #expect(lines.removeFirst().starts(with: Data("datetime,timestamp,".utf8)))
        var attribute = 0, history = 0, mismatches = 0
        var previous: (micros: Int64, rank: Int) = (.min, 0)
        var unordered = 0
        for line in lines {
            let fields = line.split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
            guard let micros = Int64(fields[1]) else { mismatches += 1; continue }
            let isAttribute = fields.count == 15 && fields[4] == "attribute"
            let rank = isAttribute ? 2 : 0
            if (micros, rank) < previous { unordered += 1 }
            previous = (micros, rank)
            if isAttribute {
                if attribute >= expected.count || Int64(fields[7]) != expected[attribute].pk || micros != expected[attribute].micros { mismatches += 1 }
                attribute += 1
            } else if line.contains(Data("History transaction".utf8)) {
                history += 1
            }
        }
        #expect(attribute == expected.count)
        #expect(history == transactions && history > 0)
        #expect(mismatches == 0, "events that differ from SQLite's order")
        #expect(unordered == 0, "events out of time order, or an attribute before a history transaction of the same instant")
    }

    /// `BadInputTests`' hot-journal store, its journal grown to `journalBytes` with zeros (sparse,
    /// cheap to make) after SQLite's records: SQLite stops where a next header would be and is not,
    /// as in a journal an earlier, longer transaction left.
    static func hotJournalStore(in folder: TemporaryFolder, journalBytes: Int64? = nil) throws -> URL {
        let store = try HotJournal.store(in: folder.url)
        if let journalBytes { #expect(truncate(store.path + "-journal", off_t(journalBytes)) == 0) }
        return store
    }

    @Test("a 256 MB hot journal is rolled back and carved in under 100 MB; the store then reads as SQLite's own rollback of a copy")
    func hotJournalInBoundedMemory() throws {
        let folder = try TemporaryFolder("bounded-journal")
        let store = try Self.hotJournalStore(in: folder, journalBytes: 256 << 20)
        let tmp = try TemporaryFolder("bounded-journal-tmp")
        // recover reads the journal twice: SQLite rolls it back in the copy, and its page images are carved.
        let run = try CLI.measured(["recover", store.path, "--roll-back-journal", "--format", "jsonl"], stdout: folder.path("recover.jsonl"),
                                   environment: ["TMPDIR": tmp.url.path], timeout: 600)
        #expect(run.status == 0, "\(run.stderr)")
        Self.expectPeak(run, under: 100 << 20)
        #expect(try FileManager.default.contentsOfDirectory(atPath: tmp.url.path).isEmpty, "no scratch left")

        var expected: [String] = []
        try Self.truth(store, sidecars: ["-journal"], in: folder, "SELECT Z_PK, ZTITLE FROM ZTODOITEM ORDER BY Z_PK") { row in
            expected.append("\(row[0].int64 ?? -1) \(row[1].string ?? "")")
        }
        #expect(expected.count >= 300 && !expected.contains { $0.hasSuffix("(edited)") }, "SQLite rolled the edits back")
        let rows = try CLI.run(["rows", store.path, "TodoItem", "--roll-back-journal", "--format", "jsonl"])
        #expect(rows.status == 0, "\(rows.stderr)")
        let got = rows.stdout.split(separator: "\n").compactMap { line -> String? in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { return nil }
            return "\((object["_pk"] as? NSNumber)?.int64Value ?? -1) \(object["title"] as? String ?? "")"
        }
        #expect(got.count == expected.count)
        #expect(got == expected, "the rows as SQLite's rollback holds them (first difference at \(Array(zip(got, expected)).firstIndex { $0 != $1 } ?? -1))")
    }

    /// `zeroPageSize`: the header's page size 0, which SQLite reads as the database's (older SQLite wrote it so).
    @Test("a hot journal whose header claims more pages than the store and journal hold is refused before SQLite grows the copy to them",
          arguments: [false, true])
    func impossibleJournalPageCount(zeroPageSize: Bool) throws {
        let folder = try TemporaryFolder("journal-page-count")
        let store = try Self.hotJournalStore(in: folder)
        let journal = store.path + "-journal"
        let size = try #require(try FileManager.default.attributesOfItem(atPath: journal)[.size] as? NSNumber).int64Value
        #expect(size > 0)
        // 2^28 - 1 pages: a terabyte or more, from a journal of a few kilobytes.
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: journal))
        try handle.seek(toOffset: 16)
        try handle.write(contentsOf: Data([0x0f, 0xff, 0xff, 0xff]))
        if zeroPageSize {
            try handle.seek(toOffset: 24)
            try handle.write(contentsOf: Data([0, 0, 0, 0]))
        }
        try handle.close()
        let before = try FolderSnapshot(store.deletingLastPathComponent())
        let run = try CLI.run(["timeline", store.path, "--roll-back-journal"])
        #expect(run.status == 2, "\(run.stderr)")
        #expect(run.stderr.split(separator: "\n").count == 1 && run.stderr.contains("-journal") && run.stderr.contains("268435455 pages"), "\(run.stderr)")
        #expect(try FolderSnapshot(store.deletingLastPathComponent()) == before, "the evidence is unchanged")
    }
}
