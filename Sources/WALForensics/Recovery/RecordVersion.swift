import CoreDataStore
import Foundation

/// One version of one record: the values a row held over a run of WAL commits, where that run is
/// in the store's files, and what ended it.
public struct RecordVersion: Sendable {
    public enum State: String, Sendable, CaseIterable {
        /// The version the last valid commit holds (the store as SQLite shows it).
        case live
        /// An older version: a later commit changed the record.
        case superseded
        /// The record's last version before a commit deleted it.
        case deleted
    }

    /// How much of the record the bytes prove. Versions read from WAL commits are whole records.
    public enum Confidence: String, Sendable {
        case whole
    }

    /// What ended a run of commits: the commit that changed or deleted the record, and the
    /// persistent-history transactions of that commit that name the record.
    public struct Ending: Sendable {
        public enum Kind: String, Sendable {
            case changed, deleted
        }

        public let kind: Kind
        public let commit: Int
        /// Transactions whose changes name this record (empty when the commit wrote none that do,
        /// or the store keeps no history).
        public let transactions: [HistoryTransaction]
    }

    /// One run of consecutive commits at which the record held this version.
    public struct Source: Sendable {
        /// The file whose bytes first held this version: the main file (commit 0) or the `-wal`.
        public let file: String
        /// The commit that wrote the version (0: it was already in the main file).
        public let writtenBy: Int
        /// The frames of that commit in the `-wal` (nil for the main file).
        public let firstFrame: Int?
        public let commitFrame: Int?
        /// First and last commit at which the store held this version.
        public let firstCommit: Int
        public let lastCommit: Int
        /// Nil while the version is still the live one.
        public let endedBy: Ending?
    }

    /// The Core Data entity (from the row's own `Z_ENT`; `#n` when the store does not name it).
    public let entity: String
    public let entityNumber: Int
    public let table: String
    public let pk: Int64
    /// Decoded as `rows` shows them.
    public let values: [RecordChange.Value]
    public let state: State
    /// Every run of commits holding these values (more than one when the record returned to them).
    public let sources: [Source]
    public let confidence: Confidence

    /// What ended the last run: the change or delete that makes this version superseded or deleted.
    public var endedBy: Ending? { sources.last?.endedBy }
}
