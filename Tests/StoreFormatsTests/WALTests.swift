import Foundation
import StoreTestSupport
import Testing
@testable import StoreFormats

// MARK: - The real SwiftData WAL

@Suite("WAL: the real SwiftData store")
struct RealWALTests {
    @Test("matches the WAL's own frame headers (an independent reader) and SQLite's last commit",
          .enabled(if: WALTestSupport.RealFixture.isAvailable, WALTestSupport.RealFixture.skipReason))
    func groundTruth() throws {
        let data = try WALTestSupport.RealFixture.data("swiftdata-resources/default.store-wal")
        let wal = WAL(data: data)

        #expect(wal.headerProblem == nil)
        #expect(wal.isUsable)
        #expect(wal.pageSize == 4096)
        #expect(wal.magic == WALHeader.littleEndianMagic)
        #expect(wal.bigEndianChecksums == false)
        #expect(wal.formatVersion == 3_007_000)
        let truth = try #require(WALFrameOracle(data: data))
        // SQLite itself, on a copy of the store family without the -shm: its recovered mxFrame.
        let store = try WALTestSupport.RealFixture.url("swiftdata-resources/default.store")
        #expect(try SQLiteOracle(copying: store).walLastCommitFrame() == truth.lastCommitFrame)
        #expect(wal.formatVersion == truth.formatVersion)
        #expect(wal.checkpointSequence == truth.checkpointSequence)
        #expect(wal.salt1 == truth.salt1)
        #expect(wal.salt2 == truth.salt2)
        #expect(wal.validFrameCount == truth.validFrames)
        #expect(wal.commitFrames == truth.commitFrames)
        #expect(wal.lastCommitFrame == truth.lastCommitFrame)
        #expect(wal.stopReason == .endOfFile)
        #expect(wal.uncommittedFrameCount == truth.uncommittedFrames)
        #expect(wal.totalFrameSlots == truth.frameSlots)
        #expect(wal.staleFrameCount == truth.frameSlots - truth.validFrames)
        #expect(data.count == 32 + truth.frameSlots * (24 + truth.pageSize), "whole frames only")

        // Transactions tile the committed frames exactly.
        #expect(wal.transactions.map(\.commitFrame) == truth.commitFrames)
        #expect(wal.transactions.map(\.databaseSizeInPages) == truth.commitSizes)
        #expect(wal.transactions.map { $0.pages.map(Int.init) } == truth.pagesByCommit)
        #expect(wal.transactions.reduce(0) { $0 + $1.frameCount } == truth.lastCommitFrame)
        #expect(wal.transactions.first?.firstFrame == 1)
        for (previous, next) in zip(wal.transactions, wal.transactions.dropFirst()) {
            #expect(next.firstFrame == previous.commitFrame + 1)
            #expect(next.number == previous.number + 1)
        }
        for transaction in wal.transactions {
            #expect(transaction.pages == Array(Set(transaction.pages)).sorted())
            #expect(!transaction.pages.isEmpty)
        }
        let last = try #require(wal.transactions.last)
        #expect(wal.databaseSizeInPages == last.databaseSizeInPages)
        #expect(wal.databaseSizeInPages > 0)

        // The page map: every page maps to its last frame at or before the commit.
        let latest = wal.latestFrames()
        #expect(latest[1] != nil)
        for (page, frame) in latest {
            #expect(frame.pageNumber == page)
            #expect(frame.index <= wal.lastCommitFrame)
            #expect(!wal.frames.contains { $0.pageNumber == page && $0.index > frame.index })
        }
        let afterFirst = wal.latestFrames(upToCommit: 1)
        #expect(afterFirst.values.allSatisfy { $0.index <= wal.commitFrames[0] })
        #expect(wal.latestFrames(upToCommit: 0).isEmpty)
        #expect(wal.latestFrames(upToCommit: truth.commitFrames.count + 1).isEmpty)

        print("""
            real WAL: \(wal.validFrameCount) frames, \(wal.commitFrames.count) commits, \
            mxFrame \(wal.lastCommitFrame), database size \(wal.databaseSizeInPages) pages, \
            \(latest.count) distinct pages
            """)
    }

