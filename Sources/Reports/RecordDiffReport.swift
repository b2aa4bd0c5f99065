import CoreDataStore
import Foundation
import Operations
import StoreFormats
import WALForensics

/// `wal --diff` record by record: every inserted, updated and deleted row with its values (as
/// `rows` prints them), for one diff or, with `--each`, for every commit in turn. Written as each
/// diff arrives, so `--each` holds one commit's changes at a time.
///
/// - `text`: per entity the counts and keys, then one line per record (`+` inserted, `~` updated
///   with old → new, `-` deleted with its last values); history tables are only counted (the
///   transaction line shows them).
/// - `json`: one document (docs/json-output.md, `wal --diff`).
/// - `jsonl`: one flat object per changed property, the csv's columns with JSON values.
/// - `csv`: one line per changed property of each record, formula cells neutralised.
public final class RecordDiffWriter {
    public enum Format: String, Sendable, CaseIterable {
        case text, json, jsonl, csv
    }

    /// Where a diff sits in the WAL: the states compared and, for `--each`, the commit's frames.
    public struct Position: Sendable {
        public let from: Int
        public let to: Int
        /// The commit's first and commit frame (nil for commit 0, or when comparing a range).
        public let firstFrame: Int?
        public let commitFrame: Int?
        public init(from: Int, to: Int, firstFrame: Int? = nil, commitFrame: Int? = nil) {
            self.from = from
            self.to = to
            self.firstFrame = firstFrame
            self.commitFrame = commitFrame
        }
    }

    /// Records shown per entity in text; the rest are counted (every record is in the other formats).
    public static let textRecordLimit = 200
    /// Tables of persistent history, counted rather than listed in text.
    /// Version of `wal --diff`'s JSON layout; bumped only on incompatible changes.
    public static let schemaVersion = 1

    let format: Format
    /// CSV cells exactly as stored (`--raw-csv`): no escapes, no formula neutralised.
    public var rawCSV = false
    let each: Bool
    let write: (String) -> Void
    private var json = JSONStream()
    private var stores = 0
    private var diffsInStore = 0
    public private(set) var records = 0

    /// - Parameter each: the document lists commits (`--each`) rather than one diff per store.
    public init(format: Format, each: Bool, write: @escaping (String) -> Void) {
        self.format = format
        self.each = each
        self.write = write
    }

    /// The writer for `wal --diff` in the format `--format` names (text for any other).
    public convenience init(format name: String, each: Bool, rawCSV: Bool, write: @escaping (String) -> Void) {
        self.init(format: Format(rawValue: name) ?? .text, each: each, write: write)
        self.rawCSV = rawCSV
    }

    public func begin() {
        switch format {
        case .json: write(json.beginObject([JSONDocument.version(Self.schemaVersion)]) + json.beginArray(key: "stores"))
        case .csv: write(Delimited.csv.line(Self.csvHeader, raw: rawCSV))
        case .text, .jsonl: break
        }
    }

    public func beginStore(path: String) {
        stores += 1
        diffsInStore = 0
        switch format {
        case .json where each:
            write(json.beginObject([("path", .string(path))]) + json.beginArray(key: "commits"))
        case .text:
            write((stores == 1 ? "" : "\n") + TextTable.sanitized(path) + "\n")
        case .json, .jsonl, .csv: break
        }
    }

    public func add(path: String, position: Position, diff: RecordDiff) {
        diffsInStore += 1
        records += diff.groups.reduce(0) { $0 + $1.records.count }
        switch format {
        case .json where each:
            write(json.element(Self.json(position: position, diff: diff, changedOnly: true)))
        case .json:
            // One diff per store, in the layout `wal --diff` has always had (records and transactions added).
            guard case .object(let members) = Self.json(position: position, diff: diff) else { return }
            let store = JSONValue.object([("path", .string(path))] + members.filter { !["commit", "firstFrame", "commitFrame"].contains($0.0) })
            write(json.element(store))
        case .jsonl:
            for line in Self.jsonLines(path: path, position: position, diff: diff) { write(JSONLines.line(line)) }
        case .csv:
            for row in csvRows(path: path, position: position, diff: diff) { write(Delimited.csv.line(row, raw: rawCSV)) }
        case .text:
            write(text(position: position, diff: diff))
        }
    }

