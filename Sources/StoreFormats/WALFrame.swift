import Foundation

/// One valid frame of a WAL: a page image plus its 24-byte frame header.
///
/// Only the header facts and the page's position are kept, so a WAL of
/// any size costs one small struct per frame; the page bytes stay in the
/// caller's `Data`.
public struct WALFrame: Hashable, Sendable {
    /// Length of the frame header that precedes each page image.
    public static let headerLength = 24

    /// 1-based frame number, as SQLite numbers frames.
    public let index: Int
    /// The database page this frame holds (never 0 for a valid frame).
    public let pageNumber: UInt32
    /// For a commit frame, the database size in pages after the commit; otherwise 0.
    public let commitSize: UInt32
    /// Byte offset of the page image (after the frame header) in the WAL file.
    public let pageOffset: Int
    /// The cumulative checksum stored in (and verified for) this frame.
    public let checksum: WALChecksum

    /// Whether this frame ends a transaction.
    public var isCommit: Bool { commitSize != 0 }

    public init(index: Int, pageNumber: UInt32, commitSize: UInt32, pageOffset: Int, checksum: WALChecksum) {
        self.index = index
        self.pageNumber = pageNumber
        self.commitSize = commitSize
        self.pageOffset = pageOffset
        self.checksum = checksum
    }
}

/// Why the walk over a WAL's frames stopped; frames from the stop point on
/// are not used by SQLite, even if some of them would validate on their own.
public enum WALStopReason: Hashable, Sendable, CustomStringConvertible {
    /// Every whole frame in the file was valid and no bytes were left over.
    case endOfFile
    /// Frame `frame` is cut short: only `bytesPresent` of its bytes are in the file.
    case partialFrame(frame: Int, bytesPresent: Int)
    /// Frame `frame` carries salts that differ from the header's: it belongs
    /// to an earlier WAL generation (after a reset) or is damaged.
    case saltMismatch(frame: Int)
    /// Frame `frame` names page 0, which no database has.
    case zeroPageNumber(frame: Int)
    /// Frame `frame` fails the cumulative checksum: its bytes (or an earlier
    /// frame's) were changed or never fully written.
    case checksumMismatch(frame: Int)

    /// The 1-based number of the first frame not used, or nil at a clean end of file.
    public var frame: Int? {
        switch self {
        case .endOfFile: nil
        case .partialFrame(let frame, _), .saltMismatch(let frame),
             .zeroPageNumber(let frame), .checksumMismatch(let frame): frame
        }
    }

    public var description: String {
        switch self {
        case .endOfFile:
            "All frames in the file are valid."
        case .partialFrame(let frame, let bytes):
            "Frame \(frame) is incomplete: only \(bytes) of its bytes are in the file."
        case .saltMismatch(let frame):
            "Frame \(frame) has salts that differ from the WAL header's (left from an earlier WAL generation, or damaged)."
        case .zeroPageNumber(let frame):
            "Frame \(frame) names page 0, which is invalid."
        case .checksumMismatch(let frame):
            "Frame \(frame) fails its checksum."
        }
    }
}

/// A committed transaction in a WAL: the frames from just after the
/// previous commit frame up to and including its own commit frame.
public struct WALTransaction: Hashable, Sendable {
    /// 1-based commit ordinal (the n-th commit in the WAL).
    public let number: Int
    /// The first frame written by this transaction.
    public let firstFrame: Int
    /// The commit frame that ends it.
    public let commitFrame: Int
    /// Number of frames, `commitFrame - firstFrame + 1`.
    public let frameCount: Int
    /// The distinct pages it wrote, in ascending order.
    public let pages: [UInt32]
    /// Database size in pages once it is committed.
    public let databaseSizeInPages: Int

    public init(number: Int, firstFrame: Int, commitFrame: Int, frameCount: Int, pages: [UInt32], databaseSizeInPages: Int) {
        self.number = number
        self.firstFrame = firstFrame
        self.commitFrame = commitFrame
        self.frameCount = frameCount
        self.pages = pages
        self.databaseSizeInPages = databaseSizeInPages
    }
}
