import Foundation
import SQLiteAccess
import StoreFormats

/// Whether the indexes of the tables a `-wal` changed agree with them where the `-wal` changed
/// them: the quick form of `IndexAgreement` that `inspect` and `wal` use, whose cost follows the
/// `-wal`'s pages, not the tables' size.
///
/// A `-wal` copied after a checkpoint the main file missed holds pages written against a state of
/// the main file the copy never saw; with it applied, a table leaf the `-wal` wrote holds rows the
/// main file's index pages do not know, or an index leaf it wrote names rows, or values, the
/// table does not have. So, in the view with the `-wal` applied:
/// - every row on a table leaf the `-wal` wrote must have its entry in each of its table's indexes;
/// - every entry on an index leaf the `-wal` wrote must name a row with the entry's values;
/// - each index must hold as many entries as its table has rows.
/// A page is taken as a table's (or an index's) when its first record is that table's row (or that
/// index's entry) as SQLite reads it; a page of no table the `-wal` changed (free, or of another
/// table) is passed over.
///
/// What this does not see, `storelens check` does (it compares every row, `IndexAgreement`): an
/// index entry missing for a row on a page the `-wal` did not write while another entry, for a row
/// the table no longer has, sits on a page the `-wal` did not write either, in equal numbers; and
/// damage to the b-trees' structure (`quick_check`). A `false` answer is only a reason to ask
/// SQLite's own check, whose words a finding then quotes.
public enum WALPageAgreement {
    /// The answer for one table.
    public enum Verdict: Equatable, Sendable {
        /// Every row and entry on the `-wal`'s pages, and the counts, agree.
        case agrees
        /// Something differs, or could not be read: SQLite's check must decide.
        case unsure
    }

    /// The committed `-wal` as the view with it applied shows it: its frames and bytes.
    public struct Pages {
        let wal: WAL
        let data: Data
        let usableSize: Int
        let textEncoding: UInt32
        /// The `-wal` file `data` maps, read a page at a time with `pread`: a page read here and
        /// there through the mapping leaves megabytes resident (the page cache maps large folios).
        let file: String?

        /// - Parameter file: the working copy's `-wal`, when `data` maps it.
        public init(wal: WAL, data: Data, header: DatabaseHeader, file: String? = nil) {
            self.wal = wal
            self.data = data
            self.file = file
            usableSize = (wal.pageSize ?? header.pageSize) - Int(header.reservedBytesPerPage)
            textEncoding = header.textEncoding
        }
    }

    /// One table's statements, prepared once for all its pages.
    final class TableProbe {
        let name: String
        let columnCount: Int
        /// The column that is the rowid (`INTEGER PRIMARY KEY`): NULL in the record.
        let rowidColumn: Int?
        let indexes: [IndexAgreement.IndexShape]
        /// The whole row by rowid, from the table's own b-tree.
        let row: Statement
        /// Per index: is (values…, rowid) an entry of it, read from the index alone.
        let entryProbes: [Statement]
        /// Per index: how many of the table's rows with a rowid in [?1, ?2] have no entry in it
        /// (each row's entry sought in the index's own pages).
        let missingInRange: [Statement]

        init?(_ connection: Connection, table: String) {
            guard let indexes = IndexAgreement.indexShapes(connection, table: table),
                  let columns = try? connection.columns(of: table), !columns.isEmpty else { return nil }
            let quoted = Identifier.quoted(table)
            name = table
            columnCount = columns.count
            let keys = columns.filter(\.isPrimaryKey)
            rowidColumn = keys.count == 1 && keys[0].declaredType.uppercased() == "INTEGER"
                ? columns.firstIndex { $0.name == keys[0].name } : nil
            self.indexes = indexes
            // A statement whose plan does not read the index the way the check needs (its own
            // pages, each entry sought) leaves the table to SQLite's check.
            func prepare(_ sql: String, planning step: String) -> Statement? {
                guard let plan = try? IndexAgreement.plan(connection, sql), plan.contains(where: { $0.contains(step) }) else { return nil }
                return try? connection.prepare(sql)
            }
            guard let row = try? connection.prepare("SELECT \(columns.map { Identifier.quoted($0.name) }.joined(separator: ", ")) FROM \(quoted) NOT INDEXED WHERE rowid = ?") else { return nil }
            self.row = row
            entryProbes = indexes.compactMap { index in
                let conditions = index.columns.enumerated().map { "\(Identifier.quoted($1)) IS ?\($0 + 1)" }
                return prepare("SELECT count(*) FROM \(quoted) INDEXED BY \(Identifier.quoted(index.name)) WHERE \(conditions.joined(separator: " AND ")) AND rowid = ?\(index.columns.count + 1)",
                               planning: "COVERING INDEX")
            }
            missingInRange = indexes.compactMap { index in
                let conditions = index.columns.map { "i.\(Identifier.quoted($0)) IS t.\(Identifier.quoted($0))" }
                return prepare("SELECT count(*) FROM \(quoted) AS t NOT INDEXED WHERE t.rowid BETWEEN ?1 AND ?2 AND NOT EXISTS (SELECT 1 FROM \(quoted) AS i INDEXED BY \(Identifier.quoted(index.name)) WHERE \(conditions.joined(separator: " AND ")) AND i.rowid = t.rowid)",
                               planning: "SEARCH I USING COVERING INDEX")
            }
            guard entryProbes.count == indexes.count, missingInRange.count == indexes.count else { return nil }
        }
    }

