import Acquisition
import CoreDataStore
import Foundation
import Operations
import StoreFormats
import WALForensics

/// `recover`: one entry per record version, written as each arrives (the library streams them).
///
/// - `text`: per store, one line per version: state, `Entity#pk`, the commits it was seen at and
///   what ended it, then its values.
/// - `json`: one document, versions per store (docs/recover.md).
/// - `jsonl`: one flat object per version: provenance as `_…` members, then the values by property.
/// - `csv`: one line per property of each version, formula cells neutralised.
public final class RecoveryWriter {
    public enum Format: String, Sendable, CaseIterable {
        case text, json, jsonl, csv
    }

    public static let schemaVersion = 3

    let format: Format
    /// CSV cells exactly as stored (`--raw-csv`): no escapes, no formula neutralised.
    public var rawCSV = false
    private let blocks: OutputBlocks
    private var json = JSONStream()
    private var stores = 0
    private var inStore = 0
    private var counts: [RecordVersion.State: Int] = [:]
    /// Versions of the store only persistent history holds (confidence `tombstone`).
    private var tombstones = 0
    public private(set) var versions = 0

    /// - Parameter writeBytes: writes UTF-8 bytes; by default they are handed to `write` as a String.
    public init(format: Format, write: @escaping (String) -> Void, writeBytes: (([UInt8]) -> Void)? = nil) {
        self.format = format
        blocks = OutputBlocks(spill: writeBytes ?? { write(String(decoding: $0, as: UTF8.self)) })
    }

    /// - Parameter rawCSV: CSV cells exactly as stored (`--raw-csv`).
    public convenience init(format: Format, rawCSV: Bool, write: @escaping (String) -> Void, writeBytes: (([UInt8]) -> Void)? = nil) {
        self.init(format: format, write: write, writeBytes: writeBytes)
        self.rawCSV = rawCSV
    }

    private func write(_ text: String) {
        blocks.append(text)
    }

    /// Writes what is gathered. `endStore()` and `end()` do; call it also before reporting an
    /// error mid-stream, so the versions read so far come out first.
    public func flush() {
        blocks.flush()
    }

    public func begin() {
        switch format {
        case .json: write(json.beginObject([JSONDocument.version(Self.schemaVersion)]) + json.beginArray(key: "stores"))
        case .csv: write(Delimited.csv.line(Self.csvHeader, raw: rawCSV))
        case .text, .jsonl: break
        }
    }

    /// - Parameter commits: the store's valid WAL commits (0: the main file alone).
    public func beginStore(path: String, commits: Int) {
        stores += 1
        inStore = 0
        counts = [:]
        tombstones = 0
        switch format {
        case .json:
            write(json.beginObject([("path", .string(path)), ("commits", .int(commits))]) + json.beginArray(key: "versions"))
        case .text:
            write((stores == 1 ? "" : "\n") + TextTable.sanitized(path) + "  (main file = commit 0, \(plural(commits, "WAL commit")))\n")
        case .jsonl, .csv: break
        }
    }

    public func add(path: String, _ v: RecordVersion) {
        inStore += 1
        versions += 1
        counts[v.state, default: 0] += 1
        if v.confidence == .tombstone { tombstones += 1 }
        switch format {
        case .json:
            write(json.element(Self.json(v)))
        case .jsonl:
            write(jsonLineText(path: path, v))
        case .csv:
            for row in csvRows(path: path, v) { write(Delimited.csv.line(row, raw: rawCSV)) }
        case .text:
            write("  " + Self.text(v) + "\n")
        }
    }

    /// - Parameter turnedAway: carving candidates each rule turned away (json only: the summary).
    public func endStore(turnedAway: [String: Int] = [:]) {
        switch format {
        case .json:
            let rules = turnedAway.sorted { $0.key < $1.key }.map { ($0.key, JSONValue.int($0.value)) }
            write(json.end() + json.member("turnedAway", .object(rules)) + json.end())
        case .text:
            let parts = RecordVersion.State.allCases.compactMap { s in
                counts[s].map { "\($0) \(s.rawValue)" + (s == .deleted && tombstones > 0 ? " (\(tombstones) of them only in history)" : "") }
            }
            write("  " + (inStore == 0 ? "no record versions" : "\(plural(inStore, "version")): " + parts.joined(separator: ", ")) + "\n")
        case .jsonl, .csv: break
        }
        flush()
    }