    /// A whole `wal --diff` document: each store's changes between the two states, in order.
    public func write(_ changes: [Storelens.RecordChanges]) {
        begin()
        for change in changes {
            beginStore(path: change.store)
            add(change)
            endStore()
        }
        end()
    }

    /// A whole `wal --diff --each` document: every commit's changes as `walk` hands them out,
    /// each written as it comes.
    public func write(_ walk: ((Storelens.CommitWalk) throws -> Void) throws -> Void) throws {
        begin()
        try walk { add($0) }
        end()
    }

    /// One step of `wal --diff --each` as the operation hands it out.
    public func add(_ step: Storelens.CommitWalk) {
        switch step {
        case .storeBegins(let store): beginStore(path: store)
        case .commit(let change): add(change)
        case .storeEnds: endStore()
        }
    }

    /// One store's changes between two states, as the operations give them.
    public func add(_ changes: Storelens.RecordChanges) {
        add(path: changes.store, position: Position(from: changes.from, to: changes.to, firstFrame: changes.firstFrame,
                                                    commitFrame: changes.commitFrame), diff: changes.diff)
    }

    public func endStore() {
        if format == .json, each { write(json.end() + json.end()) }
        if format == .text, each, diffsInStore == 0 { write("  no commits in the WAL\n") }
    }

    public func end() {
        if format == .json { write(json.end() + json.end()) }
    }

    // MARK: - JSON

    /// - Parameter changedOnly: leave out groups with no change (`--each`: most entities are untouched by one commit).
    static func json(position: Position, diff: RecordDiff, changedOnly: Bool = false) -> JSONValue {
        var members: [(String, JSONValue)] = [("from", .int(position.from)), ("to", .int(position.to))]
        if position.from + 1 == position.to {
            members.append(("commit", .int(position.to)))
            members.append(("firstFrame", .optional(position.firstFrame)))
            members.append(("commitFrame", .optional(position.commitFrame)))
        }
        members += [
            ("transactions", diff.transactions.map { .array($0.map(HistoryWriter.json)) } ?? .null),
            ("tablesAdded", .array(diff.diff.tablesAdded.map(JSONValue.string))),
            ("tablesRemoved", .array(diff.diff.tablesRemoved.map(JSONValue.string))),
            ("changes", .array(diff.groups.filter { !changedOnly || !$0.group.isUnchanged }.map { entry in
                guard case .object(var group) = WALReport.json(group: entry.group) else { return .null }
                group.append(("records", .array(entry.records.map(json(record:)))))
                return .object(group)
            })),
        ]
        return .object(members)
    }

    /// One record: kind, key, and its values (inserted, deleted) or its changes (updated).
    static func json(record r: RecordChange) -> JSONValue {
        var members: [(String, JSONValue)] = [("change", .string(r.kind.rawValue))]
        members.append(contentsOf: keyMembers(r))
        switch r.kind {
        case .inserted, .deleted:
            members.append(("values", .object(r.values.map { ($0.name, ValueJSON.json($0.value)) })))
        case .updated:
            members.append(("changes", .object(r.changes.map { ($0.name, .object([("old", ValueJSON.json($0.old)),
                                                                                    ("new", ValueJSON.json($0.new))])) })))
            members.append(("changedColumns", .array(r.changedColumns.map(JSONValue.string))))
        }
        return .object(members)
    }

    /// `pk` for a record matched on `Z_PK`, else `key` (the key columns' values).
    static func keyMembers(_ r: RecordChange) -> [(String, JSONValue)] {
        if let pk = r.pk { return [("pk", Int(exactly: pk).map(JSONValue.int) ?? .string(String(pk)))] }
        return [("key", .array(r.key.map(WALReport.json(value:))))]
    }

