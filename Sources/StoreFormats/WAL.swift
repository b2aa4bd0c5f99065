import Foundation

/// A parsed `-wal` file, judged exactly the way SQLite's recovery judges it.
///
/// SQLite never reports a damaged WAL: it silently uses the frames up to
/// the first bad one and ignores the rest. This type reproduces that walk
/// so an inspector can say which transactions SQLite will show, which it
/// will drop, and how many older (stale) frames are still in the file.
///
/// Parsing never fails: a header SQLite would not use is reported through
/// `headerProblem`, and then no frame is examined. The page bytes are not
/// kept; `WALFrame.pageOffset` points into the `Data` that was parsed.
///
/// For example:
/// ```swift
/// let wal = WAL(data: walBytes)
/// if let problem = wal.headerProblem { print(problem) }
/// print(wal.validFrameCount, wal.lastCommitFrame, wal.stopReason as Any)
/// ```
///
/// Related SQLite documentation: <https://www.sqlite.org/fileformat2.html#walformat>
public struct WAL: Sendable, Equatable {
    /// The decoded header, or nil when the file is shorter than 32 bytes.
    public let header: WALHeader?
    /// Why SQLite would not use this WAL at all, or nil when the header is good.
    public let headerProblem: WALHeaderProblem?
    /// Length in bytes of the parsed file.
    public let fileSize: Int
    /// The valid frames, in order: frames 1...`validFrameCount`. Includes
    /// frames of an unfinished transaction after `lastCommitFrame`.
    public let frames: [WALFrame]
    /// Why the frame walk stopped; nil when the header was not usable and
    /// no frame was examined.
    public let stopReason: WALStopReason?
    /// The 1-based numbers of the valid commit frames, ascending.
    public let commitFrames: [Int]
    /// The committed transactions, in commit order.
    public let transactions: [WALTransaction]

    /// Parses a whole `-wal` file.
    public init(data: Data) {
        fileSize = data.count
        guard let header = WALHeader(data) else {
            self.header = nil
            headerProblem = .tooShort(length: data.count)
            frames = []
            stopReason = nil
            commitFrames = []
            transactions = []
            return
        }
        self.header = header
        headerProblem = header.problem
        guard headerProblem == nil, let pageSize = header.pageSize else {
            frames = []
            stopReason = nil
            commitFrames = []
            transactions = []
            return
        }
        let walk = Self.walkFrames(data, header: header, pageSize: pageSize)
        frames = walk.frames
        stopReason = walk.stop
        commitFrames = walk.commitFrames
        transactions = Self.makeTransactions(frames: walk.frames)
    }

    // MARK: - Header facts

    /// Page size in bytes, or nil when the header is missing or gives an impossible size.
    public var pageSize: Int? { header?.pageSize }
    /// The header's magic number, or nil when there is no header.
    public var magic: UInt32? { header?.magic }
    /// Whether checksum words are big-endian (magic 0x377f0683); nil without a header.
    public var bigEndianChecksums: Bool? { header?.bigEndianChecksums }
    /// The header's format version (3007000 when valid); nil without a header.
    public var formatVersion: UInt32? { header?.formatVersion }
    /// Number of checkpoints run since the WAL was created; nil without a header.
    public var checkpointSequence: UInt32? { header?.checkpointSequence }
    /// Salt-1; nil without a header.
    public var salt1: UInt32? { header?.salt1 }
    /// Salt-2; nil without a header.
    public var salt2: UInt32? { header?.salt2 }

    /// Whether SQLite would read any frame of this WAL.
    public var isUsable: Bool { headerProblem == nil }

    // MARK: - Frame facts

    /// Number of valid frames (committed or not).
    public var validFrameCount: Int { frames.count }

    /// The last valid commit frame, SQLite's `mxFrame`; 0 when no
    /// transaction in the WAL is committed (readers then see the main file alone).
    public var lastCommitFrame: Int { commitFrames.last ?? 0 }

    /// Database size in pages as of `lastCommitFrame`, or 0 when there is no commit.
    public var databaseSizeInPages: Int { transactions.last?.databaseSizeInPages ?? 0 }

    /// Valid frames after the last commit: an unfinished transaction that readers ignore.
    public var uncommittedFrameCount: Int { frames.count - lastCommitFrame }

    /// Number of whole frames that fit in the file, valid or not; 0 when the
    /// header gives no usable page size.
    public var totalFrameSlots: Int {
        guard let pageSize, fileSize > WALHeader.length else { return 0 }
        return (fileSize - WALHeader.length) / (WALFrame.headerLength + pageSize)
    }

    /// Whole frames in the file that SQLite does not use because they lie at
    /// or after the stop point: left from an earlier WAL generation (after a
    /// reset the file is overwritten from frame 1 but not truncated) or
    /// damaged. When the header is unusable, every whole frame counts.
    public var staleFrameCount: Int { max(0, totalFrameSlots - frames.count) }

