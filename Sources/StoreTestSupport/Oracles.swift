import Foundation
import SQLiteAccess

// Oracles: the facts tests compare the tool against, computed here by means that share no code
// with the readers under test. SQLite itself on private copies (never an original), the WAL's
// and the -shm's own header bytes read with the file format's documented offsets, and
// Foundation's own property-list reader. No number a test compares should come from a README.

/// A WAL read from its own bytes, independently of `StoreFormats.WAL`: the 32-byte header and
/// the 24-byte frame headers, with SQLite's cumulative checksum recomputed here
/// (https://www.sqlite.org/fileformat2.html#walformat).
public struct WALFrameOracle: Sendable, Equatable {
    public let pageSize: Int
    public let formatVersion: UInt32
    public let checkpointSequence: UInt32
    public let salt1: UInt32
    public let salt2: UInt32
    public let bigEndianChecksums: Bool
    /// Whole frames the file holds.
    public let frameSlots: Int
    /// Frames from the first whose salts and running checksum match (SQLite stops at the first that does not).
    public let validFrames: Int
    /// 1-based numbers of the valid frames that end a transaction (database size field not 0).
    public let commitFrames: [Int]
    /// The database size in pages after each commit.
    public let commitSizes: [Int]
    /// The distinct pages each transaction wrote, sorted.
    public let pagesByCommit: [[Int]]

    public var lastCommitFrame: Int { commitFrames.last ?? 0 }
    /// Valid frames after the last commit: written but never committed.
    public var uncommittedFrames: Int { validFrames - lastCommitFrame }

    /// Nil when the bytes do not start with a WAL header SQLite would accept.
    public init?(data bytes: Data) {
        let data = [UInt8](bytes)
        guard data.count >= 32 else { return nil }
        func u32(_ at: Int) -> UInt32 {
            UInt32(data[at]) << 24 | UInt32(data[at + 1]) << 16 | UInt32(data[at + 2]) << 8 | UInt32(data[at + 3])
        }
        let magic = u32(0)
        guard magic == 0x377F_0682 || magic == 0x377F_0683 else { return nil }
        let bigEndian = magic == 0x377F_0683
        let pageSize = Int(u32(8)) == 1 ? 65536 : Int(u32(8))
        guard pageSize >= 512, pageSize <= 65536, pageSize & (pageSize - 1) == 0 else { return nil }
        // The running checksum over 8-byte words, in the byte order the magic names.
        func word(_ at: Int) -> UInt32 {
            bigEndian ? u32(at)
                : UInt32(data[at]) | UInt32(data[at + 1]) << 8 | UInt32(data[at + 2]) << 16 | UInt32(data[at + 3]) << 24
        }
        func checksum(_ range: Range<Int>, _ s: (UInt32, UInt32)) -> (UInt32, UInt32) {
            var (s0, s1) = s
            var i = range.lowerBound
            while i < range.upperBound {
                s0 = s0 &+ word(i) &+ s1
                s1 = s1 &+ word(i + 4) &+ s0
                i += 8
            }
            return (s0, s1)
        }
        var sum = checksum(0..<24, (0, 0))
        guard sum == (u32(24), u32(28)) else { return nil }
        self.pageSize = pageSize
        formatVersion = u32(4)
        checkpointSequence = u32(12)
        salt1 = u32(16)
        salt2 = u32(20)
        bigEndianChecksums = bigEndian
        let frameSize = 24 + pageSize
        frameSlots = (data.count - 32) / frameSize
        var valid = 0, commits: [Int] = [], sizes: [Int] = [], pages: [[Int]] = [], open = Set<Int>()
        for n in 0..<frameSlots {
            let at = 32 + n * frameSize
            guard u32(at + 8) == salt1, u32(at + 12) == salt2 else { break }
            sum = checksum(at..<at + 8, sum)
            sum = checksum(at + 24..<at + frameSize, sum)
            guard sum == (u32(at + 16), u32(at + 20)) else { break }
            valid = n + 1
            open.insert(Int(u32(at)))
            if u32(at + 4) != 0 {
                commits.append(n + 1)
                sizes.append(Int(u32(at + 4)))
                pages.append(open.sorted())
                open = []
            }
        }
        validFrames = valid
        commitFrames = commits
        commitSizes = sizes
        pagesByCommit = pages
    }