    public func end() {
        if format == .json { write(json.end() + json.end()) }
        flush()
    }

    // MARK: - JSON

    static func json(_ v: RecordVersion) -> JSONValue {
        let ending = v.endedBy
        return .object([
            ("entity", .string(v.entity)),
            ("table", .string(v.table)),
            ("pk", pk(v)),
            ("state", .string(v.state.rawValue)),
            ("confidence", .string(v.confidence.rawValue)),
            ("uncertainColumns", .array(v.uncertainColumns.map(JSONValue.string))),
            ("firstCommit", .optional(v.sources.first?.firstCommit)),
            ("lastCommit", .optional(v.sources.last?.lastCommit)),
            ("endedBy", ending.map { json(ending: $0) } ?? .null),
            ("values", .object(v.values.map { ($0.name, ValueJSON.json($0.value)) })),
            ("sources", .array(v.sources.map(json(source:)))),
            ("finds", .array(v.finds.map(json(find:)))),
            // Places past the listed ones (`RecordVersion.findLimit`), counted.
            ("findsOmitted", .int(v.findsOmitted)),
            // Each with the one change that deleted the record (and the values it kept).
            ("historyDeletes", .array(v.historyDeletes.map { HistoryWriter.json($0) })),
        ])
    }

    /// `Z_PK`, or null when the carved bytes lost it.
    static func pk(_ v: RecordVersion) -> JSONValue {
        guard v.pkIsKnown else { return .null }
        return Int(exactly: v.pk).map(JSONValue.int) ?? .string(String(v.pk))
    }

    static func json(find f: RecordVersion.Find) -> JSONValue {
        .object([
            ("file", .string(f.file)),
            ("origin", .string(f.origin.rawValue)),
            ("area", .string(f.area.rawValue)),
            ("page", .int(f.page)),
            ("offset", .int(f.offset)),
            ("fileOffset", .int(f.fileOffset)),
            ("frame", .optional(f.frame)),
            ("confidence", .string(f.confidence.rawValue)),
        ])
    }

    /// One version as a flat object: its provenance under the column names `recover --out` gives
    /// them (`_store`, `_pk`, `_state`, … each starting with `_`), then every value under its
    /// property's name as `rows --format jsonl` keys it (a name starting with `_` gets one more),
    /// so that one entity's lines load into the table `--out` writes for it.
    static func jsonLine(path: String, _ v: RecordVersion) -> JSONValue {
        let first = v.sources.first, ending = v.endedBy, find = v.finds.first
        var members: [(String, JSONValue)] = [
            ("_store", .string(path)),
            ("_entity", .string(v.entity)),
            ("_table", .string(v.table)),
            ("_pk", pk(v)),
            ("_state", .string(v.state.rawValue)),
            ("_confidence", .string(v.confidence.rawValue)),
            // As `--out` stores it: null when every column is proved, else the names, space-separated.
            ("_uncertain_columns", v.uncertainColumns.isEmpty ? .null : .string(v.uncertainColumns.joined(separator: " "))),
            ("_first_commit", .optional(first?.firstCommit)),
            ("_last_commit", .optional(v.sources.last?.lastCommit)),
            ("_source_file", .string(first?.file ?? find?.file ?? (v.historyDeletes.isEmpty ? "" : path))),
            ("_written_by_commit", .optional(first?.writtenBy)),
            ("_first_frame", .optional(first?.firstFrame)),
            ("_commit_frame", .optional(first?.commitFrame)),
            ("_ended_by", v.endingKind.map { .string($0.rawValue) } ?? .null),
            ("_end_commit", .optional(ending?.commit)),
            ("_transactions", .array(v.endingTransactions.map { Int(exactly: $0.id).map(JSONValue.int) ?? .null })),
            ("_sources", .array(v.sources.map(json(source:)))),
            ("_finds", .array(v.finds.map(json(find:)))),
            ("_finds_omitted", .int(v.findsOmitted)),
        ]
        var used = Set(members.map(\.0))
        for value in v.values {
            let key = RowsWriter.flatKey(value.name)
            guard used.insert(key).inserted else { continue }
            members.append((key, ValueJSON.json(value.value)))
        }
        return .object(members)
    }

