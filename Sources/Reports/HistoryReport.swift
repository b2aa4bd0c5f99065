import CoreDataStore
import Foundation
import Operations
import SQLiteValues
import StoreFormats

/// The views of `storelens history`: transactions streamed one at a time, or the per-entity
/// writer summary.
///
/// - `text`, `json` (one document, docs/json-output.md).
/// - `jsonl`, `csv`: one flat record per change, its transaction's columns repeated on each
///   (`flatColumns`), so that sqlite-utils, pandas and spreadsheets load one table of changes
///   (docs/history.md).
public final class HistoryWriter {
    public static let schemaVersion = 1

    public enum Format: String, Sendable, CaseIterable {
        case text, json, jsonl, csv
    }

    let format: Format
    let header: [(String, JSONValue)]
    let path: String
    let write: (String) -> Void
    private var stream = JSONStream()
    /// CSV cells exactly as stored (`--raw-csv`): no escapes, no formula neutralised.
    public var rawCSV = false
    public private(set) var transactions = 0
    public private(set) var changes = 0

    /// The members every history document starts with: the store, its model's source, the filters.
    public static func header(_ history: Storelens.StoreHistory) -> [(String, JSONValue)] {
        let o = history.options
        return [
            JSONDocument.version(schemaVersion),
            ("path", .string(history.path)),
            ("modelSource", .string(history.modelSource.rawValue)),
            ("filters", .object([("entity", .optional(history.entity)), ("author", .optional(o.author)), ("bundleID", .optional(o.bundleID)),
                                 ("since", .optional(o.since.map { ValueDecoder.iso8601(referenceSeconds: $0) }))])),
        ]
    }

    /// The text view's first lines: the store and where its model came from.
    public static func title(_ history: Storelens.StoreHistory) -> String {
        TextTable.sanitized(history.path) + "\n"
            + "  model  \(history.modelSource.rawValue)" + (history.modelSource == .inferred ? " (INFERRED from the SQL schema; update masks may not decode)" : "") + "\n"
    }

    public convenience init(json: Bool, header: [(String, JSONValue)], write: @escaping (String) -> Void) {
        self.init(format: json ? .json : .text, header: header, path: "", write: write)
    }

    /// - Parameter path: the store as the flat records name it (their `path` column).
    public init(format: Format, header: [(String, JSONValue)], path: String, write: @escaping (String) -> Void) {
        self.format = format
        self.header = header
        self.path = path
        self.write = write
    }

    var json: Bool { format == .json }

    /// The writer of `history`'s transactions as `format` shows them, begun (the title or the
    /// document's head written).
    public static func begun(_ history: Storelens.StoreHistory, format: Format, rawCSV: Bool, write: @escaping (String) -> Void) -> HistoryWriter {
        let writer = HistoryWriter(format: format, header: header(history), path: history.path, write: write)
        writer.rawCSV = rawCSV
        writer.begin(title: title(history))
        return writer
    }

    public func begin(title: String) {
        if format == .csv {
            write(Delimited.csv.line(Self.flatColumns, raw: rawCSV))
            return
        }
        if format == .jsonl { return }
        if json {
            write(stream.beginObject(header) + stream.beginArray(key: "transactions"))
        } else {
            write(title)
        }
    }

    public static func json(_ t: HistoryTransaction) -> JSONValue {
        .object([
            ("id", Int(exactly: t.id).map(JSONValue.int) ?? .string(String(t.id))),
            ("timestamp", .optional(t.timestamp)),
            ("author", .optional(t.author)),
            ("bundleID", .optional(t.bundleID)),
            ("processName", .optional(t.processName)),
            ("contextName", .optional(t.contextName)),
            ("changes", .array(t.changes.map(json(change:)))),
        ])
    }

