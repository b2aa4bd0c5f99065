import Foundation
import SQLiteAccess

/// Persistent history as a timeline: transactions per writer, counted in equal time buckets
/// between the first and the last transaction. Computed by one grouped query, so a store with
/// 100,000 transactions costs what one with ten does (for `report`'s chart).
public struct HistoryTimeline: Sendable {
    public struct Writer: Sendable {
        public let bundleID: String?
        public let processName: String?
        public let author: String?
        public let contextName: String?
        public internal(set) var transactions: Int
        /// Transactions per bucket; `buckets.count == HistoryTimeline.bucketCount`.
        public internal(set) var buckets: [Int]
        /// Transactions without a timestamp (not in any bucket).
        public internal(set) var undated: Int
        /// For the summed lane: how many writers it holds (0 for a real writer).
        public internal(set) var combined: Int = 0

        /// "com.example.todo · Todo · author legacy · context WidgetContext", or "unknown writer".
        public var label: String {
            if combined > 0 { return "\(combined) other writers" }
            var parts: [String] = []
            if let bundleID { parts.append(bundleID) }
            if let processName, processName != bundleID { parts.append(processName) }
            if let author { parts.append("author \(author)") }
            if let contextName { parts.append("context \(contextName)") }
            return parts.isEmpty ? "unknown writer" : parts.joined(separator: " · ")
        }
    }

    public let transactions: Int
    /// Seconds since 2001-01-01 of the first and last transaction (nil without timestamps).
    public let firstSeconds: Double?
    public let lastSeconds: Double?
    public let bucketCount: Int
    /// The width of one bucket in seconds (at least one second).
    public let bucketSeconds: Double
    /// Writers by transactions, most first; past `maxWriters`, the rest are summed into one
    /// writer labelled "other writers" (`otherWriters` says how many).
    public let writers: [Writer]
    public let otherWriters: Int
}

extension HistoryReader {
    /// The timeline of transactions per writer, in `buckets` equal slices of the history's span.
    public func timeline(buckets: Int = 60, maxWriters: Int = 12) throws -> HistoryTimeline {
        let buckets = max(1, buckets)
        let hasTimestamp = transactionColumns.contains("ZTIMESTAMP")
        let span = try connection.rows(hasTimestamp ? "SELECT count(*), min(ZTIMESTAMP), max(ZTIMESTAMP) FROM ATRANSACTION"
                                                    : "SELECT count(*), NULL, NULL FROM ATRANSACTION").first
        let total = span?[0].int ?? 0
        let first = span?[1].double
        let last = span?[2].double
        let width = max(1, ((last ?? 0) - (first ?? 0)) / Double(buckets))
        let bucketExpression = hasTimestamp && first != nil
            ? "CASE WHEN t.ZTIMESTAMP IS NULL THEN -1 ELSE min(\(buckets - 1), max(0, CAST((t.ZTIMESTAMP - ?) / ? AS INTEGER))) END"
            : "-1"
        let arguments: [DatabaseValue] = hasTimestamp && first != nil ? [.real(first ?? 0), .real(width)] : []
        let sql = """
            SELECT \(writerExpression("BUNDLEID", alias: "sb")), \(writerExpression("PROCESSID", alias: "sp")), \
            \(writerExpression("AUTHOR", alias: "sa")), \(writerExpression("CONTEXTNAME", alias: "sc")), \
            \(bucketExpression), count(*)
            FROM ATRANSACTION t\(joins) GROUP BY 1, 2, 3, 4, 5
            """
        var writers: [HistoryTimeline.Writer] = []
        var index: [String: Int] = [:]
        for row in try connection.rows(sql, arguments) {
            let key = [row[0].string, row[1].string, row[2].string, row[3].string].map { $0 ?? "\u{0}" }.joined(separator: "\u{1}")
            let i: Int
            if let known = index[key] {
                i = known
            } else {
                writers.append(.init(bundleID: row[0].string, processName: row[1].string, author: row[2].string, contextName: row[3].string,
                                     transactions: 0, buckets: Array(repeating: 0, count: buckets), undated: 0))
                i = writers.count - 1
                index[key] = i
            }
            let count = row[5].int ?? 0
            writers[i].transactions += count
            if let b = row[4].int, b >= 0, b < buckets { writers[i].buckets[b] += count } else { writers[i].undated += count }
        }
        writers.sort { ($0.transactions, $1.label) > ($1.transactions, $0.label) }
        var other = 0
        if writers.count > maxWriters {
            let rest = writers[(maxWriters - 1)...]
            other = rest.count
            var sum = HistoryTimeline.Writer(bundleID: nil, processName: nil, author: nil, contextName: nil,
                                             transactions: 0, buckets: Array(repeating: 0, count: buckets), undated: 0,
                                             combined: rest.count)
            for w in rest {
                sum.transactions += w.transactions
                sum.undated += w.undated
                for b in 0..<buckets { sum.buckets[b] += w.buckets[b] }
            }
            writers = Array(writers.prefix(maxWriters - 1)) + [sum]
        }
        return HistoryTimeline(transactions: total, firstSeconds: first, lastSeconds: last, bucketCount: buckets,
                               bucketSeconds: width, writers: writers, otherWriters: other)
    }
}
