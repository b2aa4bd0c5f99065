import Acquisition
import Findings
import Foundation
import Operations
import SQLiteValues
import StoreFormats
import WALForensics

/// The views of `wal`: the WAL and `-shm` report, the `--diff` report and
/// the `--as-of --out` receipt, as text for people and JSON for machines
/// (documented in docs/json-output.md).
public enum WALReport: DocumentView {
    public typealias Subject = [WALAnalysis]

    /// Version of the report's JSON layout; bumped only on incompatible changes (2: the findings
    /// in the shape every command uses, under `findings`, instead of `warnings` and `notes`).
    public static let schemaVersion = 2
    /// Version of `--as-of N --out FILE`'s JSON (unchanged since it was documented).
    public static let writtenImageSchemaVersion = 1

    // MARK: - The WAL report

    public static func json(_ analyses: [WALAnalysis]) -> JSONValue {
        JSONDocument.make(schemaVersion: schemaVersion, [("stores", .array(analyses.map(json(analysis:))))])
    }

    static func json(analysis a: WALAnalysis) -> JSONValue {
        var members: [(String, JSONValue)] = [
            ("path", .string(a.displayPath)),
            ("format", .string(a.isCoreData ? "coredata" : "sqlite")),
            ("pageSize", .optional(a.pageSize)),
            ("headerJournalMode", .optional(a.headerJournalMode)),
            ("mainFileBytes", .int(a.mainFileBytes)),
        ]
        if let w = a.wal {
            members.append(("wal", .object([
                ("present", .bool(true)),
                ("fileBytes", .int(w.fileBytes)),
            ] + Self.walkMembers(w) + [
                ("stopReason", .optional(w.stopReason)),
                ("stopFrame", .optional(w.stopFrame)),
                ("headerProblem", .optional(w.headerProblem)),
                ("checksumByteOrder", .optional(w.bigEndianChecksums.map { $0 ? "big" : "little" })),
                ("uncommittedFrames", .int(w.uncommittedFrames)),
                ("staleFrames", .int(w.staleFrames)),
                ("databaseSizeInPages", .int(w.databaseSizeInPages)),
                ("transactions", .array(a.transactions.map(json(transaction:)))),
                ("uncommitted", a.uncommitted.map { u in
                    .object([("firstFrame", .int(u.firstFrame)), ("frames", .int(u.frames)),
                             ("pages", .array(u.pages.map { .int(Int($0)) }))])
                } ?? .null),
                ("framesAfterStop", .array(a.framesAfterStop.map { run in
                    .object([("firstFrame", .int(run.firstFrame)), ("frames", .int(run.frames)),
                             ("salt1", .string(hex(run.salt1))), ("salt2", .string(hex(run.salt2))),
                             ("commitFrames", .int(run.commitFrames)), ("generation", .string(run.generation))])
                })),
            ])))
        } else {
            members.append(("wal", .object([("present", .bool(false))])))
        }
        if let s = a.shm {
            members.append(("shm", .object([
                ("present", .bool(true)),
                ("mxFrame", .optional(s.mxFrame)),
                ("nBackfill", .optional(s.nBackfill)),
                ("valid", .bool(s.valid)),
                ("agreesWithWal", .bool(s.agreesWithWal)),
                ("readable", .bool(s.readable)),
                ("copiesMatch", s.copiesMatch.map(JSONValue.bool) ?? .null),
                ("checksumValid", s.checksumValid.map(JSONValue.bool) ?? .null),
                ("nPage", .optional(s.nPage)),
                ("pageSize", .optional(s.pageSize)),
                ("salt1", .optional(s.salt1.map(hex))),
                ("salt2", .optional(s.salt2.map(hex))),
                ("iChange", .optional(s.iChange.map { Int($0) })),
                ("isInit", s.isInit.map(JSONValue.bool) ?? .null),
                ("readMarks", .array(s.readMarks.map { .optional($0) })),
            ])))
        } else {
            members.append(("shm", .object([("present", .bool(false))])))
        }
        members.append(("findings", .array(a.findings.map(FindingsReport.json))))
        return .object(members)
    }

