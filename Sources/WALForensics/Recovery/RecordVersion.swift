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
        /// Found only in WAL frames after the last valid commit: a transaction SQLite never applied.
        case uncommitted
        /// Found only in bytes no committed state shows as a row: free space inside pages, freelist
        /// pages, frames of an older WAL generation, a `-journal`.
        case carved
    }

    /// How much of the record the bytes prove. Versions read from WAL commits are whole records.
    public enum Confidence: String, Sendable {
        /// Every byte of the record was read as written (its cell or a whole copy of it).
        case whole
        /// A freed cell whose first 4 bytes the freeblock header overwrote: payload length, rowid
        /// (so `Z_PK`) and the start of the record header were rebuilt from the table's columns.
        case headerRebuilt = "header-rebuilt"
        /// Only the values persistent history kept when the record was deleted (`ZTOMBSTONE0…n`,
        /// the attributes the model preserves on deletion); the record's other values are not known.
        case tombstone
        /// Only what an index of the entity's table kept of a record no table cell, commit or
        /// history still holds: the indexed attributes and `Z_PK` (its other columns are among
        /// `uncertainColumns`: not known).
        case indexOnly = "index-only"
    }

    /// One place outside the committed states whose bytes hold this version.
    public struct Find: Sendable, Hashable {
        /// Which bytes of the store family the page image came from.
        public enum Origin: String, Sendable {
            /// A page of the main file.
            case mainFile = "main-file"
            /// A `-wal` frame up to the last valid commit.
            case committedFrame = "committed-frame"
            /// A `-wal` frame after the last valid commit (or after the frame where SQLite's walk stops).
            case uncommittedFrame = "uncommitted-frame"
            /// A `-wal` frame whose salts are not the header's: left from before the WAL was restarted.
            case olderGeneration = "older-wal-generation"
            /// A page image in the `-journal`.
            case journal
        }

        /// Where in the page the record was.
        public enum Area: String, Sendable {
            /// A cell the page's cell pointer array points to.
            case cell
            /// Inside a freeblock of a table b-tree leaf.
            case freeblock
            /// Between the cell pointer array and the cell content area.
            case unallocated
            /// A freelist trunk page (past its list of leaf pages).
            case freelistTrunk = "freelist-trunk"
            /// A freelist leaf page (a whole page a table gave up).
            case freelistLeaf = "freelist-leaf"
        }

        public let file: String
        public let origin: Origin
        public let area: Area
        /// The database page the image is of.
        public let page: Int
        /// The record's offset inside the page, and in the file.
        public let offset: Int
        public let fileOffset: Int
        /// The `-wal` frame (1-based slot in the file) or `-journal` record (1-based) holding the image.
        public let frame: Int?
        public let confidence: Confidence
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
    /// Places outside the committed states holding these same values (carved or uncommitted
    /// copies); for a `carved` or `uncommitted` version, where it was found.
    public var finds: [Find] = []
    /// Places beyond `findLimit` holding these same values, counted but not listed: a crafted
    /// file can name one record in every cell of every page, and one version's output stays bounded.
    public var findsOmitted = 0
    /// The most places one version lists.
    public static let findLimit = 100

    /// Adds places to `finds`, none twice, listing at most `findLimit` and counting the rest in
    /// `findsOmitted` (with `omitted` more counted elsewhere). Linear in what is added: merging
    /// many remnants of one record into one version once searched the whole list for each place.
    mutating func addFinds(_ more: [Find], omitted: Int = 0) {
        findsOmitted += omitted
        guard !more.isEmpty else { return }
        var listed = Set(finds)
        for find in more where listed.insert(find).inserted {
            if finds.count < Self.findLimit { finds.append(find) } else { findsOmitted += 1 }
        }
    }
    /// Columns whose stored value the bytes do not prove (`Z_PK` when the rowid was overwritten).
    public var uncertainColumns: [String] = []
    /// Persistent-history deletes of this record (its entity and `Z_PK`) that no WAL commit of the
    /// files ended it with: for carved records and tombstones. Each is its transaction holding
    /// that one change (with the values it kept).
    public var historyDeletes: [HistoryTransaction] = []
    /// The digest of `values` when the one who made the version already had it (`recover`'s
    /// tracker does), so that matching carved copies need not compute it again.
    var valuesDigest: ValuesDigest?

    /// False for a carved record whose rowid (`Z_PK`) was overwritten and not found elsewhere (`pk` is 0).
    public var pkIsKnown: Bool { pk > 0 }

    /// What ended the last run: the change or delete that makes this version superseded or deleted.
    public var endedBy: Ending? { sources.last?.endedBy }

    /// What ended the record as the flat views say it: the last run's change, else `deleted` when
    /// persistent history deleted it.
    public var endingKind: Ending.Kind? { endedBy?.kind ?? (historyDeletes.isEmpty ? nil : .deleted) }

    /// The history transactions that changed or deleted it: the last run's, then the history deletes.
    public var endingTransactions: [HistoryTransaction] {
        var out = endedBy?.transactions ?? []
        for t in historyDeletes where !out.contains(where: { $0.id == t.id }) { out.append(t) }
        return out
    }
}
