import Acquisition
import CoreDataStore
import Foundation
import Operations
import StoreFormats

/// Streams the rows of `storelens rows` in one of six formats, writing as rows arrive so that
/// a table of any size never has to fit in memory.
///
/// - `json`: one document, `rows[]` written member by member.
/// - `jsonl`: one flat object per line (`flat(_:keys:)`): what `sqlite-utils insert --nl`,
///   `jq` and `pandas.read_json(lines=True)` load as one row per record.
/// - `array`: a JSON array of those flat objects, one per line, written as rows arrive.
/// - `csv`: RFC 4180, a header line first; NULL is an empty field. A cell a spreadsheet would
///   run as a formula (starting with `=`, `+`, `-`, `@`, tab or CR) gets a leading `'`, as
///   OWASP recommends against CSV injection, unless `rawCSV` (docs/rows.md).
/// - `tsv`: the csv cells separated by tabs, LF-terminated; a cell holding a tab, CR, LF or `"`
///   is quoted as in CSV (what Python's `excel-tab` dialect, sqlite-utils `--tsv`, pandas and
///   spreadsheets read), with the same formula protection.
/// - `table`: aligned columns; widths come from the first `tablePage` rows, later cells are cut
///   to those widths (with `…`), and no cell is wider than `maxCellWidth`.
public final class RowsWriter {
    public enum Format: String, Sendable, CaseIterable {
        case table, json, jsonl, array, csv, tsv
    }

    public static let schemaVersion = 1
    public static let tablePage = 256
    public static let maxCellWidth = 60

    let format: Format
    let fields: [String]
    let header: [(String, JSONValue)]
    let write: (String) -> Void
    let writeBytes: ([UInt8]) -> Void
    /// Output not yet written: rows are gathered into blocks of about `blockSize` bytes, so that
    /// a million rows are a few thousand writes, not a million.
    private var buffer: [UInt8] = []
    static let blockSize = 1 << 16
    /// The jsonl/array/csv/tsv writer of `RowScan` rows (nil for json and table).
    private var encoder: RowBytesEncoder?
    /// CSV cells exactly as stored, formulas included (`--raw-csv`).
    let rawCSV: Bool
    public private(set) var count = 0
    /// The flat objects' keys for `fields`, in order (`flatKey`).
    private let flatKeys: [String]
    private var pending: [[String]] = []
    private var widths: [Int]?

    /// - Parameter fields: the column labels (`RowReader.Field.label`), in `RowReader.fields` order.
    /// - Parameter header: leading members of the JSON document (path, entity, model source …).
    /// - Parameter rawCSV: do not neutralise formula cells in CSV.
    /// - Parameter writeBytes: writes UTF-8 bytes; by default they are handed to `write` as a String.
    public init(format: Format, fields: [String], header: [(String, JSONValue)], rawCSV: Bool = false,
                write: @escaping (String) -> Void, writeBytes: (([UInt8]) -> Void)? = nil) {
        self.rawCSV = rawCSV
        self.format = format
        self.fields = fields
        self.header = header
        self.write = write
        self.writeBytes = writeBytes ?? { write(String(decoding: $0, as: UTF8.self)) }
        self.flatKeys = fields.map(Self.flatKey)
        if RowBytesEncoder.handles(format) {
            encoder = RowBytesEncoder(format: format, flatKeys: flatKeys, rawCSV: rawCSV, spill: self.writeBytes)
        }
        buffer.reserveCapacity(Self.blockSize + 4096)
    }

    /// Whether `add(_: RowScan.Row)` takes this format's rows (jsonl, array, csv, tsv).
    /// The members every rows document starts with: the store, the entity, the model, the fields.
    public static func header(_ rows: Storelens.EntityRows) -> [(String, JSONValue)] {
        var header: [(String, JSONValue)] = [
            JSONDocument.version(schemaVersion),
            ("path", .string(rows.path)),
            ("entity", .string(rows.entity)),
            ("modelSource", .string(rows.model.source.rawValue)),
            ("asOfCommit", .optional(rows.asOfCommit)),
            ("fields", .array(rows.fields.map { .string($0) })),
        ]
        if rows.model.source == .inferred { header.append(("modelNotes", .array(rows.model.notes.map(JSONValue.string)))) }
        return header
    }