    /// Escaped file names, which every find and line repeats.
    private var escapedNames: [String: String] = [:]

    private func escaped(_ name: String) -> String {
        if let known = escapedNames[name] { return known }
        var out = ""
        JSONValue.escape(name, into: &out)
        if escapedNames.count < 64 { escapedNames[name] = out }
        return out
    }

    /// `jsonLine(path:_:)` rendered on one line with its newline, written straight into one
    /// string (the tree of every find and source, then its rendering, was most of the time the
    /// JSON Lines output took); the same bytes as `jsonLine(path:v).rendered(pretty: false)`.
    func jsonLineText(path: String, _ v: RecordVersion) -> String {
        var out = ""
        out.reserveCapacity(1024 + 160 * v.finds.count)
        func int(_ i: Int?) { if let i { out += String(i) } else { out += "null" } }
        func string(_ s: String) { JSONValue.escape(s, into: &out) }
        let first = v.sources.first, ending = v.endedBy, find = v.finds.first
        out += "{\"_store\":"; out += escaped(path)
        out += ",\"_entity\":"; string(v.entity)
        out += ",\"_table\":"; string(v.table)
        out += ",\"_pk\":"; Self.pk(v).write(to: &out, pretty: false, indent: 0)
        out += ",\"_state\":"; string(v.state.rawValue)
        out += ",\"_confidence\":"; string(v.confidence.rawValue)
        out += ",\"_uncertain_columns\":"
        if v.uncertainColumns.isEmpty { out += "null" } else { string(v.uncertainColumns.joined(separator: " ")) }
        out += ",\"_first_commit\":"; int(first?.firstCommit)
        out += ",\"_last_commit\":"; int(v.sources.last?.lastCommit)
        out += ",\"_source_file\":"; out += escaped(first?.file ?? find?.file ?? (v.historyDeletes.isEmpty ? "" : path))
        out += ",\"_written_by_commit\":"; int(first?.writtenBy)
        out += ",\"_first_frame\":"; int(first?.firstFrame)
        out += ",\"_commit_frame\":"; int(first?.commitFrame)
        out += ",\"_ended_by\":"
        if let kind = v.endingKind { string(kind.rawValue) } else { out += "null" }
        out += ",\"_end_commit\":"; int(ending?.commit)
        out += ",\"_transactions\":["
        for (i, t) in v.endingTransactions.enumerated() {
            if i > 0 { out += "," }
            int(Int(exactly: t.id))
        }
        out += "],\"_sources\":"
        JSONValue.array(v.sources.map(Self.json(source:))).write(to: &out, pretty: false, indent: 0)
        out += ",\"_finds\":["
        for (i, f) in v.finds.enumerated() {
            if i > 0 { out += "," }
            out += "{\"file\":"; out += escaped(f.file)
            out += ",\"origin\":"; string(f.origin.rawValue)
            out += ",\"area\":"; string(f.area.rawValue)
            out += ",\"page\":"; out += String(f.page)
            out += ",\"offset\":"; out += String(f.offset)
            out += ",\"fileOffset\":"; out += String(f.fileOffset)
            out += ",\"frame\":"; int(f.frame)
            out += ",\"confidence\":"; string(f.confidence.rawValue)
            out += "}"
        }
        out += "],\"_finds_omitted\":"; out += String(v.findsOmitted)
        // No value's key can be a provenance key (`flatKey` doubles a leading `_`): only a value's
        // key used twice is left out (a set of the 18 provenance names was built for every line).
        var used = Set<String>(minimumCapacity: v.values.count)
        for value in v.values {
            let key = RowsWriter.flatKey(value.name)
            guard used.insert(key).inserted else { continue }
            out += ","
            string(key)
            out += ":"
            ValueJSON.json(value.value).write(to: &out, pretty: false, indent: 0)
        }
        out += "}\n"
        return out
    }

