import Acquisition
import CoreDataStore
import Foundation

extension Storelens {
    /// What `storelens schema` takes besides its input.
    public struct SchemaOptions: Sendable {
        public var input: InputOptions
        /// `--model`: the app's Xcode model, used when the store has no cached model and compared
        /// with the cache when it has one.
        public var xcodeModel: URL?

        public init(input: InputOptions = InputOptions(), xcodeModel: URL? = nil) {
            self.input = input
            self.xcodeModel = xcodeModel
        }
    }

    /// A store's model and how it maps onto the store's tables.
    public struct StoreSchema: Sendable {
        /// The store, by display path.
        public let path: String
        public let map: SchemaMap
    }

    /// `storelens schema`: the one store of `input`'s model (cached, from `--model`, or inferred)
    /// with its SQL map, columns and tables nothing maps, and what disagreed.
    public static func schema(_ input: String, _ options: SchemaOptions = SchemaOptions()) throws -> StoreSchema {
        try reading(options.input) { try schema(input, options, in: $0) }
    }

    /// `schema(_:_:)` through a session `reading` opened, which finishes it.
    public static func schema(_ input: String, _ options: SchemaOptions, in session: EvidenceSession) throws -> StoreSchema {
        let acquired = try session.singleStore(input, options.input)
        let opened = try OpenedStore.open(acquired.copy, displayPath: acquired.displayPath, xcodeModel: options.xcodeModel)
        return StoreSchema(path: opened.displayPath, map: opened.map)
    }
}
