import Acquisition
import CoreDataStore
import Foundation
import WALForensics

extension Storelens {
    /// The records one store's WAL changed between two of its states.
    public struct RecordChanges: Sendable {
        /// The store, by display path.
        public let store: String
        /// The earlier and the later state, as commit numbers (0: the main file alone).
        public let from: Int
        public let to: Int
        /// One commit's first and commit frame (nil for commit 0, or when comparing a range).
        public let firstFrame: Int?
        public let commitFrame: Int?
        /// Rows inserted, updated and deleted per entity, with their values decoded as `rows` shows them.
        public let diff: RecordDiff
    }

    /// What `storelens wal --diff` takes besides its inputs.
    public struct WALDiffOptions: Sendable {
        public var input: InputOptions
        /// `--from`: the earlier state (nil: 0, the main file alone).
        public var from: Int?
        /// `--to`: the later state (nil: the last commit).
        public var to: Int?

        public init(input: InputOptions = InputOptions(), from: Int? = nil, to: Int? = nil) {
            self.input = input
            self.from = from
            self.to = to
        }
    }

    /// `storelens wal --diff`: the rows each store's WAL inserted, updated and deleted between two states.
    public static func walDiff(_ inputs: [String], _ options: WALDiffOptions = WALDiffOptions()) throws -> [RecordChanges] {
        try reading(options.input) { try walDiff(inputs, options, in: $0) }
    }

    /// `walDiff(_:_:)` through a session `reading` opened, which finishes it.
    public static func walDiff(_ inputs: [String], _ options: WALDiffOptions, in session: EvidenceSession) throws -> [RecordChanges] {
        let input = options.input
        return try session.stores(from: inputs, select: input.store, options: input.open, limits: input.limits).map { store in
            let evidence = try WALEvidence(copy: store.copy, displayPath: store.displayPath)
            let diff = try RecordDiff.compute(evidence, from: options.from, to: options.to, decoder: ValueDecoder(store.copy))
            return RecordChanges(store: store.displayPath, from: diff.diff.from, to: diff.diff.to, firstFrame: nil, commitFrame: nil, diff: diff)
        }
    }

    /// What `walEachCommit` reports, in order: a store begins, each of its commits' changes, it ends.
    public enum CommitWalk {
        case storeBegins(String)
        case commit(RecordChanges)
        case storeEnds(String)
    }

    /// `storelens wal --diff --each`: every commit's changes (commit k against commit k-1), in one
    /// pass per store; each is handed to `visit` and dropped before the next is built.
    public static func walEachCommit(_ inputs: [String], _ input: InputOptions = InputOptions(),
                                     visit: (CommitWalk) throws -> Void) throws {
        try reading(input) { try walEachCommit(inputs, input, in: $0, visit: visit) }
    }

    /// `walEachCommit(_:_:visit:)` through a session `reading` opened, which finishes it.
    public static func walEachCommit(_ inputs: [String], _ input: InputOptions, in session: EvidenceSession,
                                     visit: (CommitWalk) throws -> Void) throws {
        for store in try session.stores(from: inputs, select: input.store, options: input.open, limits: input.limits) {
            let evidence = try WALEvidence(copy: store.copy, displayPath: store.displayPath)
            try visit(.storeBegins(store.displayPath))
            try RecordDiff.forEachCommit(evidence, decoder: ValueDecoder(store.copy)) { commit, diff in
                let transaction = evidence.wal?.transactions[commit - 1]
                try visit(.commit(RecordChanges(store: store.displayPath, from: commit - 1, to: commit, firstFrame: transaction?.firstFrame,
                                                commitFrame: transaction?.commitFrame, diff: diff)))
            }
            try visit(.storeEnds(store.displayPath))
        }
    }
}
