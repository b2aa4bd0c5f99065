import StoreFormats

/// CSV and TSV, as every view that writes them does (rows, history, recover, wal --diff,
/// timeline): the rules for a cell live here and nowhere else, once for Strings and once for the
/// UTF-8 bytes the fast row encoders write, and `DelimitedTests` holds the two to the same answers.
///
/// - `csv`: RFC 4180, CRLF-terminated; a field holding a comma, quote or line break is quoted.
/// - `tsv`: tab-separated, LF-terminated; a field holding a tab, quote or line break is quoted
///   as in CSV (what Python's `excel-tab` dialect, sqlite-utils `--tsv`, pandas and
///   spreadsheets read).
///
/// Unless raw (`--raw-csv`), a cell's control characters are escaped (`escapingControls`) and a
/// cell a spreadsheet would run as a formula gets a leading `'` (`neutralisingFormula`, OWASP's
/// advice against CSV injection; docs/rows.md).
public enum Delimited: String, Sendable {
    case csv, tsv

    /// The byte between two cells.
    public var separator: UInt8 { self == .csv ? 0x2C : 0x09 }

    /// What ends a line.
    public var lineEnd: String { self == .csv ? "\r\n" : "\n" }

    /// One line: the cells, each made a field, joined and ended.
    public func line(_ cells: [String], raw: Bool) -> String {
        cells.map { cell($0, raw: raw) }.joined(separator: self == .csv ? "," : "\t") + lineEnd
    }

    /// A cell: unless `raw`, its control characters escaped and a formula neutralised; then
    /// quoted when it holds a separator, a quote or a line break.
    public func cell(_ s: String, raw: Bool) -> String {
        field(raw ? s : Self.neutralisingFormula(Self.escapingControls(s)))
    }

    func field(_ s: String) -> String {
        let separator = separator
        guard s.utf8.contains(where: { $0 == separator || $0 == 0x22 || $0 == 0x0A || $0 == 0x0D }) else { return s }
        return "\"" + s.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    /// `s` with every character a terminal could act on or that hides what a reader sees (the
    /// ones `TextTable.sanitized` replaces: C0 controls — tab, CR and LF included —, DEL, C1
    /// controls, bidi embeddings, overrides, isolates and marks, line and paragraph separators)
    /// written as `\u` and four lower-case hex digits, as JSON writes them, and each backslash
    /// doubled. So `cat` of a CSV file runs nothing (no ESC, no OSC 52, no CR that overwrites a
    /// line), a cell is one line, and the exact value comes back by undoing the two escapes
    /// (docs/rows.md, "Escaping").
    public static func escapingControls(_ s: String) -> String {
        guard s.unicodeScalars.contains(where: { $0 == "\\" || HostileText.isHostile($0) }) else { return s }
        var out = String.UnicodeScalarView()
        for scalar in s.unicodeScalars {
            if scalar == "\\" {
                out.append(contentsOf: "\\\\".unicodeScalars)
            } else if HostileText.isHostile(scalar) {
                let hex = String(scalar.value, radix: 16)
                out.append(contentsOf: ("\\u" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex).unicodeScalars)
            } else {
                out.append(scalar)
            }
        }
        return String(out)
    }

    /// `s` with a `'` in front when a spreadsheet would read it as a formula: it starts with
    /// `=`, `+`, `-`, `@`, tab or CR (OWASP, "CSV Injection"). A plain number such as `-12.5` or
    /// `+3e5` is left alone: it is a value, not a formula, and keeps sorting as a number.
    public static func neutralisingFormula(_ s: String) -> String {
        guard let first = s.unicodeScalars.first, "=+-@\t\r".unicodeScalars.contains(first) else { return s }
        if isPlainNumber(Array(s.utf8)) { return s }
        return "'" + s
    }

    // MARK: - Bytes

    /// `cell(_:raw:)` on UTF-8 bytes, appended to `out`: byte for byte what the String version
    /// gives, without making a String of a cell that needs no escape.
    public func appendCell(_ text: [UInt8], raw: Bool, to out: inout [UInt8]) {
        // Only a backslash, a C0 control, DEL or a lead byte of C1 (0xC2), U+061C (0xD8) or the
        // U+2xxx marks and separators (0xE2) can need an escape; other cells skip the String.
        let escape = !raw && text.contains { $0 < 0x20 || $0 == 0x5C || $0 == 0x7F || $0 == 0xC2 || $0 == 0xD8 || $0 == 0xE2 }
        let cell = escape ? Array(Self.escapingControls(String(decoding: text, as: UTF8.self)).utf8) : text
        let neutralise = !raw && (cell.first.map { [0x3D, 0x2B, 0x2D, 0x40, 0x09, 0x0D].contains($0) } ?? false)
            && !Self.isPlainNumber(cell)
        let separator = separator
        let quote = cell.contains { $0 == separator || $0 == 0x22 || $0 == 0x0A || $0 == 0x0D }
        if quote { out.append(0x22) }
        if neutralise { out.append(0x27) }
        if quote {
            for b in cell {
                if b == 0x22 { out.append(0x22) }
                out.append(b)
            }
            out.append(0x22)
        } else {
            out.append(contentsOf: cell)
        }
    }

    /// Whether the UTF-8 bytes are a plain number: an optional sign, digits, optional `.digits`,
    /// optional exponent (`LongTextOutput.PlainNumber` is the same, fed a byte at a time).
    static func isPlainNumber(_ s: [UInt8]) -> Bool {
        var i = 0
        func isDigit(_ j: Int) -> Bool { j < s.count && s[j] >= 0x30 && s[j] <= 0x39 }
        func digits() -> Int {
            let from = i
            while isDigit(i) { i += 1 }
            return i - from
        }
        if i < s.count, s[i] == 0x2D || s[i] == 0x2B { i += 1 }
        guard digits() > 0 else { return false }
        if i < s.count, s[i] == 0x2E {
            i += 1
            guard digits() > 0 else { return false }
        }
        if i < s.count, s[i] == 0x65 || s[i] == 0x45 {
            i += 1
            if i < s.count, s[i] == 0x2D || s[i] == 0x2B { i += 1 }
            guard digits() > 0 else { return false }
        }
        return i == s.count
    }
}