    /// The table view's first line: the store, the entity, the commit and an inferred model said.
    public static func title(_ rows: Storelens.EntityRows) -> String {
        var title = TextTable.sanitized("\(rows.path): \(rows.entity)")
        if let asOf = rows.asOfCommit { title += " as of commit \(asOf)" }
        if rows.model.source == .inferred { title += " (model INFERRED from the SQL schema)" }
        return title
    }

    /// A Core Data XML store's header: its format stands for the model.
    public static func header(_ rows: AtomicStoreRows, of store: AcquiredAtomicStore) -> [(String, JSONValue)] {
        [
            JSONDocument.version(schemaVersion),
            ("path", .string(store.displayPath)),
            ("entity", .string(rows.entity)),
            ("modelSource", .string(store.format.rawValue)),
            ("asOfCommit", .null),
            ("fields", .array(rows.fields.map(JSONValue.string))),
        ]
    }

    public static func title(_ rows: AtomicStoreRows, of store: AcquiredAtomicStore) -> String {
        TextTable.sanitized("\(store.displayPath): \(rows.entity) (\(store.format.title))")
    }

    public var takesScanRows: Bool { encoder != nil }

    /// Adds a row read by a `RowScan`: the same output as `add(_: DecodedRow)` for the row
    /// `RowReader.forEach` decodes from the same cells. Only when `takesScanRows`.
    public func add(_ row: RowScan.Row) throws {
        guard encoder != nil else { preconditionFailure("add(RowScan.Row) is for jsonl, array, csv and tsv") }
        count += 1
        try encoder!.append(row, number: count, fieldCount: fields.count, to: &buffer)
        if buffer.count >= Self.blockSize { flush() }
    }

    /// Writes what is gathered. `end()` does; call it also before reporting an error mid-stream,
    /// so the rows read so far come out first, as they did before there was a buffer.
    public func flush() {
        guard !buffer.isEmpty else { return }
        writeBytes(buffer)
        buffer.removeAll(keepingCapacity: true)
    }

    private func emit(_ text: String) {
        buffer.append(contentsOf: text.utf8)
        if buffer.count >= Self.blockSize { flush() }
    }

    public func begin() {
        switch format {
        case .json:
            var text = "{\n"
            for (key, value) in header {
                var rendered = ""
                JSONValue.escape(key, into: &rendered)
                text += "  \(rendered): " + value.rendered(indentedBy: 2).dropFirst(2) + ",\n"
            }
            emit(text + "  \"rows\": [")
        case .csv:
            emit((["entity", "pk"] + fields).map(csvCell).joined(separator: ",") + "\r\n")
        case .tsv:
            emit((["entity", "pk"] + fields).map(tsvCell).joined(separator: "\t") + "\n")
        case .array:
            emit("[")
        case .jsonl, .table:
            break
        }
    }

    public static func json(_ row: DecodedRow) -> JSONValue {
        json(row, rendering: ValueJSON.json)
    }

    static func json(_ row: DecodedRow, rendering: (FieldValue) -> JSONValue) -> JSONValue {
        .object([
            ("entity", .string(row.entity)),
            ("pk", Int(exactly: row.pk).map(JSONValue.int) ?? .string(String(row.pk))),
            ("values", .object(row.values.map { ($0.name, rendering($0.value)) })),
        ])
    }

    /// The key reserved for the row's own entity in a flat object.
    public static let entityKey = "_entity"
    /// The key reserved for the row's `Z_PK` in a flat object.
    public static let pkKey = "_pk"

    /// A field label as a flat object's key. A label starting with `_` gets one more `_` in
    /// front, so a property named `_entity` or `_pk` (a hostile or odd model) can never take the
    /// reserved keys' place, and no two labels map to the same key (labels are unique, and only
    /// escaped ones start with `__`).
    public static func flatKey(_ label: String) -> String {
        label.hasPrefix("_") ? "_" + label : label
    }

