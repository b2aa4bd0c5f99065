import Acquisition
import CoreDataStore
import Foundation

extension Storelens {
    /// What `storelens history` takes besides its input.
    public struct HistoryOptions: Sendable {
        public var input: InputOptions
        /// `--model`: the app's Xcode model (update masks decode against it).
        public var xcodeModel: URL?
        /// `--entity`, `--author`, `--bundle`: keep only these changes and transactions.
        public var entity: String?
        public var author: String?
        public var bundleID: String?
        /// `--since`: transactions from this moment on (seconds since 2001-01-01, as Core Data stores them).
        public var since: Double?

        public init(input: InputOptions = InputOptions(), xcodeModel: URL? = nil, entity: String? = nil, author: String? = nil,
                    bundleID: String? = nil, since: Double? = nil) {
            self.input = input
            self.xcodeModel = xcodeModel
            self.entity = entity
            self.author = author
            self.bundleID = bundleID
            self.since = since
        }
    }

    /// One store's persistent history, opened and filtered, ready to be read transaction by
    /// transaction (`forEachTransaction`) or summed per entity (`summary`).
    public struct StoreHistory {
        /// The store, by display path.
        public let path: String
        /// Where the model that decodes the update masks came from.
        public let modelSource: StoreModel.Source
        /// The entity `--entity` chose, by its model name.
        public let entity: String?
        public let options: HistoryOptions
        var reader: HistoryReader
        let filter: HistoryReader.Filter

        /// Every transaction the filters keep, oldest first, one at a time.
        public mutating func forEachTransaction(_ body: (HistoryTransaction) throws -> Void) throws {
            let filter = filter
            try StoreReading.named(path) { try reader.forEachTransaction(filter, body) }
        }

        /// Inserts, updates and deletes per entity and writer.
        public func summary() throws -> [HistoryEntitySummary] {
            try StoreReading.named(path) { try reader.summary(filter) }
        }
    }

    /// `storelens history`: the one store of `input`'s persistent history, every transaction the
    /// filters keep with its changes. The `StoreHistory` returned describes what was read (path,
    /// model source, filters); its session is over, so read a summary with `history(_:_:in:)`.
    public static func history(_ input: String, _ options: HistoryOptions = HistoryOptions()) throws -> (StoreHistory, [HistoryTransaction]) {
        try reading(options.input) { session in
            var history = try history(input, options, in: session)
            var transactions: [HistoryTransaction] = []
            try history.forEachTransaction { transactions.append($0) }
            return (history, transactions)
        }
    }

    /// `history(_:_:)` through a session `reading` opened, which finishes it: the history opened, to be
    /// read while the session lives.
    public static func history(_ input: String, _ options: HistoryOptions, in session: EvidenceSession) throws -> StoreHistory {
        let acquired = try session.singleStore(input, options.input)
        let opened = try OpenedStore.open(acquired.copy, displayPath: acquired.displayPath, xcodeModel: options.xcodeModel)
        var filter = HistoryReader.Filter(author: options.author, bundleID: options.bundleID, since: options.since)
        var entityName: String?
        if let name = options.entity {
            let entity = try opened.entity(name)
            filter.entityNumbers = entity.entityNumbers
            entityName = entity.entity.name
        }
        let reader = try HistoryReader(connection: opened.connection, store: opened.store, model: opened.model, displayPath: acquired.displayPath)
        return StoreHistory(path: acquired.displayPath, modelSource: opened.model.source, entity: entityName, options: options,
                            reader: reader, filter: filter)
    }

    /// One store's history as `report` shows it: its transactions over time per writer, and its
    /// changes per entity and writer (`history --summary`'s table). Both nil: the store keeps no
    /// persistent history.
    public struct HistoryOverview: Sendable {
        public var timeline: HistoryTimeline?
        public var writers: [HistoryEntitySummary]?
    }

    /// `historyOverview` of one store, on a connection of its own (so it can run beside the checks).
    public static func historyOverview(_ store: AcquiredStore) throws -> HistoryOverview {
        var overview = HistoryOverview()
        let connection = try store.copy.open()
        if let coreData = try CoreDataStore.read(connection), coreData.history.present {
            let reader = try HistoryReader(connection: connection, store: coreData, model: nil, displayPath: store.displayPath)
            overview.timeline = try reader.timeline()
            overview.writers = try reader.summary()
        }
        return overview
    }
}