    static func json(source s: RecordVersion.Source) -> JSONValue {
        .object([
            ("file", .string(s.file)),
            ("writtenByCommit", .int(s.writtenBy)),
            ("firstFrame", .optional(s.firstFrame)),
            ("commitFrame", .optional(s.commitFrame)),
            ("firstCommit", .int(s.firstCommit)),
            ("lastCommit", .int(s.lastCommit)),
            ("endedBy", s.endedBy.map { json(ending: $0) } ?? .null),
        ])
    }

    /// The change and its history transactions (without their other changes: `history` lists those).
    static func json(ending e: RecordVersion.Ending) -> JSONValue {
        .object([
            ("change", .string(e.kind.rawValue)),
            ("commit", .int(e.commit)),
            ("transactions", .array(e.transactions.map { t in
                guard case .object(let members) = HistoryWriter.json(t) else { return .null }
                return .object(members.filter { $0.0 != "changes" })
            })),
        ])
    }

    // MARK: - CSV

    static let csvHeader = ["path", "entity", "table", "pk", "state", "confidence", "firstCommit", "lastCommit",
                            "sources", "endedBy", "endCommit", "transactions", "finds", "uncertainColumns", "property", "value"]

    func csvRows(path: String, _ v: RecordVersion) -> [[String]] {
        let pk: String = v.pkIsKnown ? String(v.pk) : ""
        let first: String = v.sources.first.map { String($0.firstCommit) } ?? ""
        let last: String = v.sources.last.map { String($0.lastCommit) } ?? ""
        let sources: String = v.sources.map(Self.text(source:)).joined(separator: "; ")
        let ended: String = v.endingKind?.rawValue ?? ""
        let endCommit: String = v.endedBy.map { String($0.commit) } ?? ""
        let transactions: String = v.endingTransactions.map { String($0.id) }.joined(separator: " ")
        let finds: String = v.finds.map(Self.text(find:)).joined(separator: "; ") + (v.findsOmitted > 0 ? "; +\(v.findsOmitted) more" : "")
        let lead: [String] = [path, v.entity, v.table, pk, v.state.rawValue, v.confidence.rawValue, first, last, sources,
                              ended, endCommit, transactions, finds, v.uncertainColumns.joined(separator: " ")]
        if v.values.isEmpty { return [lead + ["", ""]] }
        return v.values.map { value in
            // A text over a megabyte: its summary (size, SHA-256, first characters), as in JSON.
            if case .longText = value.value { return lead + [value.name, ValueJSON.json(value.value).rendered(pretty: false)] }
            return lead + [value.name, ValueRendering.cell(value.value)]
        }
    }

    // MARK: - Text

    /// `deleted     Item#3  commits 0-2 (main file); deleted by commit 3 (history #5 …)  name "Stone", …`
    static func text(_ v: RecordVersion) -> String {
        var line = v.state.rawValue.padding(toLength: max(11, v.state.rawValue.count + 1), withPad: " ", startingAt: 0)
            + (v.pkIsKnown ? "\(v.entity)#\(v.pk)  " : "\(v.entity) (Z_PK unknown)  ")
        line += v.sources.map(text(source:)).joined(separator: "; ")
        if let e = v.endedBy {
            line += "; \(e.kind == .deleted ? "deleted" : "changed") by commit \(e.commit)"
            if !e.transactions.isEmpty { line += " (" + e.transactions.map { RecordDiffWriter.text(transaction: $0) }.joined(separator: "; ") + ")" }
        }
        if !v.finds.isEmpty {
            // One line per version: the first finds, then how many more (json lists them all).
            let shown = v.finds.prefix(3).map(text(find:)).joined(separator: "; ")
            let more = v.finds.count + v.findsOmitted > 3 ? "; +\(v.finds.count + v.findsOmitted - 3) more" : ""
            line += (v.sources.isEmpty ? "found in " : "; also in ") + shown + more
            if v.confidence == .indexOnly {
                // Only what the index holds: every other column is not known.
                line += " [index-only" + (v.uncertainColumns.isEmpty ? "" : "; not in the index: " + v.uncertainColumns.joined(separator: ", ")) + "]"
            } else if v.confidence != .whole { line += " [\(v.confidence.rawValue)" + (v.uncertainColumns.isEmpty ? "" : ": " + v.uncertainColumns.joined(separator: ", ")) + "]" }
            // A whole record whose overflow pages nothing proves still says which columns came from them.
            else if !v.uncertainColumns.isEmpty { line += " [uncertain: " + v.uncertainColumns.joined(separator: ", ") + "]" }
        }
        if !v.historyDeletes.isEmpty {
            // The whole version when only history holds it; else the delete history adds to the bytes.
            let onlyHistory = v.sources.isEmpty && v.finds.isEmpty
            line += (onlyHistory ? (v.values.isEmpty ? "named by the delete in " : "kept by the delete in ") : "; deleted in ")
                + v.historyDeletes.map { RecordDiffWriter.text(transaction: $0, countingChanges: false) }.joined(separator: "; ")
            if onlyHistory, v.values.isEmpty { line += "  (no values kept)" }
        }
        if !v.values.isEmpty { line += "  " + v.values.map { "\($0.name) \(ValueRendering.inline($0.value))" }.joined(separator: ", ") }
        return TextTable.sanitized(line)
    }

