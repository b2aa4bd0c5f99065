import CoreDataStore
import Foundation
import Operations
import StoreFormats

/// The views of `inspect`: text for people, JSON for machines (documented in docs/json-output.md).
public enum InspectionReport: DocumentView {
    public typealias Subject = Storelens.InspectResult

    /// Version of the JSON layout; bumped only on incompatible changes.
    public static let schemaVersion = 1

    public static func json(_ inspections: [StoreInspection]) -> JSONValue {
        JSONDocument.make(schemaVersion: schemaVersion, [
            ("stores", .array(inspections.map(json(store:)))),
        ])
    }

    static func json(store s: StoreInspection) -> JSONValue {
        var members: [(String, JSONValue)] = [
            ("path", .string(s.path)),
            ("format", .string(s.format.rawValue)),
            ("stack", .string(s.stack.stack.rawValue)),
            ("stackEvidence", .array(s.stack.evidence.map(JSONValue.string))),
            ("journalMode", .string(s.journalMode)),
            ("pageSize", .int(s.pageSize)),
            ("sizeBytes", .int(s.sizeBytes)),
            ("asOfCommit", .optional(s.asOfCommit)),
        ]
        if let m = s.metadata {
            members.append(("metadata", .object([
                ("uuid", .optional(m.uuid)),
                ("storeType", .optional(m.storeType)),
                ("frameworkVersion", .optional(m.frameworkVersion)),
                ("modelVersionIdentifiers", .array(m.modelVersionIdentifiers.map(JSONValue.string))),
                ("versionHashes", .object(m.versionHashes.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value.base64EncodedString())) })),
                ("versionHashesDigest", .optional(m.versionHashesDigest)),
                ("versionChecksum", .optional(m.versionChecksum)),
                ("maximumFrameworkVersion", .optional(m.maximumFrameworkVersion)),
                ("versionHashesVersion", .optional(m.versionHashesVersion)),
                ("autoVacuumLevel", .optional(m.autoVacuumLevel)),
                // Every key of Z_PLIST under its own name, including those the app wrote itself.
                ("plist", m.plist.dictionaryValue.map { dict in
                    .object(dict.sorted { $0.key < $1.key }.map { ($0.key, ValueJSON.json($0.value)) })
                } ?? .null),
            ])))
        } else {
            members.append(("metadata", .null))
        }
        members.append(("entities", .array(s.entities.map { e in
            .object([
                ("name", .string(e.entity.name)),
                ("number", .int(e.entity.number)),
                ("kind", .string(e.entity.kind.rawValue)),
                ("parent", .optional(e.entity.parentName)),
                ("table", .optional(e.entity.tableExists ? e.entity.table : nil)),
                ("rows", .int(e.counts.rows)),
                ("rowsIncludingSubentities", .int(e.counts.rowsIncludingSubentities)),
                ("rowsMainFileOnly", .optional(e.counts.rowsMainFileOnly)),
                ("maxPK", .optional(e.counts.maxPK)),
                ("zMax", .optional(e.entity.zMax)),
            ])
        })))
        if s.format == .sqlite {
            members.append(("tables", .array(s.tables.map {
                .object([("name", .string($0.name)), ("rows", $0.unreadable == nil ? .int($0.rows) : .null),
                         ("rowsMainFileOnly", .optional($0.rowsMainFileOnly)), ("unreadable", .optional($0.unreadable))])
            })))
        }
        let w = s.wal
        members.append(("wal", .object([("present", .bool(w.present))] + WALReport.walkMembers(w) + [("stopReason", .optional(w.stopReason))])))
        let h = s.history
        members.append(("history", .object([
            ("present", .bool(h?.present ?? false)),
            ("transactions", .int(h?.transactions ?? 0)),
            ("changes", .int(h?.changes ?? 0)),
        ])))
        members.append(("cloudKitTables", .array(s.cloudKitTables.map(JSONValue.string))))
        if let x = s.externalData { members.append(("externalData", json(x))) }
        members.append(("notes", .array(s.notes.map(JSONValue.string))))
        return .object(members)
    }


    static func json(_ x: ExternalDataCensus) -> JSONValue {
        .object([
            ("folder", .string(x.folder)), ("folderKind", .string(x.folderKind.name)),
            ("files", .int(x.files)), ("bytes", .int(x.bytes)), ("otherEntries", .int(x.otherEntries)),
            ("attributes", .array(x.attributes.map(JSONValue.string))),
            ("references", .int(x.references)), ("missingReferences", .int(x.missingReferences)),
            ("inlineValues", .int(x.inlineValues)), ("unreferencedFiles", .int(x.unreferencedFiles)),
            ("note", .optional(x.note)),
        ])
    }

    /// One line: what came in `_EXTERNAL_DATA` and what the values name (not sanitised).
    static func line(_ x: ExternalDataCensus) -> String {
        var line = x.folderKind == .missing ? "no \(x.folder)" : "files \(x.files) (\(x.bytes) bytes) in \(x.folder)"
        if x.otherEntries > 0 { line += ", other entries \(x.otherEntries) (not read)" }
        line += "; references \(x.references)"
        if x.missingReferences > 0 { line += " (\(x.missingReferences) missing their file)" }
        line += ", inline \(x.inlineValues)"
        if x.unreferencedFiles > 0 { line += ", unreferenced files \(x.unreferencedFiles)" }
        if let note = x.note { line += "; " + note }
        return line
    }

    /// The text view: a header block, the entity table, WAL and history lines, then notes.
    public static func text(_ inspections: [StoreInspection]) -> String {
        inspections.map(text(store:)).joined(separator: "\n")
    }

    /// A metadata value on one line: numbers and strings as they are, data by size, collections briefly.
    static func metadataText(_ value: PlistValue) -> String {
        switch value {
        case .string(let v): return "\"\(v)\""
        case .integer(let v): return String(v)
        case .unsignedInteger(let v): return String(v)
        case .real(let v): return String(v)
        case .bool(let v): return v ? "true" : "false"
        case .date(let v): return DisplayZone.current.iso8601(referenceSeconds: v)
        case .data(let d): return "<\(d.count) bytes>"
        case .uid(let u): return "<UID \(u)>"
        case .array(let items): return "[" + items.prefix(8).map(metadataText).joined(separator: ", ") + (items.count > 8 ? ", …" : "") + "]"
        case .dictionary(let d): return "{\(plural(d.count, "key")): " + d.keys.sorted().prefix(8).joined(separator: ", ") + (d.count > 8 ? ", …" : "") + "}"
        }
    }

    static func text(store s: StoreInspection) -> String {
        var out = "\(TextTable.sanitized(s.path))\(s.asOfCommit.map { " (as of WAL commit \($0))" } ?? "")\n"
        let formatName = s.format == .coreData ? "Core Data store" : "SQLite database (not Core Data)"
        out += "  format      \(formatName), \(s.journalMode) journal, \(s.pageSize)-byte pages, \(s.sizeBytes) bytes\n"
        if s.format == .coreData {
            let stackName = ["swiftdata": "SwiftData", "coredata": "Core Data (Xcode model)", "unknown": "undetermined"][s.stack.stack.rawValue] ?? ""
            out += "  written by  \(stackName) (most likely)\n"
            for line in s.stack.evidence { out += "              - \(line)\n" }
        }
        if let m = s.metadata {
            out += "  store UUID  \(m.uuid ?? "(none)")\n"
            out += "  framework   \(m.frameworkVersion.map(String.init) ?? "?")"
            out += ", model version identifiers \(m.modelVersionIdentifiers.map { "\"\($0)\"" }.joined(separator: ", "))\n"
            // Every Z_METADATA key, the app's own (sync tokens, schema revisions) included.
            let entries = (m.plist.dictionaryValue ?? [:]).sorted { $0.key < $1.key }
            for (i, entry) in entries.prefix(200).enumerated() {
                out += (i == 0 ? "  metadata    " : "              ") + TextTable.sanitized(entry.key) + " = "
                    + TextTable.sanitized(String(metadataText(entry.value).prefix(160))) + "\n"
            }
            if entries.count > 200 { out += "              … \(entries.count - 200) more keys (see --format json)\n" }
        }
        if !s.entities.isEmpty {
            out += "\n"
            var table: [[String]] = [["Z_ENT", "ENTITY", "PARENT", "TABLE", "ROWS", "+SUB", "MAIN FILE", "MAX PK", "Z_MAX"]]
            for e in s.entities {
                table.append([String(e.entity.number), e.entity.name, e.entity.parentName ?? "-",
                              e.entity.tableExists ? e.entity.table : "(missing)",
                              String(e.counts.rows), String(e.counts.rowsIncludingSubentities),
                              e.counts.rowsMainFileOnly.map(String.init) ?? "-",
                              e.counts.maxPK.map(String.init) ?? "-", e.entity.zMax.map(String.init) ?? "-"])
            }
            out += TextTable.render(table, rightAligned: [0, 4, 5, 6, 7, 8], indent: 2)
        }
        if !s.tables.isEmpty {
            out += "\n"
            var table: [[String]] = [["TABLE", "ROWS", "MAIN FILE"]]
            for t in s.tables {
                table.append([t.name, t.unreadable == nil ? String(t.rows) : "unreadable", t.rowsMainFileOnly.map(String.init) ?? "-"])
            }
            out += TextTable.render(table, rightAligned: [1, 2], indent: 2)
        }
        out += "\n"
        let w = s.wal
        if w.present {
            out += "  wal         \(w.validFrames) of \(w.frames) frames valid, \(w.commits) commits, last commit at frame \(w.lastCommitFrame)"
            if let s1 = w.salt1, let s2 = w.salt2 { out += ", salts \(WALReport.hex(s1)) \(WALReport.hex(s2))" }
            out += "\n"
            if let reason = w.stopReason { out += "              stopped: \(reason)\n" }
        } else {
            out += "  wal         none\n"
        }
        if let h = s.history, h.present {
            out += "  history     \(h.transactions) transactions, \(h.changes) changes\n"
        } else if s.format == .coreData {
            out += "  history     not tracked\n"
        }
        if !s.cloudKitTables.isEmpty { out += "  cloudkit    \(s.cloudKitTables.count) mirroring tables\n" }
        if let x = s.externalData { out += "  external    " + TextTable.sanitized(line(x)) + "\n" }
        for note in s.notes { out += "  note        \(note)\n" }
        return out
    }
}

