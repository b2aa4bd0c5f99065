import Acquisition
import CoreDataStore
import Foundation
import SQLiteAccess

extension Storelens {
    /// What `storelens rows` takes besides its input.
    public struct RowsOptions: Sendable {
        public var input: InputOptions
        /// The entity (model name, class name or table).
        public var entity: String
        /// `--model`: the app's Xcode model, for stores without a cached one.
        public var xcodeModel: URL?
        /// `--as-of N`: the rows as they stood after WAL commit N (0: the main file alone).
        public var asOfCommit: Int?
        /// `--where` expressions, all of which a row must meet (docs/rows.md).
        public var filters: [String]
        /// `--limit`: at most this many rows.
        public var limit: Int?

        public init(entity: String, input: InputOptions = InputOptions(), xcodeModel: URL? = nil, asOfCommit: Int? = nil,
                    filters: [String] = [], limit: Int? = nil) {
            self.input = input
            self.entity = entity
            self.xcodeModel = xcodeModel
            self.asOfCommit = asOfCommit
            self.filters = filters
            self.limit = limit
        }
    }

    /// One entity's rows of a SQLite store, opened and filtered, read while the session lives:
    /// `forEachStored` hands over the stored cells (the fast way, for writers that encode them
    /// directly), `forEach` the decoded rows.
    public struct EntityRows {
        /// The store, by display path.
        public let path: String
        /// The entity, by its model name.
        public let entity: String
        public let model: StoreModel
        public let asOfCommit: Int?
        /// The field labels, in the order the rows carry them.
        public var fields: [String] { reader.fields.map(\.label) }
        let opened: OpenedStore
        let reader: RowReader
        let filters: [RowReader.Filter]
        let limit: Int?

        /// Every row the filters keep, as its stored cells (`RowScan.Row`).
        public func forEachStored(_ body: (RowScan.Row) throws -> Void) throws {
            try StoreReading.named(path) { try reader.scan(opened.connection, filters: filters, limit: limit)?.forEach(body) }
        }

        /// Every row the filters keep, decoded as `rows` shows them.
        public func forEach(_ body: (DecodedRow) throws -> Void) throws {
            try StoreReading.named(path) { try reader.forEach(opened.connection, filters: filters, limit: limit, body) }
        }
    }

    /// The rows `rows` reads: a SQLite store's, or a Core Data XML store's objects of one entity.
    public enum StoreRows {
        case sqlite(EntityRows)
        /// The XML store and all its objects of the entity (`limit` is the reader's to apply).
        case atomic(AcquiredAtomicStore, AtomicStoreRows)
    }

    /// `storelens rows`, read while `body` runs: the one store of `input`'s rows of one entity.
    public static func rows<T>(_ input: String, _ options: RowsOptions, _ body: (StoreRows) throws -> T) throws -> T {
        try reading(options.input) { try body(try rows(input, options, in: $0)) }
    }

    /// `rows(_:_:_:)` through a session `reading` opened, which finishes it: the rows opened, to be read
    /// while the session lives.
    public static func rows(_ input: String, _ options: RowsOptions, in session: EvidenceSession) throws -> StoreRows {
        let acquired: AcquiredStore
        switch try session.singleStoreOrAtomic(input, options.input) {
        case .atomic(let store): return .atomic(store, try atomicRows(store, options))
        case .sqlite(let store): acquired = store
        }
        let copy = acquired.copy
        let opened: OpenedStore
        if let asOf = options.asOfCommit {
            let connection = try copy.open(asOfCommit: asOf, displayPath: acquired.displayPath)
            opened = try OpenedStore.open(connection: connection, displayPath: acquired.displayPath, decoder: ValueDecoder(copy),
                                          xcodeModel: options.xcodeModel)
        } else {
            opened = try OpenedStore.open(copy, displayPath: acquired.displayPath, xcodeModel: options.xcodeModel)
        }
        let entity = try opened.entity(options.entity)
        let reader = RowReader(map: opened.map, entity: entity, decoder: opened.decoder)
        return .sqlite(EntityRows(path: acquired.displayPath, entity: entity.entity.name, model: opened.model, asOfCommit: options.asOfCommit,
                                  opened: opened, reader: reader, filters: try options.filters.map { try reader.filter($0) }, limit: options.limit))
    }

    /// A Core Data XML store's objects of one entity; what only a SQLite store has is refused.
    static func atomicRows(_ store: AcquiredAtomicStore, _ options: RowsOptions) throws -> AtomicStoreRows {
        let title = store.format.title
        if options.asOfCommit != nil { throw InputError(message: "\(store.displayPath) is a \(title), which has no WAL commits; drop --as-of.") }
        if !options.filters.isEmpty {
            throw InputError(message: "--where is not available for a \(title) (\(store.displayPath)); filter the --format jsonl output instead (with jq, say).")
        }
        if options.xcodeModel != nil { throw InputError(message: "--model is not used for a \(title) (\(store.displayPath)): its values carry their own types; drop --model.") }
        let contents = try AtomicStoreReader.read(store.copy, format: store.format, displayPath: store.displayPath)
        if store.format == .coreDataBinary {
            throw InputError(message: "\(store.displayPath) is a \(title), whose objects storelens does not decode (their archived layout is not documented); `storelens inspect` shows its metadata and model.")
        }
        return try AtomicStoreRows(contents, entity: options.entity, displayPath: store.displayPath)
    }
}