    @Test("a flipped byte in a real frame stops the walk there",
          .enabled(if: WALTestSupport.RealFixture.isAvailable, WALTestSupport.RealFixture.skipReason))
    func mutatedInMemory() throws {
        var data = try WALTestSupport.RealFixture.data("swiftdata-resources/default.store-wal")
        let original = WAL(data: data)
        // Byte 100 of frame 200's page (a copy in memory; the file is untouched).
        let offset = 32 + 199 * (24 + 4096) + 24 + 100
        data[offset] ^= 0xFF
        let wal = WAL(data: data)
        #expect(wal.stopReason == .checksumMismatch(frame: 200))
        #expect(wal.validFrameCount == 199)
        #expect(wal.lastCommitFrame == original.commitFrames.last { $0 < 200 })
        #expect(wal.staleFrameCount == original.totalFrameSlots - 199)
    }

    @Test("every truncation of the real WAL is handled",
          .enabled(if: WALTestSupport.RealFixture.isAvailable, WALTestSupport.RealFixture.skipReason))
    func truncations() throws {
        let data = try WALTestSupport.RealFixture.data("swiftdata-resources/default.store-wal")
        let frameSize = 24 + 4096
        var lengths = Array(0...40) + Array(stride(from: 41, to: 3 * frameSize, by: 37))
        var random = SeededRandom(seed: 7)
        for _ in 0..<200 { lengths.append(Int(random.next() % UInt64(data.count))) }
        for length in lengths {
            let wal = WAL(data: data.prefix(length))
            if length < 32 {
                #expect(wal.headerProblem == .tooShort(length: length))
                continue
            }
            let whole = (length - 32) / frameSize
            let rest = (length - 32) % frameSize
            #expect(wal.validFrameCount == whole)
            #expect(wal.stopReason == (rest == 0 ? .endOfFile : .partialFrame(frame: whole + 1, bytesPresent: rest)))
            #expect(wal.lastCommitFrame <= wal.validFrameCount)
        }
    }
}

// MARK: - Synthetic WALs

@Suite("WAL: synthetic files")
struct SyntheticWALTests {
    typealias Builder = WALTestSupport.SyntheticWAL