    static func json(change c: HistoryChange) -> JSONValue {
        var members: [(String, JSONValue)] = [
            ("type", .string(c.type.name)),
            ("entity", .string(c.entity)),
            ("pk", c.pk.flatMap { Int(exactly: $0) }.map(JSONValue.int) ?? .null),
            ("updatedProperties", c.updatedProperties.map { .array($0.map(JSONValue.string)) } ?? .null),
        ]
        if let hex = c.columnsHex { members.append(("columns", .string(hex))) }
        if let note = c.columnsNote { members.append(("columnsNote", .string(note))) }
        if !c.tombstone.isEmpty {
            let stored: [(String, JSONValue)] = c.tombstone.map { ($0.name, Self.json(stored: $0.value)) }
            let decoded: [(String, JSONValue)] = c.tombstoneValues.map { ($0.name, ValueJSON.json($0.value)) }
            members.append(("tombstone", .object(stored)))
            members.append(("tombstoneValues", .object(decoded)))
        }
        return .object(members)
    }

    /// A tombstone value as stored (its attribute's type is not applied: the column is untyped).
    static func json(stored value: DatabaseValue) -> JSONValue {
        switch value {
        case .null: return .null
        case .integer(let i): return Int(exactly: i).map(JSONValue.int) ?? .string(String(i))
        case .real(let d): return .double(d)
        case .text(let s): return .string(String(s.prefix(4096)))
        case .blob(let b): return .object([("size", .int(b.count)), ("hex", .string(ValueDecoder.hex(b.prefix(64))))])
        }
    }

    /// The columns of a flat record, in order.
    public static let flatColumns = ["path", "transaction", "timestamp", "author", "bundleID", "processName", "contextName",
                                     "change", "entity", "pk", "updatedProperties", "columns", "columnsNote", "tombstone"]

    /// One flat record per change (one with the change columns null for a transaction without
    /// changes, so that no transaction is lost): values as JSON, as `jsonl` writes them.
    public static func flatRecords(path: String, _ t: HistoryTransaction) -> [[JSONValue]] {
        let lead: [JSONValue] = [.string(path), Int(exactly: t.id).map(JSONValue.int) ?? .string(String(t.id)), .optional(t.timestamp),
                                 .optional(t.author), .optional(t.bundleID), .optional(t.processName), .optional(t.contextName)]
        if t.changes.isEmpty { return [lead + Array(repeating: JSONValue.null, count: 7)] }
        return t.changes.map { c in
            lead + [.string(c.type.name), .string(c.entity), c.pk.flatMap { Int(exactly: $0) }.map(JSONValue.int) ?? .null,
                    c.updatedProperties.map { .array($0.map(JSONValue.string)) } ?? .null,
                    .optional(c.columnsHex), .optional(c.columnsNote),
                    c.tombstoneValues.isEmpty ? .null : .object(c.tombstoneValues.map { ($0.name, ValueJSON.json($0.value)) })]
        }
    }

    /// A flat value as one CSV cell: text as it is, null empty, arrays and objects as the JSON
    /// text sqlite-utils stores for them from `jsonl`, so both formats load to the same table.
    static func cell(_ value: JSONValue) -> String {
        switch value {
        case .null: return ""
        case .string(let s): return s
        default: return value.rendered(pretty: false)
        }
    }

    public func add(_ t: HistoryTransaction) {
        transactions += 1
        changes += t.changes.count
        if format == .jsonl || format == .csv {
            var out = ""
            for var record in Self.flatRecords(path: path, t) {
                if format == .jsonl {
                    out += JSONLines.line(keys: Self.flatColumns, values: record)
                } else {
                    // For people: the time in the --tz zone; JSON Lines keep UTC.
                    if let shown = ValueRendering.time(t.timestamp, referenceSeconds: t.referenceSeconds) { record[2] = .string(shown) }
                    out += Delimited.csv.line(record.map(Self.cell), raw: rawCSV)
                }
            }
            write(out)
            return
        }
        if json {
            write(stream.element(Self.json(t)))
            return
        }
        var facts: [String] = []
        if let b = t.bundleID { facts.append("bundle \(b)") }
        if let p = t.processName { facts.append("process \(p)") }
        if let a = t.author { facts.append("author \(a)") }
        if let c = t.contextName { facts.append("context \(c)") }
        var out = "  #\(t.id)  \(ValueRendering.time(t.timestamp, referenceSeconds: t.referenceSeconds) ?? "(no timestamp)")  " + (facts.isEmpty ? "(no writer recorded)" : facts.joined(separator: "  "))
        out = TextTable.sanitized(out) + "\n"
        if t.changes.isEmpty { out += "      (no changes: a migration or history-only transaction)\n" }
        for c in t.changes {
            var line = "      \(c.type.name.padding(toLength: 6, withPad: " ", startingAt: 0))  \(c.entity)#\(c.pk.map(String.init) ?? "?")"
            if let updated = c.updatedProperties { line += "  {" + updated.joined(separator: ", ") + "}" }
            if let note = c.columnsNote { line += "  [\(note)\(c.columnsHex.map { "; ZCOLUMNS \($0)" } ?? "")]" }
            if !c.tombstoneValues.isEmpty {
                // Decoded by the preserved attribute's type, as `rows` shows values.
                line += "  kept " + c.tombstoneValues.map { "\($0.name)=\(ValueRendering.inline($0.value))" }.joined(separator: ", ")
            }
            out += TextTable.sanitized(line) + "\n"
        }
        write(out)
    }

