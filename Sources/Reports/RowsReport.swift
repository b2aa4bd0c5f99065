import CoreDataStore
import Foundation

/// Streams the rows of `storelens rows` in one of four formats, writing as rows arrive so that
/// a table of any size never has to fit in memory.
///
/// - `json`: one document, `rows[]` written member by member.
/// - `jsonl`: one JSON object per line.
/// - `csv`: RFC 4180, a header line first; NULL is an empty field.
/// - `table`: aligned columns; widths come from the first `tablePage` rows, later cells are cut
///   to those widths (with `…`), and no cell is wider than `maxCellWidth`.
public final class RowsWriter {
    public enum Format: String, Sendable, CaseIterable {
        case table, json, jsonl, csv
    }

    public static let schemaVersion = 1
    public static let tablePage = 256
    public static let maxCellWidth = 60

    let format: Format
    let fields: [String]
    let header: [(String, JSONValue)]
    let write: (String) -> Void
    public private(set) var count = 0
    private var pending: [[String]] = []
    private var widths: [Int]?

    /// - Parameter fields: the column labels (`RowReader.Field.label`), in `RowReader.fields` order.
    /// - Parameter header: leading members of the JSON document (path, entity, model source …).
    public init(format: Format, fields: [String], header: [(String, JSONValue)], write: @escaping (String) -> Void) {
        self.format = format
        self.fields = fields
        self.header = header
        self.write = write
    }

    public func begin() {
        switch format {
        case .json:
            var text = "{\n"
            for (key, value) in header {
                var rendered = ""
                JSONValue.escape(key, into: &rendered)
                text += "  \(rendered): " + ValueRendering.indented(value, by: 2).dropFirst(2) + ",\n"
            }
            write(text + "  \"rows\": [")
        case .csv:
            write((["entity", "pk"] + fields).map(Self.csvField).joined(separator: ",") + "\r\n")
        case .jsonl, .table:
            break
        }
    }

    public static func json(_ row: DecodedRow) -> JSONValue {
        .object([
            ("entity", .string(row.entity)),
            ("pk", Int(exactly: row.pk).map(JSONValue.int) ?? .string(String(row.pk))),
            ("values", .object(row.values.map { ($0.name, ValueRendering.json($0.value)) })),
        ])
    }

    public func add(_ row: DecodedRow) {
        count += 1
        switch format {
        case .json:
            write((count == 1 ? "\n" : ",\n") + ValueRendering.indented(Self.json(row), by: 4))
        case .jsonl:
            write(Self.json(row).rendered(pretty: false) + "\n")
        case .csv:
            var cells = [String](repeating: "", count: fields.count)
            for (index, value) in zip(row.fieldIndexes, row.values) where index < cells.count {
                cells[index] = ValueRendering.cell(value.value)
            }
            write(([row.entity, String(row.pk)] + cells).map(Self.csvField).joined(separator: ",") + "\r\n")
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
                write(line(clean))
            }
        }
    }

    public func end() {
        switch format {
        case .json:
            write((count == 0 ? "],\n" : "\n  ],\n") + "  \"count\": \(count)\n}\n")
        case .table:
            flushTable()
            if count == 0 { write("  (no rows)\n") }
        case .csv, .jsonl:
            break
        }
    }

    private func flushTable() {
        guard widths == nil else { return }
        let head = ["ENTITY", "PK"] + fields.map { Self.clip(TextTable.sanitized($0), to: Self.maxCellWidth) }
        var w = head.map(\.count)
        for row in pending { for (i, cell) in row.enumerated() { w[i] = max(w[i], cell.count) } }
        widths = w
        write(line(head))
        for row in pending { write(line(row)) }
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

    static func csvField(_ s: String) -> String {
        guard s.utf8.contains(where: { $0 == 0x2C || $0 == 0x22 || $0 == 0x0A || $0 == 0x0D }) else { return s }
        return "\"" + s.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}
