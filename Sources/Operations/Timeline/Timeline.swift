import Acquisition
import CoreDataStore
import Foundation
import WALForensics

extension Storelens {
    /// What `storelens timeline` takes besides its input.
    public struct TimelineOptions: Sendable {
        public var input: InputOptions
        /// `--model`: the app's Xcode model, for stores without a cached one.
        public var xcodeModel: URL?

        public init(input: InputOptions = InputOptions(), xcodeModel: URL? = nil) {
            self.input = input
            self.xcodeModel = xcodeModel
        }
    }

    /// What `storelens timeline` could not place on the timeline.
    public struct TimelineLeftOut: Sendable {
        /// Transactions, commits and values without a usable date.
        public var undated = 0
        /// Stores beside the others that are not Core Data (no history, no model): no timeline.
        public var notCoreData: [String] = []
    }

    /// `storelens timeline`: every dated event of every store of `input` (history transactions,
    /// WAL commits, dated attribute values), handed to `visit` with its store, store by store in
    /// each store's order (sort by `referenceSeconds` for one timeline, as the command does).
    public static func timeline(_ input: String, _ options: TimelineOptions = TimelineOptions(),
                                visit: (_ store: String, TimelineEvent) throws -> Void) throws -> TimelineLeftOut {
        try reading(options.input) { try timeline(input, options, in: $0, visit: visit) }
    }

    /// `timeline(_:_:visit:)` through a session `reading` opened, which finishes it.
    public static func timeline(_ input: String, _ options: TimelineOptions, in session: EvidenceSession,
                                visit: (_ store: String, TimelineEvent) throws -> Void) throws -> TimelineLeftOut {
        let stores = try session.stores(from: [input], select: options.input.store, options: options.input.open, limits: options.input.limits)
        var leftOut = TimelineLeftOut()
        for store in stores {
            let opened: OpenedStore
            do {
                opened = try OpenedStore.open(store.copy, displayPath: store.displayPath, xcodeModel: options.xcodeModel)
            } catch ModelError.notCoreData(let path) where stores.count > 1 {
                leftOut.notCoreData.append(path)
                continue
            }
            let evidence = try WALEvidence(copy: store.copy, displayPath: store.displayPath)
            leftOut.undated += try StoreReading.named(store.displayPath) {
                try StoreTimeline.forEachEvent(opened, evidence: evidence, decoder: ValueDecoder(store.copy)) { try visit(store.displayPath, $0) }
            }
        }
        return leftOut
    }

    /// A timeline read in full and held sorted: what `sortedTimeline` gives back.
    public struct SortedTimeline {
        /// What could not be placed on the timeline.
        public let leftOut: TimelineLeftOut
        let spool: TimelineSpool

        /// The lines by time, ties in the order they were read, several lines at a time.
        public func forEachSorted(_ body: (String) throws -> Void) throws {
            try spool.forEachSorted(body)
        }
    }

    /// `timeline(_:_:in:visit:)` as one timeline: every event of every store, rendered by `line`,
    /// is kept in a scratch file (`TimelineSpool`, in a private folder beside the session's working
    /// folder, which outlives the session) rather than in memory, and handed back sorted by time.
    public static func sortedTimeline(_ input: String, _ options: TimelineOptions, in session: EvidenceSession,
                                      line: (_ store: String, TimelineEvent) -> String) throws -> SortedTimeline {
        let spool = try TimelineSpool(parent: session.scratch.url.deletingLastPathComponent())
        let leftOut = try timeline(input, options, in: session) { store, event in
            try spool.add(referenceSeconds: event.referenceSeconds, line: line(store, event))
        }
        return SortedTimeline(leftOut: leftOut, spool: spool)
    }
}
