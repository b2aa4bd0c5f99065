import CoreDataStore
import Foundation
import Operations
import StoreFormats
import WALForensics

/// `timeline --format csv|jsonl`: the columns Timesketch imports (`datetime`, `timestamp`,
/// `timestamp_desc`, `message`) then the source columns.
public enum TimelineWriter {
    public enum Format: String, Sendable, CaseIterable {
        case csv, jsonl
    }

    public static let columns = ["datetime", "timestamp", "timestamp_desc", "message", "source", "store", "entity", "pk", "attribute",
                                 "transaction", "commit", "bundleID", "processName", "author", "contextName"]

    /// Microseconds since 1970-01-01 UTC (Timesketch's `timestamp`), nil when it does not fit.
    static func microseconds(_ referenceSeconds: Double) -> Int? {
        let unix = (referenceSeconds + ValueDecoder.referenceDateOffset) * 1_000_000
        guard unix.isFinite, abs(unix) < 9e18 else { return nil }
        return Int(unix.rounded())
    }

    /// One event's values: JSON (dates ISO 8601 UTC).
    static func values(store: String, _ e: TimelineEvent) -> [JSONValue] {
        let int64 = { (v: Int64?) -> JSONValue in v.map { Int(exactly: $0).map(JSONValue.int) ?? .string(String($0)) } ?? .null }
        return [.string(ValueDecoder.iso8601(referenceSeconds: e.referenceSeconds)), .optional(microseconds(e.referenceSeconds)),
                .string(e.description), .string(e.message), .string(e.source.rawValue), .string(store), .optional(e.entity), int64(e.pk),
                .optional(e.attribute), int64(e.transaction), .optional(e.commit), .optional(e.bundleID), .optional(e.processName),
                .optional(e.author), .optional(e.contextName)]
    }

    public static func header(_ format: Format, rawCSV: Bool = false) -> String {
        format == .csv ? Delimited.csv.line(columns, raw: rawCSV) : ""
    }

    /// The lines for `events`: jsonl keeps UTC; csv shows `datetime` in the `--tz` zone (with its offset).
    public static func lines(_ format: Format, store: String, _ events: [TimelineEvent], rawCSV: Bool = false) -> String {
        var out = ""
        for e in events {
            var record = values(store: store, e)
            switch format {
            case .jsonl:
                out += JSONLines.line(keys: columns, values: record)
            case .csv:
                record[0] = .string(DisplayZone.current.iso8601(referenceSeconds: e.referenceSeconds))
                out += Delimited.csv.line(record.map(HistoryWriter.cell), raw: rawCSV)
            }
        }
        return out
    }
}