    /// A row as one flat object: `_entity`, `_pk`, then every field under its `flatKey(label)`
    /// with the value exactly as `json(_:)` writes it. Every object has every key, in `fields`
    /// order, so that each line describes the same columns (a table's shape): a property the
    /// row's entity does not have (a sibling subentity's) is `null`, as it is empty in CSV.
    ///
    /// - Parameter keys: `fields.map(flatKey)`, in `RowReader.fields` order.
    public static func flat(_ row: DecodedRow, keys: [String]) -> JSONValue {
        flat(row, keys: keys, rendering: ValueJSON.json)
    }

    static func flat(_ row: DecodedRow, keys: [String], rendering: (FieldValue) -> JSONValue) -> JSONValue {
        var values = [JSONValue](repeating: .null, count: keys.count)
        for (index, value) in zip(row.fieldIndexes, row.values) where index >= 0 && index < values.count {
            values[index] = rendering(value.value)
        }
        return .object([(entityKey, .string(row.entity)),
                         (pkKey, Int(exactly: row.pk).map(JSONValue.int) ?? .string(String(row.pk)))]
                        + zip(keys, values).map { ($0, $1) })
    }

    public func add(_ row: DecodedRow) throws {
        count += 1
        if format != .table, row.values.contains(where: { LongTextSplice.holdsLongText($0.value) }) {
            try addSpliced(row)
            return
        }
        switch format {
        case .json:
            emit((count == 1 ? "\n" : ",\n") + Self.json(row).rendered(indentedBy: 4))
        case .jsonl:
            emit(Self.flat(row, keys: flatKeys).rendered(pretty: false) + "\n")
        case .array:
            emit((count == 1 ? "\n" : ",\n") + Self.flat(row, keys: flatKeys).rendered(pretty: false))
        case .csv:
            emit(([row.entity, String(row.pk)] + cells(row)).map(csvCell).joined(separator: ",") + "\r\n")
        case .tsv:
            emit(([row.entity, String(row.pk)] + cells(row)).map(tsvCell).joined(separator: "\t") + "\n")
        case .table:
            var values = [String](repeating: "", count: fields.count)
            for (index, value) in zip(row.fieldIndexes, row.values) where index < values.count {
                values[index] = ValueRendering.cell(value.value, nullText: "NULL")
            }
            let cells = [row.entity, String(row.pk)] + values
            let clean = cells.map { Self.clip(TextTable.sanitized($0), to: Self.maxCellWidth) }
            if widths == nil {
                pending.append(clean)
                if pending.count >= Self.tablePage { flushTable() }
            } else {
                emit(line(clean))
            }
        }
    }

    /// A row holding a text over `LongValue.window`: rendered with a mark in each long text's
    /// place, then written with each mark replaced by the text, streamed in pieces.
    private func addSpliced(_ row: DecodedRow) throws {
        let splice = LongTextSplice()
        switch format {
        case .json:
            try splice.write((count == 1 ? "\n" : ",\n") + Self.json(row, rendering: splice.marking).rendered(indentedBy: 4), into: &buffer, spill: writeBytes)
        case .jsonl:
            try splice.write(Self.flat(row, keys: flatKeys, rendering: splice.marking).rendered(pretty: false) + "\n", into: &buffer, spill: writeBytes)
        case .array:
            try splice.write((count == 1 ? "\n" : ",\n") + Self.flat(row, keys: flatKeys, rendering: splice.marking).rendered(pretty: false), into: &buffer, spill: writeBytes)
        case .csv, .tsv:
            let separator: UInt8 = format == .csv ? 0x2C : 0x09
            var values = [FieldValue](repeating: .null, count: fields.count)
            for (index, value) in zip(row.fieldIndexes, row.values) where index >= 0 && index < values.count { values[index] = value.value }
            emit(format == .csv ? csvCell(row.entity) + "," + csvCell(String(row.pk)) : tsvCell(row.entity) + "\t" + tsvCell(String(row.pk)))
            for value in values {
                buffer.append(separator)
                if case .longText(let text) = value {
                    try LongTextOutput.cell(text, separator: separator, rawCSV: rawCSV, into: &buffer, spill: writeBytes)
                } else {
                    let cell = ValueRendering.cell(value)
                    emit(format == .csv ? csvCell(cell) : tsvCell(cell))
                }
            }
            emit(format == .csv ? "\r\n" : "\n")
        case .table:
            preconditionFailure("a table shows a long text's first characters, as any cell")
        }
        if buffer.count >= Self.blockSize { flush() }
    }

