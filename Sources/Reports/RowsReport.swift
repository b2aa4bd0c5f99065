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
    private let blocks: OutputBlocks
    private var json = JSONStream()
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
        blocks = OutputBlocks(spill: self.writeBytes)
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
        try encoder!.append(row, number: count, fieldCount: fields.count, to: &blocks.bytes)
        blocks.flushIfFull()
    }

    /// Writes what is gathered. `end()` does; call it also before reporting an error mid-stream,
    /// so the rows read so far come out first, as they did before there was a buffer.
    public func flush() {
        blocks.flush()
    }

    private func emit(_ text: String) {
        blocks.append(text)
    }

    /// CSV or TSV, for the formats that are one of them.
    private var delimited: Delimited? { Delimited(rawValue: format.rawValue) }

    public func begin() {
        switch format {
        case .json:
            emit(json.beginObject(header) + json.beginArray(key: "rows"))
        case .csv, .tsv:
            emit(delimited!.line(["entity", "pk"] + fields, raw: rawCSV))
        case .array:
            // The array's elements come from `RowBytesEncoder` as well as from here: both separate
            // them by `count`, so the array is framed by it too (as `JSONStream` would lay it out).
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
            emit(json.element(Self.json(row)))
        case .jsonl:
            emit(JSONLines.line(Self.flat(row, keys: flatKeys)))
        case .array:
            emit((count == 1 ? "\n" : ",\n") + Self.flat(row, keys: flatKeys).rendered(pretty: false))
        case .csv, .tsv:
            emit(delimited!.line([row.entity, String(row.pk)] + cells(row), raw: rawCSV))
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
            try splice.write(json.element(Self.json(row, rendering: splice.marking)), into: &blocks.bytes, spill: writeBytes)
        case .jsonl:
            try splice.write(JSONLines.line(Self.flat(row, keys: flatKeys, rendering: splice.marking)), into: &blocks.bytes, spill: writeBytes)
        case .array:
            try splice.write((count == 1 ? "\n" : ",\n") + Self.flat(row, keys: flatKeys, rendering: splice.marking).rendered(pretty: false), into: &blocks.bytes, spill: writeBytes)
        case .csv, .tsv:
            let delimited = delimited!
            var values = [FieldValue](repeating: .null, count: fields.count)
            for (index, value) in zip(row.fieldIndexes, row.values) where index >= 0 && index < values.count { values[index] = value.value }
            delimited.appendCell(Array(row.entity.utf8), raw: rawCSV, to: &blocks.bytes)
            blocks.bytes.append(delimited.separator)
            delimited.appendCell(Array(String(row.pk).utf8), raw: rawCSV, to: &blocks.bytes)
            for value in values {
                blocks.bytes.append(delimited.separator)
                if case .longText(let text) = value {
                    try LongTextOutput.cell(text, as: delimited, rawCSV: rawCSV, into: &blocks.bytes, spill: writeBytes)
                } else {
                    delimited.appendCell(Array(ValueRendering.cell(value).utf8), raw: rawCSV, to: &blocks.bytes)
                }
            }
            emit(delimited.lineEnd)
        case .table:
            preconditionFailure("a table shows a long text's first characters, as any cell")
        }
        blocks.flushIfFull()
    }

    public func end() {
        switch format {
        case .json:
            emit(json.end() + json.member("count", .int(count)) + json.end())
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
}

extension RowsWriter {
    /// `rows`' rows written as `format` shows them, read as they are written (jsonl, array, csv
    /// and tsv straight from the statement into output bytes).
    public static func write(_ rows: Storelens.EntityRows, as format: Format, rawCSV: Bool,
                             write: @escaping (String) -> Void, writeBytes: (([UInt8]) -> Void)? = nil) throws {
        try Self.write(format, fields: rows.fields, header: header(rows), title: title(rows), rawCSV: rawCSV, write: write, writeBytes: writeBytes) { writer in
            if writer.takesScanRows {
                try rows.forEachStored { try writer.add($0) }
            } else {
                try rows.forEach { try writer.add($0) }
            }
        }
    }

    /// A Core Data XML store's objects of one entity (the first `limit`), through the same writer
    /// (and so the same formats and escaping) as a SQLite store's rows.
    public static func write(_ selected: AtomicStoreRows, of store: AcquiredAtomicStore, limit: Int?, as format: Format, rawCSV: Bool,
                             write: @escaping (String) -> Void, writeBytes: (([UInt8]) -> Void)? = nil) throws {
        try Self.write(format, fields: selected.fields, header: header(selected, of: store), title: title(selected, of: store), rawCSV: rawCSV,
                       write: write, writeBytes: writeBytes) { writer in
            for row in selected.rows.prefix(limit ?? Int.max) { try writer.add(row) }
        }
    }

    /// Rows written as `format` shows them: the table's title line first and its count line last,
    /// the rows `add` hands the writer in between (read while they are written); the rows written
    /// before an error come out before the error goes on.
    public static func write(_ format: Format, fields: [String], header: [(String, JSONValue)], title: String, rawCSV: Bool,
                             write: @escaping (String) -> Void, writeBytes: (([UInt8]) -> Void)? = nil, rows add: (RowsWriter) throws -> Void) throws {
        let writer = RowsWriter(format: format, fields: fields, header: header, rawCSV: rawCSV, write: write, writeBytes: writeBytes)
        if format == .table { write(title + "\n") }
        writer.begin()
        do {
            try add(writer)
        } catch {
            writer.flush()
            throw error
        }
        writer.end()
        if format == .table { write("\(plural(writer.count, "row"))\n") }
    }
}