    static func json(transaction t: WALAnalysis.Transaction) -> JSONValue {
        .object([
            ("commitFrame", .int(t.commitFrame)),
            ("frames", .int(t.frames)),
            ("pages", .array(t.pages.map { .int(Int($0)) })),
            ("tables", .array(t.tables.map(JSONValue.string))),
            ("number", .int(t.number)),
            ("firstFrame", .int(t.firstFrame)),
            ("databaseSizeInPages", .int(t.databaseSizeInPages)),
            ("entities", .array(t.entities.map(JSONValue.string))),
            ("otherPages", .object(t.otherPages.map { ($0.use, .int($0.count)) })),
        ])
    }

    public static func text(_ analyses: [WALAnalysis]) -> String {
        analyses.map(text(analysis:)).joined(separator: "\n")
    }

    static func text(analysis a: WALAnalysis) -> String {
        var out = "\(TextTable.sanitized(a.displayPath))\n"
        var database = a.pageSize.map { "\($0)-byte pages" } ?? "no page size"
        switch a.headerJournalMode {
        case "wal": database += ", header says WAL mode"
        case "rollback": database += ", header says rollback-journal mode"
        default: database += ", empty main file"
        }
        let pages = a.pageSize.map { a.mainFileBytes / $0 } ?? 0
        database += ", main file \(a.mainFileBytes) bytes (\(pages) pages)"
        out += "  database    \(database)\n"
        if let w = a.wal {
            if let problem = w.headerProblem {
                out += "  wal         \(w.fileBytes) bytes, not used by SQLite: \(TextTable.sanitized(problem))\n"
            } else {
                out += "  wal         \(w.validFrames) of \(w.frames) frames valid, \(plural(w.commits, "commit")), last commit at frame \(w.lastCommitFrame), \(w.fileBytes) bytes\n"
                var second = "salts \(w.salt1.map(hex) ?? "?") \(w.salt2.map(hex) ?? "?"), checkpoint sequence \(w.checkpointSequence.map(String.init) ?? "?")"
                if let big = w.bigEndianChecksums { second += ", \(big ? "big" : "little")-endian checksums" }
                out += "              \(second)\n"
                if w.commits > 0 { out += "              \(w.databaseSizeInPages) pages after the last commit\n" }
                if let reason = w.stopReason { out += "              stopped: \(reason)\n" }
            }
        } else {
            out += "  wal         none\n"
        }
        if let s = a.shm {
            if s.readable {
                var line = "mxFrame \(s.mxFrame ?? 0), nBackfill \(s.nBackfill ?? 0), header \(s.valid ? "intact" : "torn or damaged")"
                line += s.agreesWithWal ? ", agrees with the WAL" : ", does not agree with the WAL"
                out += "  shm         \(line)\n"
            } else {
                out += "  shm         unreadable (shorter than its header)\n"
            }
        } else {
            out += "  shm         none\n"
        }
        if !a.transactions.isEmpty {
            out += "\n"
            var rows: [[String]] = [["COMMIT", "FRAMES", "COUNT", "PAGES", "DB PAGES", "TABLES"]]
            for t in a.transactions {
                var tables = t.tables.map { table -> String in
                    guard let entities = a.entitiesByTable[table], !entities.isEmpty else { return table }
                    return "\(table) (\(entities.joined(separator: ", ")))"
                }
                tables += t.otherPages.map { "[\($0.count) \(otherName($0.use))]" }
                rows.append([String(t.number), t.firstFrame == t.commitFrame ? String(t.commitFrame) : "\(t.firstFrame)-\(t.commitFrame)",
                             String(t.frames), String(t.pages.count), String(t.databaseSizeInPages), tables.joined(separator: ", ")])
            }
            out += TextTable.render(rows, rightAligned: [0, 2, 3, 4], indent: 2)
        }
        if let u = a.uncommitted {
            out += "\n  uncommitted \(frameRange(u.firstFrame, u.frames)) (pages \(ranges(u.pages))): valid frames after the last commit; SQLite ignores them\n"
        }
        if !a.framesAfterStop.isEmpty {
            out += "\n"
            for run in a.framesAfterStop {
                let commits = run.commitFrames == 1 ? "1 commit frame" : "\(run.commitFrames) commit frames"
                out += "  after stop  \(frameRange(run.firstFrame, run.frames)): \(commits), salts \(hex(run.salt1)) \(hex(run.salt2)), \(run.generation) generation\n"
            }
        }
        if !a.findings.isEmpty { out += "\n" }
        for finding in a.findings {
            out += "  \(finding.severity.rawValue.padding(toLength: 7, withPad: " ", startingAt: 0))  [\(finding.id)] \(TextTable.sanitized(finding.message))\n"
            if case .list(let details)? = finding.evidence["details"] {
                for detail in details { out += "             - \(TextTable.sanitized(detail.text))\n" }
            }
        }
        return out
    }

