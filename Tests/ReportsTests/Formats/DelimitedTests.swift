import Foundation
@testable import Reports
import StoreTestSupport
import Testing

/// The CSV and TSV rules: the String and the byte versions write the same fields, and Python's
/// csv module (an independent reader) reads each field back as the escaped cell.
@Suite("Delimited: one set of CSV/TSV rules, for Strings and for bytes")
struct DelimitedTests {
    /// Cells that test every rule: separators, quotes, line breaks, controls a terminal acts on,
    /// bidi overrides, backslashes, formulas, numbers that look like formulas, non-ASCII.
    static let corpus: [String] = [
        "", "plain", "a,b", "tab\there", "say \"hi\"", "two\nlines", "cr\rhere", "crlf\r\n", "\u{1B}[31mred", "bell\u{07}",
        "del\u{7F}", "c1\u{85}", "\u{202E}evil", "mark\u{061C}", "back\\slash", "=1+2", "+cmd", "-cmd", "@SUM(A1)", "\tlead tab",
        "\rlead cr", "-12.5", "+3e5", "1e", "-", "12.", "€😀é", "=\"quoted formula\",x", "\u{2028}sep",
    ]

    /// Random strings over an alphabet of the characters the rules turn on.
    static func generated(count: Int) -> [String] {
        var random = SystemRandomNumberGenerator()
        let alphabet: [Character] = ["a", "1", ",", "\t", "\"", "\n", "\r", "=", "+", "-", "@", ".", "e", "\\", "\u{1B}", "\u{202E}", "é", "😀"]
        return (0 ..< count).map { _ in String((0 ..< Int.random(in: 0 ... 8, using: &random)).map { _ in alphabet.randomElement(using: &random)! }) }
    }

    @Test("bytes and String write the same field", arguments: [Delimited.csv, .tsv], [false, true])
    func bytesMatchStrings(format: Delimited, raw: Bool) {
        for cell in Self.corpus + Self.generated(count: 2000) {
            var bytes: [UInt8] = []
            format.appendCell(Array(cell.utf8), raw: raw, to: &bytes)
            #expect(String(decoding: bytes, as: UTF8.self) == format.cell(cell, raw: raw), "\(format) raw \(raw): \(cell.debugDescription)")
        }
    }

    @Test("escaped cells are one line with no control character; formulas get a quote, numbers do not")
    func escaping() {
        for cell in Self.corpus + Self.generated(count: 500) {
            let escaped = Delimited.neutralisingFormula(Delimited.escapingControls(cell))
            #expect(!escaped.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F || (0x80 ... 0x9F).contains($0.value) || $0 == "\u{202E}" },
                    "\(cell.debugDescription) → \(escaped.debugDescription)")
        }
        #expect(Delimited.csv.cell("=1+2", raw: false) == "'=1+2")
        #expect(Delimited.csv.cell("-12.5", raw: false) == "-12.5")
        #expect(Delimited.csv.cell("\tx", raw: false) == "\\u0009x", "an escaped tab in front is not a formula")
        #expect(Delimited.csv.cell("\tx", raw: true) == "\tx", "raw: as stored")
        #expect(Delimited.csv.cell("a\\b", raw: false) == "a\\\\b")
    }

    /// Python's csv module reads the lines back: each field is the cell before quoting.
    @Test("Python's csv reader reads back every field", arguments: [Delimited.csv, .tsv], [false, true])
    func pythonReadsBack(format: Delimited, raw: Bool) throws {
        // Whole lines of four (a line of one empty cell is an empty line, which readers skip).
        var cells = Self.corpus + Self.generated(count: 300)
        while cells.count % 4 != 0 { cells.append("pad") }
        let folder = try TemporaryFolder("delimited")
        let file = folder.url.appendingPathComponent("cells.\(format.rawValue)")
        // Four cells a line, so separators between fields are read as well as inside them.
        let lines = stride(from: 0, to: cells.count, by: 4).map { Array(cells[$0 ..< $0 + 4]) }
        try Data(lines.map { format.line($0, raw: raw) }.joined().utf8).write(to: file)
        let expected = lines.map { $0.map { raw ? $0 : Delimited.neutralisingFormula(Delimited.escapingControls($0)) } }
        let expectedFile = folder.url.appendingPathComponent("expected.json")
        try Data(JSONSerialization.data(withJSONObject: expected)).write(to: expectedFile)
        let script = """
        import csv, json, sys
        path, expected_path, dialect = sys.argv[1:4]
        with open(path, encoding="utf-8", newline="") as f: rows = list(csv.reader(f, dialect=dialect))
        with open(expected_path, encoding="utf-8") as f: expected = json.load(f)
        bad = [i for i, (a, b) in enumerate(zip(rows, expected)) if a != b]
        print("ok" if len(rows) == len(expected) and not bad else "%d rows of %d; first differing %r" % (len(rows), len(expected), [(rows[i], expected[i]) for i in bad[:1]]))
        """
        let ran = try CLI.bounded(["python3", "-c", script, file.path, expectedFile.path, format == .csv ? "excel" : "excel-tab"],
                                  executable: URL(fileURLWithPath: "/usr/bin/env"))
        #expect(ran.status == 0 && ran.stdout == "ok\n", "\(ran.stdout)\(ran.stderr)")
    }
}