    public static func read(_ url: URL) throws -> WALFrameOracle? { WALFrameOracle(data: try Data(contentsOf: url)) }
}

/// The first wal-index header of a `-shm` and its checkpoint info, read at the offsets of
/// SQLite's `WalIndexHdr` / `WalCkptInfo` (native byte order: little-endian on every platform
/// this project runs on), independently of `StoreFormats.SharedMemoryIndex`.
public struct SharedMemoryOracle: Sendable, Equatable {
    public let iVersion: UInt32
    public let iChange: UInt32
    public let mxFrame: UInt32
    public let nPage: UInt32
    public let salt1: UInt32
    public let salt2: UInt32
    public let nBackfill: UInt32
    public let readMarks: [UInt32]
    public let nBackfillAttempted: UInt32
    /// Both header copies are byte-identical (SQLite writes them so when it is not mid-update).
    public let copiesMatch: Bool

    /// Whether this index describes `wal` as SQLite would use it: same salts, same last commit frame.
    public func agrees(with wal: WALFrameOracle) -> Bool {
        salt1 == wal.salt1 && salt2 == wal.salt2 && Int(mxFrame) == wal.lastCommitFrame
    }

    public init?(data bytes: Data) {
        let data = [UInt8](bytes)
        guard data.count >= 136 else { return nil }
        func le(_ at: Int) -> UInt32 {
            UInt32(data[at]) | UInt32(data[at + 1]) << 8 | UInt32(data[at + 2]) << 16 | UInt32(data[at + 3]) << 24
        }
        iVersion = le(0)
        iChange = le(8)
        mxFrame = le(16)
        nPage = le(20)
        // The salts are copied from the WAL header as raw bytes: big-endian there.
        func be(_ at: Int) -> UInt32 {
            UInt32(data[at]) << 24 | UInt32(data[at + 1]) << 16 | UInt32(data[at + 2]) << 8 | UInt32(data[at + 3])
        }
        salt1 = be(32)
        salt2 = be(36)
        nBackfill = le(96)
        readMarks = (0..<5).map { le(100 + 4 * $0) }
        nBackfillAttempted = le(128)
        copiesMatch = data[0..<48] == data[48..<96]
    }
}

/// SQLite itself on a private copy of a store family, in an `sltest-` folder removed with the
/// value. The original is only read (copied), never opened.
public final class SQLiteOracle: @unchecked Sendable {
    /// Which `-wal` the copy gets.
    public enum WALChoice: Sendable, Equatable {
        /// The -wal as it is.
        case whole
        /// No -wal: the main file alone, as a checkpoint left it.
        case none
        /// The -wal cut after this many whole frames (0: the header alone).
        case frames(Int)
    }

    public let folder: TemporaryFolder
    /// The copied main file.
    public let url: URL
    public let connection: Connection

    /// Copies `store` (and, as `wal` says, its -wal; never the -shm, so SQLite rebuilds the index
    /// from the WAL alone) and opens the copy read-write, which applies the WAL as an app would see it.
    public init(copying store: URL, wal: WALChoice = .whole) throws {
        folder = try TemporaryFolder("oracle")
        url = folder.path(store.lastPathComponent)
        try Data(contentsOf: store).write(to: url)
        let source = URL(fileURLWithPath: store.path + "-wal")
        if FileManager.default.fileExists(atPath: source.path) {
            let bytes = try Data(contentsOf: source)
            switch wal {
            case .whole: try bytes.write(to: URL(fileURLWithPath: url.path + "-wal"))
            case .none: break
            case .frames(let n):
                let pageSize = WALFrameOracle(data: bytes)?.pageSize ?? 0
                try bytes.prefix(32 + n * (24 + pageSize)).write(to: URL(fileURLWithPath: url.path + "-wal"))
            }
        }
        connection = try Connection.open(path: url.path, mode: .readWrite)
    }