/// Plain aligned columns for terminal output.
public enum TextTable {
    public static func render(_ rows: [[String]], rightAligned: Set<Int> = [], indent: Int = 0) -> String {
        guard let width = rows.map(\.count).max() else { return "" }
        var widths = [Int](repeating: 0, count: width)
        let rows = rows.map { $0.map(sanitized) }
        for row in rows { for (i, cell) in row.enumerated() { widths[i] = max(widths[i], displayWidth(cell)) } }
        var out = ""
        for row in rows {
            var line = String(repeating: " ", count: indent)
            for (i, cell) in row.enumerated() {
                let pad = String(repeating: " ", count: widths[i] - displayWidth(cell))
                line += rightAligned.contains(i) ? pad + cell : cell + pad
                if i < row.count - 1 { line += "  " }
            }
            while line.hasSuffix(" ") { line.removeLast() }
            out += line + "\n"
        }
        return out
    }

    /// Cells come from a device: control characters are shown escaped, never sent to the terminal.
    /// So are the invisible characters that reorder or hide what a reader sees: the bidi
    /// embeddings, overrides and isolates (U+202A–U+202E, U+2066–U+2069, the marks U+200E/F and
    /// U+061C), line and paragraph separators (U+2028/9) and C1 controls (U+0080–U+009F, which a
    /// terminal may take as escape sequences).
    public static func sanitized(_ s: String) -> String {
        HostileText.sanitized(s)
    }

    static func displayWidth(_ s: String) -> Int { s.count }
}