    public func end() {
        if format == .jsonl || format == .csv { return }
        if json {
            write(stream.end() + stream.member("count", .int(transactions)) + stream.end())
        } else {
            write(transactions == 0 ? "  (no transactions match)\n" : "  \(plural(transactions, "transaction")), \(plural(changes, "change"))\n")
        }
    }
}

/// `history --summary`: per entity, who inserted, updated and deleted it, and when.
public enum HistorySummaryReport {
    static func iso(_ seconds: Double?) -> String? { seconds.map { ValueDecoder.iso8601(referenceSeconds: $0) } }
    /// For people: in the `--tz` zone.
    static func local(_ seconds: Double?) -> String? { seconds.map { DisplayZone.current.iso8601(referenceSeconds: $0) } }

    public static func json(_ summary: [HistoryEntitySummary], header: [(String, JSONValue)]) -> JSONValue {
        .object(header + [
            ("entities", .array(summary.map { e in
                .object([
                    ("entity", .string(e.entity)),
                    ("number", .int(e.entityNumber)),
                    ("writers", .array(e.writers.map { w in
                        .object([
                            ("bundleID", .optional(w.bundleID)),
                            ("processName", .optional(w.processName)),
                            ("author", .optional(w.author)),
                            ("contextName", .optional(w.contextName)),
                            ("inserts", .int(w.inserts)),
                            ("updates", .int(w.updates)),
                            ("deletes", .int(w.deletes)),
                            ("other", .int(w.other)),
                            ("transactionsWithoutChanges", .int(w.transactionsWithoutChanges)),
                            ("first", .optional(iso(w.firstSeconds))),
                            ("last", .optional(iso(w.lastSeconds))),
                        ])
                    })),
                ])
            })),
        ])
    }

    /// `history --summary` of `history`: JSON, or the text table.
    public static func rendered(_ summary: [HistoryEntitySummary], of history: Storelens.StoreHistory, json: Bool) -> String {
        json ? Self.json(summary, header: HistoryWriter.header(history)).rendered() + "\n" : text(summary, title: HistoryWriter.title(history))
    }

    public static func text(_ summary: [HistoryEntitySummary], title: String) -> String {
        var out = title
        guard !summary.isEmpty else { return out + "  (no changes recorded)\n" }
        var rows: [[String]] = [["ENTITY", "BUNDLE", "PROCESS", "AUTHOR", "CONTEXT", "INSERTS", "UPDATES", "DELETES", "FIRST", "LAST"]]
        for e in summary {
            for (i, w) in e.writers.enumerated() {
                let label = e.entity == HistoryEntitySummary.noChangesName
                    ? "(\(plural(w.transactionsWithoutChanges, "transaction")) without changes)"
                    : (i == 0 ? e.entity : "")
                rows.append([label, w.bundleID ?? "-", w.processName ?? "-", w.author ?? "-", w.contextName ?? "-",
                             String(w.inserts), String(w.updates), String(w.deletes),
                             local(w.firstSeconds) ?? "-", local(w.lastSeconds) ?? "-"])
            }
        }
        out += TextTable.render(rows, rightAligned: [5, 6, 7], indent: 2)
        return out
    }
}