    /// The verdict for each of `tables` (tables the view does not hold, or of a kind not read here,
    /// are `unsure`).
    public static func verdicts(_ connection: Connection, pages: Pages, tables: [String]) -> [String: Verdict] {
        // One read transaction for the thousands of lookups below: outside one, SQLite takes and
        // drops its file and wal-index locks for every statement (a fcntl each way), which cost
        // more than the lookups themselves.
        let inTransaction = (try? connection.execute("SAVEPOINT storelens_wal_pages")) != nil
        defer { if inTransaction { try? connection.execute("RELEASE storelens_wal_pages") } }
        var verdicts: [String: Verdict] = [:]
        var probes: [TableProbe] = []
        for table in tables {
            if let probe = TableProbe(connection, table: table) { probes.append(probe) } else { verdicts[table] = .unsure }
        }
        func fail(_ probe: TableProbe) { verdicts[probe.name] = .unsure }
        // Each index's row count against its table's: entries for rows on pages the -wal did not
        // write are otherwise not looked at.
        for probe in probes {
            let quoted = Identifier.quoted(probe.name)
            guard let rows = try? connection.scalar("SELECT count(*) FROM \(quoted) NOT INDEXED").int else { fail(probe); continue }
            for index in probe.indexes {
                let entries = try? connection.scalar("SELECT count(*) FROM \(quoted) INDEXED BY \(Identifier.quoted(index.name))").int
                if entries != rows { fail(probe) }
            }
        }
        let latest = pages.wal.latestFrames()
        let size = pages.wal.databaseSizeInPages
        let pageSize = pages.wal.pageSize ?? 0
        guard pageSize > 0 else { return Dictionary(uniqueKeysWithValues: tables.map { ($0, .unsure) }) }
        let descriptor = pages.file.map { open($0, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC) } ?? -1
        defer { if descriptor >= 0 { close(descriptor) } }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: pageSize, alignment: 16)
        defer { buffer.deallocate() }
        pages.data.withUnsafeBytes { (file: UnsafeRawBufferPointer) in
            for number in latest.keys.sorted() where size == 0 || Int(number) <= size {
                guard let frame = latest[number], frame.pageOffset >= 0, frame.pageOffset + pageSize <= file.count else { continue }
                let page: UnsafeRawBufferPointer
                if descriptor >= 0 {
                    guard pread(descriptor, buffer.baseAddress!, pageSize, off_t(frame.pageOffset)) == pageSize else {
                        probes.forEach(fail); return
                    }
                    page = UnsafeRawBufferPointer(buffer)
                } else {
                    page = UnsafeRawBufferPointer(rebasing: file[frame.pageOffset ..< frame.pageOffset + pageSize])
                }
                guard let layout = BTreePageLayout.read(page, headerOffset: number == 1 ? DatabaseHeader.length : 0, usableSize: pages.usableSize),
                      !layout.cells.isEmpty else { continue }
                let live = probes.filter { verdicts[$0.name] == nil }
                if live.isEmpty { return }
                switch layout.type {
                case 0x0D: checkTableLeaf(page, layout, pages, live, fail)
                case 0x0A: checkIndexLeaf(connection, page, layout, pages, live, fail)
                default: continue
                }
            }
        }
        for probe in probes where verdicts[probe.name] == nil { verdicts[probe.name] = .agrees }
        return verdicts
    }

    /// Rows on a table leaf the `-wal` wrote: each must be in each index of its table. The page
    /// is the table's when its first whole record is the table's row as SQLite reads it; then the
    /// table's rows in the page's rowid range (on a live leaf, exactly the page's rows; on a page
    /// a later commit freed, whatever rows the table has there now) are looked for in each index,
    /// one statement per index and page.
    static func checkTableLeaf(_ page: UnsafeRawBufferPointer, _ layout: BTreePageLayout, _ pages: Pages,
                               _ probes: [TableProbe], _ fail: (TableProbe) -> Void) {
        let maxLocal = pages.usableSize - 35
        var rowids: [Int64] = []
        var whole: TableLeafCell?
        for cell in layout.cells {
            guard let length = PageBytes.varint(page, cell, limit: layout.usable),
                  let rowid = PageBytes.varint(page, cell + length.length, limit: layout.usable) else { return }
            rowids.append(Int64(bitPattern: rowid.value))
            if whole == nil { whole = TableLeafCell.read(page, at: cell, limit: layout.usable, maxLocal: maxLocal) }
        }
        guard let whole, let low = rowids.min(), let high = rowids.max() else { return }
        // A record may hold fewer values than its table has columns (a column added later reads
        // as its default): its values are compared with the row's first columns.
        for probe in probes where whole.values.count <= probe.columnCount {
            guard let row = fetch(probe.row, [.integer(whole.rowid)], columns: probe.columnCount),
                  matches(row, whole, probe, pages.textEncoding) else { continue }
            for statement in probe.missingInRange {
                guard fetch(statement, [.integer(low), .integer(high)], columns: 1)?.first?.int == 0 else { fail(probe); return }
            }
            return
        }
    }

    /// Entries on an index leaf the `-wal` wrote: each must name a row of its table with its
    /// values. The page is taken as the index's when its first and last entries are in the index
    /// as SQLite reads it (a page a later commit freed may then name rows that are gone: SQLite's
    /// check decides, so that costs time, never a wrong answer).
    static func checkIndexLeaf(_ connection: Connection, _ page: UnsafeRawBufferPointer, _ layout: BTreePageLayout, _ pages: Pages,
                               _ probes: [TableProbe], _ fail: (TableProbe) -> Void) {
        let maxLocal = (pages.usableSize - 12) * 64 / 255 - 23
        var entries: [[DatabaseValue]] = []
        for cell in layout.cells {
            guard let length = PageBytes.varint(page, cell, limit: layout.usable) else { return }
            let start = cell + length.length
            // An entry that spills to overflow pages is not read here: the tables that could own
            // the page are left to SQLite.
            guard length.value <= UInt64(maxLocal), start + Int(length.value) <= layout.usable,
                  let record = SQLiteRecord.parse(page, at: start, limit: start + Int(length.value)),
                  record.end == start + Int(length.value) else {
                probes.forEach(fail); return
            }
            entries.append(record.values.map { DatabaseValue($0, textEncoding: pages.textEncoding) })
        }
        guard let first = entries.first, let last = entries.last else { return }
        for probe in probes {
            for (i, index) in probe.indexes.enumerated() where entries.allSatisfy({ $0.count == index.columns.count + 1 }) {
                // Whose page: the index that holds its first and last entries.
                guard fetch(probe.entryProbes[i], first, columns: 1)?.first?.int == 1,
                      fetch(probe.entryProbes[i], last, columns: 1)?.first?.int == 1 else { continue }
                // The rows the entries name, read from the table a few hundred at a time (one
                // statement per batch, not per entry: the statement's own cost is most of a lookup's).
                var rows: [Int64: [DatabaseValue]] = [:]
                let ids = entries.compactMap { $0.last?.int64 }
                guard ids.count == entries.count else { fail(probe); return }
                let columns = index.columns.map(Identifier.quoted).joined(separator: ", ")
                for batch in stride(from: 0, to: ids.count, by: 500).map({ Array(ids[$0 ..< min($0 + 500, ids.count)]) }) {
                    let sql = "SELECT rowid, \(columns) FROM \(Identifier.quoted(probe.name)) NOT INDEXED WHERE rowid IN (\(Array(repeating: "?", count: batch.count).joined(separator: ", ")))"
                    do {
                        let statement = try connection.prepare(sql)
                        try statement.bind(batch.map { .integer($0) })
                        try statement.forEachCursor { row in
                            rows[row.int64(0)] = (1 ... index.columns.count).map { row.value($0) }
                        }
                    } catch {
                        fail(probe); return
                    }
                }
                for (entry, id) in zip(entries, ids) {
                    guard let row = rows[id], zip(row, entry).allSatisfy({ $0.equalsAsSQLite($1) }) else { fail(probe); return }
                }
                return
            }
        }
    }

    /// Whether SQLite's row is the record on the page (the rowid column, NULL in the record, aside;
    /// columns the record predates aside).
    static func matches(_ row: [DatabaseValue], _ record: TableLeafCell, _ probe: TableProbe, _ encoding: UInt32) -> Bool {
        record.values.count <= row.count && zip(row, record.values).enumerated().allSatisfy { i, pair in
            i == probe.rowidColumn || pair.0.equalsAsSQLite(DatabaseValue(pair.1, textEncoding: encoding))
        }
    }

    /// The one row `statement` gives for `arguments`, or nil (no row, or an error).
    static func fetch(_ statement: Statement, _ arguments: [DatabaseValue], columns: Int) -> [DatabaseValue]? {
        var result: [DatabaseValue]?
        do {
            try statement.bind(arguments)
            try statement.forEachCursor { row in
                if result == nil { result = (0 ..< columns).map { row.value($0) } }
            }
        } catch {
            return nil
        }
        return result
    }

}
