import Acquisition
import CoreDataStore
import Foundation
import ModelReview

extension Storelens {
    /// What `storelens migration` takes besides the old stores and the target.
    public struct MigrationOptions: Sendable {
        public var input: InputOptions
        /// `--old-model`: the old stores' model, for stores without a cached one.
        public var oldModel: URL?

        public init(input: InputOptions = InputOptions(), oldModel: URL? = nil) {
            self.input = input
            self.oldModel = oldModel
        }
    }

    /// What `storelens migration` found: the plan hop by hop, and the inputs left out.
    public struct MigrationResult: Sendable {
        public var plan: MigrationPlan
        /// Inputs that were left out, and why (a plain SQLite database is not migrated).
        public var notes: [String]
    }

    /// `storelens migration`: the migration of the old stores of `inputs` to the model `target`
    /// names (a model file or a store), checked hop by hop against the stores' data.
    public static func migration(_ inputs: [String], to target: String, _ options: MigrationOptions = MigrationOptions()) throws -> MigrationResult {
        try reading(options.input) { try migration(inputs, to: target, options, in: $0) }
    }

    /// `migration(_:to:_:)` through a session `reading` opened, which finishes it.
    public static func migration(_ inputs: [String], to target: String, _ options: MigrationOptions, in session: EvidenceSession) throws -> MigrationResult {
        let input = options.input
        // The target is read first and without --store, which selects among the old stores.
        let destination = try MigrationTarget.load(target, session: session, options: input.open, limits: input.limits)
        var opened: [OpenedStore] = []
        var notes: [String] = []
        for store in try session.stores(from: inputs, select: input.store, options: input.open, limits: input.limits) {
            do {
                opened.append(try StoreReading.named(store.displayPath) {
                    try OpenedStore.open(store.copy, displayPath: store.displayPath, xcodeModel: options.oldModel)
                })
            } catch ModelError.notCoreData {
                notes.append("\(store.displayPath) is plain SQLite, not a Core Data store; it is left out.")
            }
        }
        guard !opened.isEmpty else { throw InputError(message: "No Core Data store was found in \(inputs.joined(separator: ", ")); give the stores users have.") }
        // The data questions read the old stores: a damaged one is named as such.
        let plan = try StoreReading.named(opened.map(\.displayPath).joined(separator: ", ")) { try migration(opened, to: destination) }
        return MigrationResult(plan: plan, notes: notes)
    }

    /// The migration of stores already opened to `target`, as `migration` plans it (and
    /// `report --migration-to`, store by store).
    public static func migration(_ opened: [OpenedStore], to target: MigrationTarget) throws -> MigrationPlan {
        try MigrationPlanner.plan(opened, to: target)
    }
}