    /// SQLite's own last commit frame (`mxFrame`): the "log" column of a passive checkpoint on the copy.
    public func walLastCommitFrame() throws -> Int {
        let row = try rows("PRAGMA wal_checkpoint(PASSIVE)").first
        return row?[1].int ?? -1
    }

    /// Rows of `sql` on the copy. Use these (not `connection` on a temporary value): the copy's
    /// folder is removed when the oracle is released, which may be right after its last use.
    public func rows(_ sql: String, _ arguments: [DatabaseValue] = []) throws -> [Row] {
        try withExtendedLifetime(self) { try connection.rows(sql, arguments) }
    }

    public func scalar(_ sql: String, _ arguments: [DatabaseValue] = []) throws -> DatabaseValue {
        try withExtendedLifetime(self) { try connection.scalar(sql, arguments) }
    }

    public func count(_ table: String, where condition: String? = nil) throws -> Int {
        try scalar("SELECT count(*) FROM \(Identifier.quoted(table))" + (condition.map { " WHERE \($0)" } ?? "")).int ?? -1
    }

    /// Z_PRIMARYKEY as SQLite holds it: Z_ENT → (name, super, max), in Z_ENT order.
    public func primaryKeys() throws -> [(ent: Int, name: String, superEnt: Int, max: Int)] {
        try rows("SELECT Z_ENT, Z_NAME, Z_SUPER, Z_MAX FROM Z_PRIMARYKEY ORDER BY Z_ENT").map {
            ($0[0].int ?? -1, $0[1].string ?? "", $0[2].int ?? -1, $0[3].int ?? -1)
        }
    }

    /// Z_METADATA's UUID and its plist as Foundation's own reader decodes it.
    public func metadata() throws -> (uuid: String?, plist: [String: Any]) {
        let row = try rows("SELECT Z_UUID, Z_PLIST FROM Z_METADATA").first
        var plist: [String: Any] = [:]
        if case .blob(let data)? = row?[1] {
            plist = (try PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any]) ?? [:]
        }
        return (row?[0].string, plist)
    }

    /// The primary keys of `table`, sorted.
    public func keys(_ table: String) throws -> [Int] {
        try rows("SELECT Z_PK FROM \(Identifier.quoted(table)) ORDER BY Z_PK").compactMap { $0[0].int }
    }

    /// Which commit frames SQLite itself accepts: for each candidate `c` (all of them, or those at
    /// the positions in `checking`), SQLite on a copy whose WAL is cut after frame `c` must report
    /// mxFrame `c`, and cut after `c - 1` the previous candidate. Returns the disagreements in
    /// words (empty when SQLite agrees with every one).
    public static func disagreements(commitFrames: [Int], of store: URL, checking positions: [Int]? = nil) throws -> [String] {
        var problems: [String] = []
        for i in positions ?? Array(commitFrames.indices) where commitFrames.indices.contains(i) {
            let c = commitFrames[i], previous = i == 0 ? 0 : commitFrames[i - 1]
            let at = try SQLiteOracle(copying: store, wal: .frames(c)).walLastCommitFrame()
            if at != c { problems.append("WAL cut after frame \(c): SQLite's last commit is frame \(at)") }
            let before = try SQLiteOracle(copying: store, wal: .frames(c - 1)).walLastCommitFrame()
            if before != previous { problems.append("WAL cut after frame \(c - 1): SQLite's last commit is frame \(before), not \(previous)") }
        }
        return problems
    }
}