    public func end() {
        switch format {
        case .json:
            emit((count == 0 ? "],\n" : "\n  ],\n") + "  \"count\": \(count)\n}\n")
        case .array:
            emit(count == 0 ? "]\n" : "\n]\n")
        case .table:
            flushTable()
            if count == 0 { emit("  (no rows)\n") }
        case .csv, .tsv, .jsonl:
            break
        }
        flush()
    }

    /// The row's cells in `fields` order, empty for NULL and for properties its entity lacks.
    private func cells(_ row: DecodedRow) -> [String] {
        var cells = [String](repeating: "", count: fields.count)
        for (index, value) in zip(row.fieldIndexes, row.values) where index >= 0 && index < cells.count {
            cells[index] = ValueRendering.cell(value.value)
        }
        return cells
    }

    private func flushTable() {
        guard widths == nil else { return }
        let head = ["ENTITY", "PK"] + fields.map { Self.clip(TextTable.sanitized($0), to: Self.maxCellWidth) }
        var w = head.map(\.count)
        for row in pending { for (i, cell) in row.enumerated() { w[i] = max(w[i], cell.count) } }
        widths = w
        emit(line(head))
        for row in pending { emit(line(row)) }
        pending = []
    }

    private func line(_ cells: [String]) -> String {
        guard let widths else { return "" }
        var out = ""
        for (i, cell) in cells.enumerated() {
            let clipped = Self.clip(cell, to: widths[i])
            let pad = String(repeating: " ", count: widths[i] - clipped.count)
            out += (i == 1 ? pad + clipped : clipped + pad)
            if i < cells.count - 1 { out += "  " }
        }
        while out.hasSuffix(" ") { out.removeLast() }
        return out + "\n"
    }

    static func clip(_ s: String, to width: Int) -> String {
        s.count <= width ? s : String(s.prefix(max(0, width - 1))) + "…"
    }

    private func csvCell(_ s: String) -> String { Self.csvCell(s, raw: rawCSV) }

    private func tsvCell(_ s: String) -> String { Self.tsvCell(s, raw: rawCSV) }

    /// A CSV cell as every CSV view writes it: unless `raw` (`--raw-csv`), its control
    /// characters escaped (`escapingControls`) and a formula neutralised; then quoted as RFC 4180 wants.
    public static func csvCell(_ s: String, raw: Bool) -> String {
        csvField(raw ? s : neutralisingFormula(escapingControls(s)))
    }

    /// `csvCell` for TSV.
    public static func tsvCell(_ s: String, raw: Bool) -> String {
        tsvField(raw ? s : neutralisingFormula(escapingControls(s)))
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
        if isPlainNumber(s) { return s }
        return "'" + s
    }

    static func isPlainNumber(_ s: String) -> Bool {
        var scalars = Substring(s).unicodeScalars[...]
        if let sign = scalars.first, sign == "-" || sign == "+" { scalars = scalars.dropFirst() }
        func digits() -> Int {
            let n = scalars.prefix { $0.value >= 0x30 && $0.value <= 0x39 }.count
            scalars = scalars.dropFirst(n)
            return n
        }
        guard digits() > 0 else { return false }
        if scalars.first == "." {
            scalars = scalars.dropFirst()
            guard digits() > 0 else { return false }
        }
        if let e = scalars.first, e == "e" || e == "E" {
            scalars = scalars.dropFirst()
            if let sign = scalars.first, sign == "-" || sign == "+" { scalars = scalars.dropFirst() }
            guard digits() > 0 else { return false }
        }
        return scalars.isEmpty
    }

    /// A TSV field: as is, or quoted as in CSV when it holds a tab, CR, LF or `"`, so that the
    /// separators never appear bare inside a value (Python's `excel-tab` dialect).
    static func tsvField(_ s: String) -> String {
        guard s.utf8.contains(where: { $0 == 0x09 || $0 == 0x22 || $0 == 0x0A || $0 == 0x0D }) else { return s }
        return "\"" + s.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    static func csvField(_ s: String) -> String {
        guard s.utf8.contains(where: { $0 == 0x2C || $0 == 0x22 || $0 == 0x0A || $0 == 0x0D }) else { return s }
        return "\"" + s.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}
