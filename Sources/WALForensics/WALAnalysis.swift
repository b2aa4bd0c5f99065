import Findings
import Foundation
import StoreFormats

/// What a store's `-wal` and `-shm` hold, and what is odd about them:
/// everything `storelens wal` reports for one store.
public struct WALAnalysis: Sendable {
    /// The store as named to the user.
    public let displayPath: String
    /// Size of the main file in bytes.
    public let mainFileBytes: Int
    /// The main file's page size, or the WAL's when the main file is empty.
    public let pageSize: Int?
    /// What the main file's header says: `"wal"` (bytes 18/19 = 2), `"rollback"`, or nil when it is empty.
    public let headerJournalMode: String?
    /// Whether the main file is a Core Data store (tables were named by entity where possible).
    public let isCoreData: Bool
    /// Table → the Core Data entities stored in it (from `Z_PRIMARYKEY`, WAL view and main file).
    public let entitiesByTable: [String: [String]]
    /// The `-wal`, or nil when none came with the store.
    public let wal: WALFacts?
    /// Committed transactions, in commit order.
    public let transactions: [Transaction]
    /// Valid frames after the last commit (an unfinished transaction SQLite ignores), or nil when there are none.
    public let uncommitted: Uncommitted?
    /// Whole frames after the point where SQLite's walk stopped, grouped by their salts.
    public let framesAfterStop: [FrameRun]
    /// The `-shm`, or nil when none came with the store.
    public let shm: SharedMemoryFacts?
    /// What is odd about the files, as findings (ids in docs/wal.md), warnings first.
    public let findings: [Finding]

    /// The WAL's header and frame walk.
    public struct WALFacts: Sendable {
        public let fileBytes: Int
        /// Whole frames in the file, valid or not.
        public let frames: Int
        /// Frames SQLite accepts (its walk stops at the first bad one).
        public let validFrames: Int
        public let commits: Int
        /// SQLite's mxFrame: the last valid commit frame (0 when nothing is committed).
        public let lastCommitFrame: Int
        public let uncommittedFrames: Int
        /// Whole frames at or after the stop point.
        public let staleFrames: Int
        public let pageSize: Int?
        public let salt1: UInt32?
        public let salt2: UInt32?
        public let checkpointSequence: UInt32?
        /// True for magic 0x377f0683 (big-endian checksum words); nil without a header.
        public let bigEndianChecksums: Bool?
        /// Why the walk stopped before the end of the file, or nil at a clean end.
        public let stopReason: String?
        /// The first frame not used, or nil at a clean end.
        public let stopFrame: Int?
        /// Why SQLite ignores (or refuses) the whole WAL, or nil when the header is good.
        public let headerProblem: String?
        /// Database size in pages after the last commit (0 without commits).
        public let databaseSizeInPages: Int
    }

    /// One committed transaction.
    public struct Transaction: Sendable {
        /// 1-based commit number: what `--as-of` takes.
        public let number: Int
        public let firstFrame: Int
        public let commitFrame: Int
        public let frames: Int
        /// The distinct pages it wrote, ascending.
        public let pages: [UInt32]
        public let databaseSizeInPages: Int
        /// The tables (an index counts as its table) whose b-trees hold the written pages after the commit.
        public let tables: [String]
        /// Core Data entity names stored in those tables (every entity of a shared table).
        public let entities: [String]
        /// Written pages that belong to no b-tree after the commit, by use:
        /// `freelist`, `pointerMap`, `lockByte`, `unused` (reached by nothing) and `pastEnd` (beyond the commit's size).
        public let otherPages: [(use: String, count: Int)]
    }

    /// The valid frames after the last commit.
    public struct Uncommitted: Sendable {
        public let firstFrame: Int
        public let frames: Int
        public let pages: [UInt32]
    }

    /// Consecutive whole frames after the stop point that carry the same salts.
    public struct FrameRun: Sendable, Equatable {
        public let firstFrame: Int
        public let frames: Int
        public let salt1: UInt32
        public let salt2: UInt32
        /// Frames of the run whose commit field is set.
        public let commitFrames: Int
        /// `current` when the salts are the header's (frames of this generation cut off by damage),
        /// `earlier` when salt-1 is a few resets behind (a previous generation), `unknown` otherwise.
        public let generation: String
    }

    /// The `-shm` wal-index header.
    public struct SharedMemoryFacts: Sendable {
        /// Whether the header could be read (the file is at least 136 bytes).
        public let readable: Bool
        public let mxFrame: Int?
        public let nPage: Int?
        public let nBackfill: Int?
        /// Both header copies equal and the checksum holds.
        public let valid: Bool
        public let copiesMatch: Bool?
        public let checksumValid: Bool?
        /// Its mxFrame and salts equal the WAL's last valid commit frame and salts.
        public let agreesWithWal: Bool
        public let pageSize: Int?
        public let salt1: UInt32?
        public let salt2: UInt32?
        public let iChange: UInt32?
        public let isInit: Bool?
        /// The five read marks; nil for an unused mark (0xFFFFFFFF).
        public let readMarks: [Int?]
    }
}

extension WALAnalysis.WALFacts: WALWalkSummary {}