    /// The valid frame with 1-based number `index`, or nil.
    public func frame(_ index: Int) -> WALFrame? {
        guard index >= 1, index <= frames.count else { return nil }
        return frames[index - 1]
    }

    /// The commit frame of the `n`-th commit (1-based), or nil when there is no such commit.
    public func commitFrame(ofCommit n: Int) -> Int? {
        guard n >= 1, n <= commitFrames.count else { return nil }
        return commitFrames[n - 1]
    }

    /// Maps each page to the frame a reader sees it in after the `n`-th
    /// commit: the last frame holding the page at or before that commit's
    /// frame. With `nil`, uses `lastCommitFrame` (what SQLite shows now).
    ///
    /// Pages absent from the map come from the main file. An `n` outside
    /// `1...transactions.count` gives an empty map (nothing committed).
    public func latestFrames(upToCommit n: Int? = nil) -> [UInt32: WALFrame] {
        let limit: Int
        if let n {
            guard let frame = commitFrame(ofCommit: n) else { return [:] }
            limit = frame
        } else {
            limit = lastCommitFrame
        }
        var map: [UInt32: WALFrame] = [:]
        for frame in frames.prefix(limit) {
            map[frame.pageNumber] = frame
        }
        return map
    }

    // MARK: - Parsing

    private struct FrameWalk {
        var frames: [WALFrame] = []
        var commitFrames: [Int] = []
        var stop: WALStopReason = .endOfFile
    }

    /// Walks frames from frame 1 and stops where SQLite's `walIndexRecover` stops.
    private static func walkFrames(_ data: Data, header: WALHeader, pageSize: Int) -> FrameWalk {
        var walk = FrameWalk()
        let frameSize = WALFrame.headerLength + pageSize
        let slots = max(0, (data.count - WALHeader.length) / frameSize)
        walk.frames.reserveCapacity(slots)
        let bigEndianWords = header.bigEndianChecksums
        let salt1 = header.salt1
        let salt2 = header.salt2

        data.withUnsafeBytes { (raw: UnsafeRawBufferPointer) in
            var running = header.checksum
            var offset = WALHeader.length
            var index = 1
            while true {
                let remaining = raw.count - offset
                if remaining <= 0 {
                    walk.stop = .endOfFile
                    return
                }
                if remaining < frameSize {
                    walk.stop = .partialFrame(frame: index, bytesPresent: remaining)
                    return
                }
                let pageNumber = bigEndianUInt32(raw, offset)
                let commitSize = bigEndianUInt32(raw, offset + 4)
                guard bigEndianUInt32(raw, offset + 8) == salt1,
                      bigEndianUInt32(raw, offset + 12) == salt2 else {
                    walk.stop = .saltMismatch(frame: index)
                    return
                }
                guard pageNumber != 0 else {
                    walk.stop = .zeroPageNumber(frame: index)
                    return
                }
                // Cumulative: frame-header bytes 0..7 (not the salts), then the page.
                var sum = WALChecksum.fold(raw, offset: offset, count: 8,
                                           bigEndianWords: bigEndianWords, seed: running)
                sum = WALChecksum.fold(raw, offset: offset + WALFrame.headerLength, count: pageSize,
                                       bigEndianWords: bigEndianWords, seed: sum)
                let stored = WALChecksum(first: bigEndianUInt32(raw, offset + 16),
                                         second: bigEndianUInt32(raw, offset + 20))
                guard sum == stored else {
                    walk.stop = .checksumMismatch(frame: index)
                    return
                }
                running = sum
                // A mapped WAL (storelens's copy) gives back what was checksummed as it goes.
                if index & 1023 == 0 { MappedFile.noteBytesRead(1024 * frameSize) }
                walk.frames.append(WALFrame(index: index, pageNumber: pageNumber, commitSize: commitSize,
                                            pageOffset: offset + WALFrame.headerLength, checksum: sum))
                if commitSize != 0 { walk.commitFrames.append(index) }
                offset += frameSize
                index += 1
            }
        }
        return walk
    }

    /// Reads a big-endian u32; callers have checked that 4 bytes are present.
    @inline(__always)
    private static func bigEndianUInt32(_ raw: UnsafeRawBufferPointer, _ offset: Int) -> UInt32 {
        guard offset >= 0, offset <= raw.count - 4 else { return 0 }
        return UInt32(bigEndian: raw.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
    }

    /// Groups valid frames into committed transactions; frames after the
    /// last commit belong to none.
    private static func makeTransactions(frames: [WALFrame]) -> [WALTransaction] {
        var transactions: [WALTransaction] = []
        var first = 1
        var pages = Set<UInt32>()
        for frame in frames {
            pages.insert(frame.pageNumber)
            guard frame.isCommit else { continue }
            transactions.append(WALTransaction(
                number: transactions.count + 1,
                firstFrame: first,
                commitFrame: frame.index,
                frameCount: frame.index - first + 1,
                pages: pages.sorted(),
                databaseSizeInPages: Int(frame.commitSize)))
            first = frame.index + 1
            pages.removeAll(keepingCapacity: true)
        }
        return transactions
    }
}
