import CoreDataStore
import Foundation
import SQLiteAccess
import StoreFormats
import WALForensics

/// One dated event of `storelens timeline`: a history transaction, a WAL commit (dated by the
/// history transactions it wrote) or a dated attribute of a record.
public struct TimelineEvent: Sendable {
    public enum Source: String, Sendable {
        case history, wal, attribute
    }

    /// Seconds since 2001-01-01 UTC.
    public let referenceSeconds: Double
    /// What the time means, in Timesketch's `timestamp_desc` sense ("History transaction",
    /// "WAL commit", "TodoItem.createdAt").
    public let description: String
    public let message: String
    public let source: Source
    public var entity: String?
    public var pk: Int64?
    public var attribute: String?
    public var transaction: Int64?
    public var commit: Int?
    public var bundleID: String?
    public var processName: String?
    public var author: String?
    public var contextName: String?

    public init(referenceSeconds: Double, description: String, message: String, source: Source) {
        self.referenceSeconds = referenceSeconds
        self.description = description
        self.message = message
        self.source = source
    }
}

/// Every dated event of a store: what an examiner merges into a super-timeline (docs/timeline.md).
/// The events come in the store's reading order — history, WAL, attributes and, within each, the
/// store's own order — unsorted: `TimelineSpool` sorts them by time, ties in this order.
public enum StoreTimeline {
    /// Calls `body` with each dated event, one at a time (nothing is collected); returns how many
    /// transactions, commits and values had no usable date and were left out.
    ///
    /// - Parameter evidence: the store's WAL, for commits dated by their transactions (nil: none).
    public static func forEachEvent(_ opened: OpenedStore, evidence: WALEvidence?, decoder: ValueDecoder,
                                    _ body: (TimelineEvent) throws -> Void) throws -> Int {
        var undated = 0

        // History transactions (WAL applied: the latest state). A store without history has none;
        // a history that cannot be read is an error, never a timeline silently without it.
        var history: HistoryReader?
        do {
            history = try HistoryReader(connection: opened.connection, store: opened.store, model: opened.model, displayPath: opened.displayPath)
        } catch ModelError.noHistory {
            history = nil
        }
        if var reader = history {
            try reader.forEachTransaction { t in
                guard let seconds = t.referenceSeconds, seconds.isFinite else { undated += 1; return }
                var event = TimelineEvent(referenceSeconds: seconds, description: "History transaction",
                                          message: "history transaction #\(t.id)" + writer(t) + ": " + changeSummary(t.changes), source: .history)
                event.transaction = t.id
                event.bundleID = t.bundleID
                event.processName = t.processName
                event.author = t.author
                event.contextName = t.contextName
                try body(event)
            }
        }

        // WAL commits: dated by the history transactions each wrote (the last of them).
        if let evidence, evidence.commitCount > 0 {
            try RecordDiff.forEachCommit(evidence, decoder: decoder) { commit, diff in
                guard let transactions = diff.transactions, let last = transactions.last(where: { $0.referenceSeconds?.isFinite == true }),
                      let seconds = last.referenceSeconds else { undated += 1; return }
                let frames = evidence.wal.map { wal -> String in
                    let t = wal.transactions[commit - 1]
                    return t.firstFrame == t.commitFrame ? " (frame \(t.commitFrame))" : " (frames \(t.firstFrame)-\(t.commitFrame))"
                } ?? ""
                let changed = diff.groups.filter { !$0.group.isUnchanged && !WALDiff.historyTables.contains($0.group.table.uppercased()) }
                    .map { g in "\(g.group.entity ?? g.group.table) " + g.group.countsText.replacingOccurrences(of: ", \(g.group.unchanged) unchanged", with: "") }
                var event = TimelineEvent(referenceSeconds: seconds, description: "WAL commit",
                                          message: "WAL commit \(commit)\(frames) with history " + transactions.map { "#\($0.id)" }.joined(separator: ", ")
                                              + (changed.isEmpty ? "" : ": " + changed.joined(separator: "; ")),
                                          source: .wal)
                event.commit = commit
                event.transaction = last.id
                event.bundleID = last.bundleID
                event.processName = last.processName
                event.author = last.author
                event.contextName = last.contextName
                try body(event)
            }
        }

        // Dated attributes of every entity, each row read once from its hierarchy's root.
        let map = opened.map
        let entities = map.entities.filter { $0.tableExists && $0.number != nil }
        let exported = Set(entities.map(\.entity.name))
        for root in entities where root.lineage.first.map({ $0 == root.entity.name || !exported.contains($0) }) ?? true {
            let reader = RowReader(map: map, entity: root, decoder: opened.decoder)
            let dated = Set(reader.fields.indices.filter { i in
                if case .attribute(let a) = reader.fields[i].kind { return a.attribute.type == .date }
                return false
            })
            guard !dated.isEmpty else { continue }
            try reader.forEach(opened.connection) { row in
                for (offset, value) in row.values.enumerated() where offset < row.fieldIndexes.count && dated.contains(row.fieldIndexes[offset]) {
                    switch value.value {
                    case .date(_, let seconds) where seconds.isFinite && abs(seconds) < 1e12:
                        var event = TimelineEvent(referenceSeconds: seconds, description: "\(row.entity).\(value.name)",
                                                  message: "\(row.entity)#\(row.pk) \(value.name)", source: .attribute)
                        event.entity = row.entity
                        event.pk = row.pk
                        event.attribute = value.name
                        try body(event)
                    case .null:
                        break
                    default:
                        undated += 1
                    }
                }
            }
        }
        return undated
    }

    static func writer(_ t: HistoryTransaction) -> String {
        var parts: [String] = []
        if let b = t.bundleID { parts.append(b) }
        if let p = t.processName, p != t.bundleID { parts.append(p) }
        if let a = t.author { parts.append("author " + a) }
        if let c = t.contextName { parts.append("context " + c) }
        return parts.isEmpty ? "" : " by " + parts.joined(separator: ", ")
    }

    /// "2 inserts, 1 update of Item; 1 delete of Component", or "no changes".
    static func changeSummary(_ changes: [HistoryChange]) -> String {
        guard !changes.isEmpty else { return "no changes" }
        var order: [String] = []
        var counts: [String: [String: Int]] = [:]
        for c in changes {
            if counts[c.entity] == nil { order.append(c.entity) }
            counts[c.entity, default: [:]][c.type.name, default: 0] += 1
        }
        return order.map { entity in
            let byType = counts[entity] ?? [:]
            let parts = byType.keys.sorted().map { type in plural(byType[type] ?? 0, type) }
            return parts.joined(separator: ", ") + " of " + entity
        }.joined(separator: "; ")
    }
}