    static func frameRange(_ first: Int, _ count: Int) -> String {
        count == 1 ? "frame \(first)" : "frames \(first)-\(first + count - 1)"
    }

    static func otherName(_ use: String) -> String {
        switch use {
        case "freelist": "free"
        case "pointerMap": "pointer map"
        case "lockByte": "lock byte"
        case "pastEnd": "past the end"
        case "header": "database header only"
        default: "unused"
        }
    }

    // MARK: - --diff

    // The documents themselves are written by `RecordDiffWriter`; these are the parts it shares.

    static func json(group g: WALDiff.Group) -> JSONValue {
        .object([
            ("entity", .optional(g.entity)),
            ("entityNumber", .optional(g.entityNumber)),
            ("table", .string(g.table)),
            ("key", .array(g.keyColumns.map(JSONValue.string))),
            ("inserted", .array(g.inserted.map(json(key:)))),
            ("updated", .array(g.updated.map { row in
                var members: [(String, JSONValue)] = [("key", json(key: row.key)),
                                                      ("changedColumns", .array(row.changedColumns.map(JSONValue.string)))]
                if let attributes = row.changedAttributes {
                    members.append(("changedAttributes", .array(attributes.map(JSONValue.string))))
                }
                return .object(members)
            })),
            ("deleted", .array(g.deleted.map(json(key:)))),
            ("insertedCount", .int(g.insertedCount)),
            ("updatedCount", .int(g.updated.count)),
            ("deletedCount", .int(g.deletedCount)),
            ("unchangedCount", .int(g.unchanged)),
        ])
    }

    /// A single-integer key (Z_PK) as a number; any other key as an array of its values.
    static func json(key: WALDiff.RowKey) -> JSONValue {
        if key.count == 1, case .integer(let value) = key[0] { return .int(Int(value)) }
        return .array(key.map(json(value:)))
    }

    static func json(value: DatabaseValue) -> JSONValue {
        switch value {
        case .null: .null
        case .integer(let v): .int(Int(v))
        case .real(let d): .double(d)
        case .text(let s): .string(s)
        case .blob(let data): .string("x'" + data.map { String(format: "%02x", $0) }.joined() + "'")
        }
    }

    static func stateName(_ commit: Int) -> String {
        commit == 0 ? "the main file alone (commit 0)" : "commit \(commit)"
    }

    static func keyText(_ key: WALDiff.RowKey) -> String {
        if key.count == 1, case .integer(let v) = key[0] { return String(v) }
        return "(" + key.map { value -> String in
            switch value {
            case .null: "NULL"
            case .integer(let v): String(v)
            case .real(let d): String(d)
            case .text(let s): "'" + TextTable.sanitized(String(s.prefix(40))) + "'"
            case .blob(let data): "x'" + data.prefix(16).map { String(format: "%02x", $0) }.joined() + "'"
            }
        }.joined(separator: ", ") + ")"
    }