    @Test("a well-formed WAL: frames, commits, transactions", arguments: [false, true])
    func wellFormed(bigEndian: Bool) {
        let builder = Builder.sample(bigEndian: bigEndian)
        let wal = WAL(data: builder.data())
        #expect(wal.headerProblem == nil)
        #expect(wal.bigEndianChecksums == bigEndian)
        #expect(wal.magic == (bigEndian ? 0x377f_0683 : 0x377f_0682))
        #expect(wal.pageSize == 512)
        #expect(wal.salt1 == builder.salt1)
        #expect(wal.salt2 == builder.salt2)
        #expect(wal.checkpointSequence == builder.checkpointSequence)
        #expect(wal.validFrameCount == 6)
        #expect(wal.commitFrames == [2, 4, 6])
        #expect(wal.lastCommitFrame == 6)
        #expect(wal.databaseSizeInPages == 4)
        #expect(wal.stopReason == .endOfFile)
        #expect(wal.totalFrameSlots == 6)
        #expect(wal.staleFrameCount == 0)
        #expect(wal.frames.map(\.pageNumber) == [1, 2, 3, 2, 4, 1])
        #expect(wal.frames.map(\.index) == [1, 2, 3, 4, 5, 6])
        #expect(wal.frames[1].pageOffset == 32 + (24 + 512) + 24)
        #expect(wal.transactions == [
            WALTransaction(number: 1, firstFrame: 1, commitFrame: 2, frameCount: 2, pages: [1, 2], databaseSizeInPages: 3),
            WALTransaction(number: 2, firstFrame: 3, commitFrame: 4, frameCount: 2, pages: [2, 3], databaseSizeInPages: 4),
            WALTransaction(number: 3, firstFrame: 5, commitFrame: 6, frameCount: 2, pages: [1, 4], databaseSizeInPages: 4),
        ])
        #expect(wal.latestFrames().mapValues(\.index) == [1: 6, 2: 4, 3: 3, 4: 5])
        #expect(wal.latestFrames(upToCommit: 1).mapValues(\.index) == [1: 1, 2: 2])
        #expect(wal.latestFrames(upToCommit: 2).mapValues(\.index) == [1: 1, 2: 4, 3: 3])
    }

    @Test("frames after the last commit are valid but uncommitted")
    func uncommittedTail() {
        var builder = Builder.sample()
        builder.frames += [.init(page: 5, commit: 0), .init(page: 6, commit: 0)]
        let wal = WAL(data: builder.data())
        #expect(wal.validFrameCount == 8)
        #expect(wal.lastCommitFrame == 6)
        #expect(wal.uncommittedFrameCount == 2)
        #expect(wal.transactions.count == 3)
        #expect(wal.latestFrames()[5] == nil)
    }

    @Test("a WAL with no commit at all leaves mxFrame at 0")
    func noCommit() {
        var builder = Builder()
        builder.frames = [.init(page: 1, commit: 0), .init(page: 2, commit: 0)]
        let wal = WAL(data: builder.data())
        #expect(wal.validFrameCount == 2)
        #expect(wal.lastCommitFrame == 0)
        #expect(wal.databaseSizeInPages == 0)
        #expect(wal.uncommittedFrameCount == 2)
        #expect(wal.transactions.isEmpty)
        #expect(wal.latestFrames().isEmpty)
    }

    @Test("a frame salt that differs stops the walk at that frame", arguments: [1, 2, 3, 5, 6])
    func badFrameSalt(frame k: Int) {
        var builder = Builder.sample()
        builder.frames[k - 1].salt1 = builder.salt1 &+ 1
        let wal = WAL(data: builder.data())
        #expect(wal.stopReason == .saltMismatch(frame: k))
        #expect(wal.validFrameCount == k - 1)
        #expect(wal.lastCommitFrame == [2, 4, 6].last { $0 < k } ?? 0)
        #expect(wal.staleFrameCount == 6 - (k - 1))
    }

    @Test("salt-2 is checked as well as salt-1")
    func badFrameSalt2() {
        var builder = Builder.sample()
        builder.frames[3].salt2 = 0
        let wal = WAL(data: builder.data())
        #expect(wal.stopReason == .saltMismatch(frame: 4))
        #expect(wal.lastCommitFrame == 2)
    }

    @Test("a bad header checksum makes SQLite ignore the whole WAL")
    func badHeaderChecksum() {
        var bytes = Builder.sample().bytes()
        bytes[27] ^= 0x01
        let wal = WAL(data: Data(bytes))
        guard case .checksumMismatch = wal.headerProblem else {
            Issue.record("expected a header checksum mismatch, got \(String(describing: wal.headerProblem))")
            return
        }
        #expect(wal.headerProblem?.sqliteIgnoresWAL == true)
        #expect(!wal.isUsable)
        #expect(wal.frames.isEmpty)
        #expect(wal.stopReason == nil)
        #expect(wal.lastCommitFrame == 0)
        #expect(wal.header?.salt1 == Builder.sample().salt1)
        #expect(wal.totalFrameSlots == 6)
        #expect(wal.staleFrameCount == 6)
    }

    @Test("a header salt changed without fixing the checksum is a header problem")
    func alteredHeaderSalt() {
        var bytes = Builder.sample().bytes()
        bytes[19] ^= 0x40
        let wal = WAL(data: Data(bytes))
        guard case .checksumMismatch = wal.headerProblem else {
            Issue.record("expected a header checksum mismatch")
            return
        }
        // The same change with the checksum fixed: every frame now has the wrong salt.
        var builder = Builder.sample()
        builder.headerSalt1Override = builder.salt1 ^ 0x40
        let fixed = WAL(data: builder.data())
        #expect(fixed.headerProblem == nil)
        #expect(fixed.stopReason == .saltMismatch(frame: 1))
        #expect(fixed.validFrameCount == 0)
        #expect(fixed.staleFrameCount == 6)
    }

    @Test("a WAL cut mid-frame ends with a partial frame")
    func truncatedMidFrame() {
        let bytes = Builder.sample().bytes()
        let cut = bytes.count - 1000 + 536  // 464 bytes short of the end: inside frame 6
        let wal = WAL(data: Data(bytes.prefix(cut)))
        #expect(wal.stopReason == .partialFrame(frame: 6, bytesPresent: 536 - 464))
        #expect(wal.validFrameCount == 5)
        #expect(wal.lastCommitFrame == 4)
        #expect(wal.uncommittedFrameCount == 1)
        #expect(wal.totalFrameSlots == 5)
        #expect(wal.staleFrameCount == 0)
    }

    @Test("a flipped page byte fails the checksum and later frames are not used")
    func flippedPageByte() {
        let builder = Builder.sample()
        var bytes = builder.bytes()
        bytes[builder.pageOffset(frame: 3) + 17] ^= 0x20
        let wal = WAL(data: Data(bytes))
        #expect(wal.stopReason == .checksumMismatch(frame: 3))
        #expect(wal.validFrameCount == 2)
        #expect(wal.lastCommitFrame == 2)
        #expect(wal.transactions.count == 1)
        #expect(wal.staleFrameCount == 4)
    }

    @Test("a changed commit size fails the checksum (frame-header bytes 0..7 are covered)")
    func changedCommitSize() {
        let builder = Builder.sample()
        var bytes = builder.bytes()
        bytes[builder.pageOffset(frame: 4) - 24 + 7] ^= 0x01
        let wal = WAL(data: Data(bytes))
        #expect(wal.stopReason == .checksumMismatch(frame: 4))
        #expect(wal.lastCommitFrame == 2)
    }

    @Test("the stored frame checksum's salts are not part of the checksum")
    func saltsNotInChecksum() {
        // Same frames, different salts: both must validate with salts in place.
        var other = Builder.sample()
        other.salt1 = 1
        other.salt2 = 2
        #expect(WAL(data: other.data()).validFrameCount == 6)
    }

    @Test("page number 0 stops the walk")
    func zeroPageNumber() {
        var builder = Builder.sample()
        builder.frames[4].page = 0
        let wal = WAL(data: builder.data())
        #expect(wal.stopReason == .zeroPageNumber(frame: 5))
        #expect(wal.validFrameCount == 4)
        #expect(wal.lastCommitFrame == 4)
    }

    @Test("checksums of the wrong word order do not validate")
    func wrongWordOrder() {
        var bytes = Builder.sample(bigEndian: true).bytes()
        bytes[3] = 0x82  // claim little-endian words; header checksum no longer matches
        guard case .checksumMismatch = WAL(data: Data(bytes)).headerProblem else {
            Issue.record("expected a header checksum mismatch")
            return
        }
    }

    @Test("a WAL reset leaves stale frames from the previous generation")
    func resetLeavesStaleFrames() {
        var first = Builder()
        first.salt1 = 0
        first.salt2 = 0x4bc2_b76c
        first.frames = (1...16).map { .init(page: UInt32($0 % 7 + 1), commit: $0 % 4 == 0 ? 7 : 0) }
        var second = Builder()
        second.salt1 = 1
        second.salt2 = 0x7b41_d109
        second.checkpointSequence = 1
        second.frames = [.init(page: 1, commit: 7)]
        let newer = second.bytes()
        let older = first.bytes()
        let bytes = newer + older[newer.count...]

        let wal = WAL(data: Data(bytes))
        #expect(wal.headerProblem == nil)
        #expect(wal.salt1 == 1)
        #expect(wal.validFrameCount == 1)
        #expect(wal.lastCommitFrame == 1)
        #expect(wal.databaseSizeInPages == 7)
        #expect(wal.uncommittedFrameCount == 0)
        #expect(wal.stopReason == .saltMismatch(frame: 2))
        #expect(wal.totalFrameSlots == 16)
        #expect(wal.staleFrameCount == 15)
    }

    @Test("header problems are reported in SQLite's order")
    func headerProblems() {
        #expect(WAL(data: Data()).headerProblem == .tooShort(length: 0))
        #expect(WAL(data: Data(count: 31)).headerProblem == .tooShort(length: 31))
        #expect(WAL(data: Data(count: 31)).header == nil)
        #expect(WAL(data: Data(count: 32)).headerProblem == .badMagic(0))

        var badSize = Builder.sample()
        badSize.pageSize = 1000
        badSize.frames = []
        #expect(WAL(data: badSize.data()).headerProblem == .invalidPageSize(1000))
        #expect(WAL(data: badSize.data()).totalFrameSlots == 0)

        var tooBig = badSize
        tooBig.pageSize = 131_072
        #expect(WAL(data: tooBig.data()).headerProblem == .invalidPageSize(131_072))

        var largest = Builder.sample()
        largest.pageSize = 65536
        #expect(WAL(data: largest.data()).validFrameCount == 6)

        var version = Builder.sample()
        version.formatVersion = 3_007_001
        let wal = WAL(data: version.data())
        #expect(wal.headerProblem == .unsupportedVersion(3_007_001))
        #expect(wal.headerProblem?.sqliteIgnoresWAL == false)
        #expect(wal.frames.isEmpty)
    }

    @Test("a WAL that is only a header has no frames and stops cleanly")
    func headerOnly() {
        var builder = Builder()
        builder.frames = []
        let wal = WAL(data: builder.data())
        #expect(wal.headerProblem == nil)
        #expect(wal.stopReason == .endOfFile)
        #expect(wal.validFrameCount == 0)
        #expect(wal.totalFrameSlots == 0)
    }

    @Test("parsing a Data slice with a non-zero start index")
    func dataSlice() {
        let bytes = [UInt8](repeating: 0xAB, count: 13) + Builder.sample().bytes()
        let slice = Data(bytes)[13...]
        #expect(slice.startIndex == 13)
        let wal = WAL(data: slice)
        #expect(wal.validFrameCount == 6)
        #expect(wal.frames[0].pageOffset == 32 + 24)
    }

    @Test("stop reasons and header problems describe themselves in one sentence")
    func descriptions() {
        let texts = [
            WALStopReason.endOfFile.description,
            WALStopReason.partialFrame(frame: 3, bytesPresent: 10).description,
            WALStopReason.saltMismatch(frame: 2).description,
            WALStopReason.zeroPageNumber(frame: 2).description,
            WALStopReason.checksumMismatch(frame: 2).description,
            WALHeaderProblem.tooShort(length: 3).description,
            WALHeaderProblem.badMagic(0).description,
            WALHeaderProblem.invalidPageSize(3).description,
            WALHeaderProblem.checksumMismatch(stored: .zero, computed: .zero).description,
            WALHeaderProblem.unsupportedVersion(1).description,
        ]
        for text in texts {
            #expect(text.hasSuffix("."))
            #expect(!text.isEmpty && text.first?.isUppercase == true)
        }
        #expect(WALStopReason.partialFrame(frame: 3, bytesPresent: 10).frame == 3)
        #expect(WALStopReason.endOfFile.frame == nil)
    }
}