    /// One flat object per changed property, with the csv's columns (`csvHeader`) and the diff's
    /// history transaction ids: every line has the same keys, so sqlite-utils, pandas and jq load
    /// one table; `old` and `new` keep their JSON types (docs/json-output.md, `wal --diff`).
    static func jsonLines(path: String, position: Position, diff: RecordDiff) -> [JSONValue] {
        let transactionIDs: JSONValue = diff.transactions.map { .array($0.map { Int(exactly: $0.id).map(JSONValue.int) ?? .null }) } ?? .null
        return diff.groups.flatMap { entry in
            entry.records.flatMap { r in
                let key: JSONValue = r.pk.map { Int(exactly: $0).map(JSONValue.int) ?? .string(String($0)) } ?? .string(WALReport.keyText(r.key))
                let lead: [(String, JSONValue)] = [
                    ("path", .string(path)), ("from", .int(position.from)), ("commit", .int(position.to)),
                    ("commitFrame", .optional(position.commitFrame)), ("entity", .optional(r.entity)), ("table", .string(r.table)),
                    ("pk", key), ("change", .string(r.kind.rawValue)),
                ]
                var cells: [(String, JSONValue, JSONValue)] = []
                switch r.kind {
                case .inserted: cells = r.values.map { ($0.name, .null, ValueJSON.json($0.value)) }
                case .deleted: cells = r.values.map { ($0.name, ValueJSON.json($0.value), .null) }
                case .updated: cells = r.changes.map { ($0.name, ValueJSON.json($0.old), ValueJSON.json($0.new)) }
                }
                // A record without properties (an update of Z_OPT alone) still gets its line.
                if cells.isEmpty { cells = [("", .null, .null)] }
                return cells.map { name, old, new in
                    JSONValue.object(lead + [("property", name.isEmpty ? .null : .string(name)), ("old", old), ("new", new),
                                             ("transactions", transactionIDs)])
                }
            }
        }
    }

    // MARK: - CSV

    static let csvHeader = ["path", "from", "commit", "commitFrame", "entity", "table", "pk", "change", "property", "old", "new"]

    func csvRows(path: String, position: Position, diff: RecordDiff) -> [[String]] {
        var rows: [[String]] = []
        for entry in diff.groups {
            for r in entry.records {
                let key = r.pk.map(String.init) ?? WALReport.keyText(r.key)
                let lead = [path, String(position.from), String(position.to), position.commitFrame.map(String.init) ?? "",
                            r.entity ?? "", r.table, key, r.kind.rawValue]
                var cells: [(String, String, String)] = []
                switch r.kind {
                case .inserted: cells = r.values.map { ($0.name, "", ValueRendering.cell($0.value)) }
                case .deleted: cells = r.values.map { ($0.name, ValueRendering.cell($0.value), "") }
                case .updated: cells = r.changes.map { ($0.name, ValueRendering.cell($0.old), ValueRendering.cell($0.new)) }
                }
                if cells.isEmpty { rows.append(lead + ["", "", ""]) }
                for (name, old, new) in cells { rows.append(lead + [name, old, new]) }
            }
        }
        return rows
    }

    // MARK: - Text