    /// Keys as text, consecutive integers folded into ranges ("3-7, 12"), at most 100 items.
    static func keyList(_ keys: [WALDiff.RowKey]) -> String {
        let integers = keys.compactMap { key -> Int64? in
            if key.count == 1, case .integer(let v) = key[0] { return v }
            return nil
        }
        if integers.count == keys.count {
            return ranges(integers.sorted().map { UInt32(clamping: $0) }, limit: 100)
        }
        let shown = keys.prefix(100).map(keyText).joined(separator: ", ")
        return keys.count > 100 ? shown + ", … (\(keys.count) in all)" : shown
    }

    /// "1-4, 9, 11-12".
    static func ranges(_ values: [UInt32], limit: Int = 1000) -> String {
        var parts: [String] = []
        var index = 0
        while index < values.count {
            var end = index
            while end + 1 < values.count, values[end + 1] == values[end] &+ 1 { end += 1 }
            parts.append(end == index ? String(values[index]) : "\(values[index])-\(values[end])")
            index = end + 1
        }
        if parts.count > limit { return parts.prefix(limit).joined(separator: ", ") + ", … (\(values.count) in all)" }
        return parts.joined(separator: ", ")
    }

    // MARK: - --as-of --out

    /// One image written by `--as-of N --out FILE`.
    public struct WrittenImage {
        public let path: String
        public let commit: Int
        public let commitFrame: Int?
        public let output: String
        public let bytes: Int
        public let pageSize: Int
        public init(path: String, commit: Int, commitFrame: Int?, output: String, bytes: Int, pageSize: Int) {
            self.path = path; self.commit = commit; self.commitFrame = commitFrame
            self.output = output; self.bytes = bytes; self.pageSize = pageSize
        }

        /// `image`, written to `output`.
        public init(_ image: Storelens.PointInTimeImage, output: String) {
            self.init(path: image.store, commit: image.commit, commitFrame: image.commitFrame, output: output, bytes: image.bytes.count, pageSize: image.pageSize)
        }
    }

    /// `--as-of N --out FILE`'s answer: JSON, or the text lines.
    public static func rendered(written w: WrittenImage, json: Bool) -> String {
        json ? Self.json(written: w).rendered() + "\n" : text(written: w)
    }

    public static func json(written w: WrittenImage) -> JSONValue {
        JSONDocument.make(schemaVersion: writtenImageSchemaVersion, [
            ("stores", .array([.object([
                ("path", .string(w.path)),
                ("asOf", .object([
                    ("commit", .int(w.commit)),
                    ("commitFrame", .optional(w.commitFrame)),
                    ("output", .string(w.output)),
                    ("bytes", .int(w.bytes)),
                    ("pages", .int(w.pageSize > 0 ? w.bytes / w.pageSize : 0)),
                    ("journalMode", .string("delete")),
                ])),
            ])])),
        ])
    }

    public static func text(written w: WrittenImage) -> String {
        let state = w.commit == 0 ? "the main file alone (commit 0)"
            : "commit \(w.commit)" + (w.commitFrame.map { " (frame \($0))" } ?? "")
        return "\(TextTable.sanitized(w.path)) as of \(state)\n  written to \(TextTable.sanitized(RawPath.shown(w.output))): \(w.bytes) bytes, \(w.pageSize > 0 ? w.bytes / w.pageSize : 0) pages, rollback-journal mode (any SQLite tool opens it)\n"
    }

    static func hex(_ value: UInt32) -> String { String(format: "0x%08x", value) }

    /// The walk's facts as `inspect` and `wal` both write them, in this order.
    static func walkMembers(_ w: some WALWalkSummary) -> [(String, JSONValue)] {
        [
            ("frames", .int(w.frames)),
            ("validFrames", .int(w.validFrames)),
            ("commits", .int(w.commits)),
            ("lastCommitFrame", .int(w.lastCommitFrame)),
            ("pageSize", .optional(w.pageSize)),
            ("salt1", .optional(w.salt1.map(hex))),
            ("salt2", .optional(w.salt2.map(hex))),
            ("checkpointSequence", .optional(w.checkpointSequence.map { Int($0) })),
        ]
    }
}