// MARK: - Garbage in, no crash out

@Suite("WAL: garbage input never crashes")
struct WALFuzzTests {
    @Test("random bytes, with and without a valid-looking header")
    func randomBytes() {
        var random = SeededRandom(seed: 42)
        for round in 0..<400 {
            let length = Int(random.next() % 5000)
            var bytes = (0..<length).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            if round % 2 == 0, bytes.count >= 32 {
                // A plausible header: magic, version, small page size, fixed checksum.
                var header = WALTestSupport.SyntheticWAL(bigEndian: round % 4 == 0)
                header.pageSize = 512
                header.frames = []
                bytes.replaceSubrange(0..<32, with: header.bytes())
            }
            let wal = WAL(data: Data(bytes))
            #expect(wal.validFrameCount <= wal.totalFrameSlots)
            #expect(wal.lastCommitFrame <= wal.validFrameCount)
            #expect(wal.staleFrameCount >= 0)
            _ = wal.latestFrames()
            _ = wal.transactions
        }
    }

    @Test("random single-byte changes in a valid WAL", .enabled(if: ProjectPaths.hasRealFixtures, Comment(rawValue: ProjectPaths.realFixturesMissing)))
    func mutations() {
        let builder = WALTestSupport.SyntheticWAL.sample()
        let original = builder.bytes()
        var random = SeededRandom(seed: 9)
        for _ in 0..<1000 {
            var bytes = original
            let position = Int(random.next() % UInt64(bytes.count))
            bytes[position] ^= UInt8(truncatingIfNeeded: random.next() | 1)
            let wal = WAL(data: Data(bytes))
            #expect(wal.validFrameCount <= 6)
            if position >= 32 {
                // A change inside a frame never lets that frame or later ones through.
                let frame = (position - 32) / (24 + 512) + 1
                #expect(wal.validFrameCount < frame)
            }
        }
    }
}

// MARK: - Test support (independent of the code under test)