    func text(position: Position, diff: RecordDiff) -> String {
        var out = ""
        if each {
            let frames = position.firstFrame.flatMap { first in position.commitFrame.map { first == $0 ? "frame \($0)" : "frames \(first)-\($0)" } }
            out += "\n  commit \(position.to)" + (frames.map { " (\($0))" } ?? "") + "\n"
        } else {
            out += "  changes from \(WALReport.stateName(position.from)) to \(WALReport.stateName(position.to))\n"
        }
        let indent = each ? "    " : "  "
        if let transactions = diff.transactions {
            for t in transactions.prefix(Self.textRecordLimit) { out += indent + Self.text(transaction: t) + "\n" }
            if transactions.count > Self.textRecordLimit {
                out += indent + "… and \(transactions.count - Self.textRecordLimit) more history transactions (see --format json)\n"
            }
            if transactions.isEmpty, each { out += indent + "history  (no transaction recorded in this commit)\n" }
        }
        let d = diff.diff
        if !d.tablesAdded.isEmpty { out += indent + "tables added    " + TextTable.sanitized(d.tablesAdded.joined(separator: ", ")) + "\n" }
        if !d.tablesRemoved.isEmpty { out += indent + "tables removed  " + TextTable.sanitized(d.tablesRemoved.joined(separator: ", ")) + "\n" }
        let changed = diff.groups.filter { !$0.group.isUnchanged }
        if changed.isEmpty { out += (each ? "" : "\n") + indent + "no rows changed\n" }
        var history: [String] = []
        for entry in changed {
            let g = entry.group
            if WALDiff.historyTables.contains(g.table.uppercased()) {
                history.append("\(g.table) " + g.countsText)
                continue
            }
            let name = g.entity.map { "\($0) (\(g.table))" } ?? g.table
            if each {
                out += indent + TextTable.sanitized(name) + ": " + g.countsText + "\n"
            } else {
                // The summary `--diff` has always printed, then the records.
                out += "\n" + indent + TextTable.sanitized(name) + "\n"
                out += indent + "  \(g.insertedCount) inserted, \(g.updated.count) updated, \(g.deletedCount) deleted, \(g.unchanged) unchanged\n"
                let keyName = TextTable.sanitized(g.keyColumns.joined(separator: ", "))
                if !g.inserted.isEmpty { out += indent + "  inserted   \(keyName) \(WALReport.keyList(g.inserted))\n" }
                if !g.deleted.isEmpty { out += indent + "  deleted    \(keyName) \(WALReport.keyList(g.deleted))\n" }
            }
            if g.keyColumns.isEmpty {
                out += indent + "  (no key: rows are compared whole and only counted)\n"
            }
            for r in entry.records.prefix(Self.textRecordLimit) { out += indent + "  " + Self.text(record: r) + "\n" }
            if entry.records.count > Self.textRecordLimit {
                out += indent + "  … and \(entry.records.count - Self.textRecordLimit) more (see --format jsonl)\n"
            }
        }
        if !history.isEmpty { out += (each ? "" : "\n") + indent + "history rows  " + TextTable.sanitized(history.joined(separator: "; ")) + "\n" }
        if !each {
            let unchanged = diff.groups.filter { $0.group.isUnchanged }
            if !unchanged.isEmpty {
                out += "\n  unchanged  " + unchanged.map { TextTable.sanitized($0.group.entity ?? $0.group.table) + " (\($0.group.unchanged))" }
                    .joined(separator: ", ") + "\n"
            }
        }
        return out
    }

    /// - Parameter countingChanges: false when `t` holds only the change that concerns the reader.
    static func text(transaction t: HistoryTransaction, countingChanges: Bool = true) -> String {
        var facts = ["history #\(t.id)", ValueRendering.time(t.timestamp, referenceSeconds: t.referenceSeconds) ?? "(no timestamp)"]
        if let b = t.bundleID { facts.append("bundle \(b)") }
        if let p = t.processName { facts.append("process \(p)") }
        if let a = t.author { facts.append("author \(a)") }
        if let c = t.contextName { facts.append("context \(c)") }
        if countingChanges { facts.append("\(plural(t.changes.count, "change"))") }
        return TextTable.sanitized(facts.joined(separator: "  "))
    }

    /// `+ Item#7  name "Wooden Chest", craftingRecipe CraftingRecipe#3`, `~ … name "a" → "b"`, `- …`.
    static func text(record r: RecordChange) -> String {
        let label: String
        if let entity = r.entity, let pk = r.pk { label = "\(entity)#\(pk)" } else { label = "\(r.table) \(WALReport.keyText(r.key))" }
        let body: String
        switch r.kind {
        case .inserted, .deleted:
            body = r.values.map { "\($0.name) \(ValueRendering.inline($0.value))" }.joined(separator: ", ")
        case .updated:
            body = r.changes.isEmpty
                ? (r.changedColumns == ["Z_OPT"] ? "only Z_OPT, the version counter" : "columns " + r.changedColumns.joined(separator: ", "))
                : r.changes.map { "\($0.name) \(ValueRendering.inline($0.old)) → \(ValueRendering.inline($0.new))" }.joined(separator: ", ")
        }
        let mark = r.kind == .inserted ? "+" : (r.kind == .deleted ? "-" : "~")
        return TextTable.sanitized("\(mark) \(label)  \(body)")
    }
}