    /// `-wal frame 12 page 3 offset 3817 (freeblock, header-rebuilt)`.
    static func text(find f: RecordVersion.Find) -> String {
        let place: String
        switch f.origin {
        case .mainFile: place = "main file"
        case .committedFrame: place = "-wal frame \(f.frame ?? 0)"
        case .uncommittedFrame: place = "-wal frame \(f.frame ?? 0) (uncommitted)"
        case .olderGeneration: place = "-wal frame \(f.frame ?? 0) (older generation)"
        case .journal: place = "-journal record \(f.frame ?? 0)"
        }
        return "\(place) page \(f.page) offset \(f.offset) (\(f.area.rawValue)\(f.confidence == .whole ? "" : ", " + f.confidence.rawValue))"
    }

    /// `commits 2-3 (-wal frames 7-9)` or `commit 0 (main file)`.
    static func text(source s: RecordVersion.Source) -> String {
        let commits = s.firstCommit == s.lastCommit ? "commit \(s.firstCommit)" : "commits \(s.firstCommit)-\(s.lastCommit)"
        let origin: String
        if s.writtenBy == 0 {
            origin = "main file"
        } else if let first = s.firstFrame, let last = s.commitFrame {
            origin = "-wal " + (first == last ? "frame \(first)" : "frames \(first)-\(last)")
        } else {
            origin = "-wal"
        }
        return "\(commits) (\(origin))"
    }

    /// One step of `recover` as the operation hands it out.
    /// Writes the steps `walk` hands out as they come. Begun with the first: a run refused before
    /// it (an unknown `--entity`, a foreign -wal) writes nothing, not the head of a document; what
    /// was read before an error comes out before the error goes on.
    public func write(_ walk: ((Storelens.RecoveryWalk) throws -> Void) throws -> Void) throws {
        var begun = false
        do {
            try walk { step in
                if !begun { begin(); begun = true }
                add(step)
            }
        } catch {
            flush()
            throw error
        }
        if !begun { begin() }
        end()
    }

    public func add(_ step: Storelens.RecoveryWalk) {
        switch step {
        case .storeBegins(let store, let commits): beginStore(path: store, commits: commits)
        case .version(let store, let version): add(path: store, version)
        case .storeEnds(_, let turnedAway): endStore(turnedAway: turnedAway)
        }
    }

    /// `recover --out`'s summary: the file, the versions, the tables, each store's share.
    public static func json(_ written: Storelens.RecoveredFile) -> JSONValue {
        JSONDocument.make(schemaVersion: schemaVersion, [
            ("output", .string(written.output)),
            ("versions", .int(written.versions)),
            ("tables", .array(written.tables.map(JSONValue.string))),
            ("stores", .array(written.stores.map { .object([("path", .string($0.path)), ("versions", .int($0.versions))]) })),
        ])
    }

    public static func text(_ written: Storelens.RecoveredFile) -> String {
        TextTable.sanitized("wrote \(plural(written.versions, "version")) of \(plural(written.stores.count, "store")) to \(RawPath.shown(written.output)): tables \(written.tables.joined(separator: ", "))") + "\n"
    }
}
