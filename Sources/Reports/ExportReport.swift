import Acquisition
import Operations
import StoreFormats

/// `storelens export` in text and JSON: the file written, each table with its rows.
public enum ExportReport: PlainView {
    public static let schemaVersion = 1

    public static func json(_ result: Storelens.ExportResult) -> JSONValue {
        JSONDocument.make(schemaVersion: schemaVersion, [
            ("path", .string(result.path)),
            ("output", .string(result.output)),
            ("modelSource", .string(result.modelSource)),
            ("tables", .array(result.summary.tables.map { t in
                .object([("name", .string(t.name)), ("entity", .optional(t.entity)), ("relationship", .optional(t.relationship)), ("rows", .int(t.rows))])
            })),
            ("rows", .int(result.summary.rows)),
        ])
    }

    public static func text(_ result: Storelens.ExportResult) -> String {
        let summary = result.summary
        var text = TextTable.sanitized(result.path) + "\n"
        text += "  exported \(plural(summary.tables.count, "table")), \(plural(summary.rows, "row")) to \(TextTable.sanitized(RawPath.shown(result.output)))\n"
        var rows: [[String]] = [["TABLE", "ENTITY", "ROWS"]]
        for t in summary.tables { rows.append([t.name, t.entity ?? "link: " + (t.relationship ?? "?"), String(t.rows)]) }
        return text + TextTable.render(rows, rightAligned: [2], indent: 2)
    }
}
