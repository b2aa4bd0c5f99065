import Foundation
import StoreTestSupport
import Testing
@testable import StoreFormats

@Suite("SharedMemoryIndex")
struct SharedMemoryIndexTests {
    typealias Fixture = WALTestSupport.RealFixture
    typealias Builder = WALTestSupport.SyntheticWAL

    /// A `-shm` header as a little-endian writer would lay it out, with its
    /// checksum computed by the tests' own implementation.
    struct SyntheticIndex {
        var iVersion: UInt32 = 3_007_000
        var iChange: UInt32 = 5
        var isInit: UInt8 = 1
        var bigEndianChecksum: UInt8 = 0
        var rawPageSize: UInt16 = 512
        var mxFrame: UInt32 = 6
        var nPage: UInt32 = 4
        var frameChecksum: (UInt32, UInt32) = (0x0102_0304, 0x0506_0708)
        var salt1: UInt32 = Builder().salt1
        var salt2: UInt32 = Builder().salt2
        var nBackfill: UInt32 = 2
        var readMarks: [UInt32] = [0, 6, 0xFFFF_FFFF, 0xFFFF_FFFF, 0xFFFF_FFFF]
        var nBackfillAttempted: UInt32 = 3

        func bytes() -> [UInt8] {
            typealias B = WALTestSupport.SyntheticWAL
            var header: [UInt8] = B.le(iVersion) + [0, 0, 0, 0] + B.le(iChange)
            header += [isInit, bigEndianChecksum, UInt8(rawPageSize & 0xFF), UInt8(rawPageSize >> 8)]
            header += B.le(mxFrame) + B.le(nPage) + B.le(frameChecksum.0) + B.le(frameChecksum.1)
            header += B.be(salt1) + B.be(salt2)  // raw copy of the WAL header's bytes
            var s0: UInt32 = 0
            var s1: UInt32 = 0
            B.checksum(header, bigEndian: false, &s0, &s1)
            header += B.le(s0) + B.le(s1)
            var out = header + header
            out += B.le(nBackfill)
            for mark in readMarks { out += B.le(mark) }
            out += [UInt8](repeating: 0, count: 8)  // lock bytes
            out += B.le(nBackfillAttempted) + [0, 0, 0, 0]
            return out + [UInt8](repeating: 0, count: 32768 - out.count)
        }
    }

    @Test("the real -shm parses; it is older than the WAL",
          .enabled(if: Fixture.isAvailable, Fixture.skipReason))
    func realIndex() throws {
        let data = try Fixture.data("swiftdata-resources/default.store-shm")
        // A -shm grows in 32 KB regions; its header fields are read here at SQLite's offsets too.
        #expect(data.count > 0 && data.count % 32768 == 0)
        let index = try SharedMemoryIndex(data: data)
        let walData = try Fixture.data("swiftdata-resources/default.store-wal")
        let wal = WAL(data: walData)
        let truth = try #require(SharedMemoryOracle(data: data))
        let frames = try #require(WALFrameOracle(data: walData))

        #expect(index.iVersion == truth.iVersion)
        #expect(index.isInit)
        #expect(!index.bigEndianChecksum)
        #expect(index.pageSize == frames.pageSize)
        #expect(index.headerChecksumValid)
        #expect(index.copiesMatch == truth.copiesMatch && truth.copiesMatch)
        #expect(index.isIntact)
        #expect(index.salt1 == truth.salt1 && index.salt2 == truth.salt2)
        #expect(index.salt1 == frames.salt1 && index.salt2 == frames.salt2)
        // Apple's copy of the index stopped at an earlier commit than the WAL's last (captured
        // earlier than the WAL); whether it agrees is read from its header, not assumed.
        #expect(index.mxFrame == truth.mxFrame)
        #expect(truth.mxFrame <= UInt32(frames.lastCommitFrame))
        #expect(index.nPage == truth.nPage)
        #expect(frames.commitFrames.firstIndex(of: Int(truth.mxFrame)).map { frames.commitSizes[$0] } == Int(truth.nPage),
                "nPage is the database size after the commit at mxFrame")
        #expect(index.iChange == truth.iChange)
        #expect(index.nBackfill == truth.nBackfill)
        #expect(index.nBackfillAttempted == truth.nBackfillAttempted)
        #expect(index.readMarks == truth.readMarks)
        #expect(index.agrees(with: wal) == truth.agrees(with: frames))
        // Its frame checksum is the WAL's own cumulative checksum at that frame.
        #expect(wal.frame(Int(truth.mxFrame))?.isCommit == true)
        #expect(wal.frame(Int(truth.mxFrame))?.checksum == index.frameChecksum)
        print("""
            real -shm: iVersion \(index.iVersion), iChange \(index.iChange), mxFrame \(index.mxFrame) \
            (WAL mxFrame \(wal.lastCommitFrame)), nPage \(index.nPage), nBackfill \(index.nBackfill), \
            readMarks \(index.readMarks), checksum valid \(index.headerChecksumValid), copies match \(index.copiesMatch)
            """)
    }

    @Test("fields are read at their offsets, nBackfill at 96")
    func fields() throws {
        let synthetic = SyntheticIndex()
        let index = try SharedMemoryIndex(data: Data(synthetic.bytes()))
        #expect(index.iVersion == 3_007_000)
        #expect(index.iChange == 5)
        #expect(index.isInit)
        #expect(!index.bigEndianChecksum)
        #expect(index.rawPageSize == 512)
        #expect(index.pageSize == 512)
        #expect(index.mxFrame == 6)
        #expect(index.nPage == 4)
        #expect(index.frameChecksum == WALChecksum(first: 0x0102_0304, second: 0x0506_0708))
        #expect(index.salt1 == synthetic.salt1)
        #expect(index.salt2 == synthetic.salt2)
        #expect(index.headerChecksumValid)
        #expect(index.copiesMatch)
        #expect(index.nBackfill == 2)
        #expect(index.readMarks == synthetic.readMarks)
        #expect(index.nBackfillAttempted == 3)
    }

    @Test("page size 1 means 65536; others are checked")
    func pageSize() throws {
        var synthetic = SyntheticIndex()
        synthetic.rawPageSize = 1
        #expect(try SharedMemoryIndex(data: Data(synthetic.bytes())).pageSize == 65536)
        synthetic.rawPageSize = 1000
        #expect(try SharedMemoryIndex(data: Data(synthetic.bytes())).pageSize == nil)
    }

    @Test("a torn write or a bad checksum is detected")
    func integrity() throws {
        var torn = SyntheticIndex().bytes()
        torn[48 + 16] ^= 0x01  // second copy's mxFrame
        let tornIndex = try SharedMemoryIndex(data: Data(torn))
        #expect(!tornIndex.copiesMatch)
        #expect(tornIndex.headerChecksumValid)
        #expect(!tornIndex.isIntact)

        var bad = SyntheticIndex().bytes()
        bad[20] ^= 0x01  // first copy's nPage; checksum no longer matches
        let badIndex = try SharedMemoryIndex(data: Data(bad))
        #expect(!badIndex.headerChecksumValid)
        #expect(!badIndex.copiesMatch)
    }

    @Test("agrees with a WAL when mxFrame and salts match")
    func agreement() throws {
        let walBuilder = WALTestSupport.SyntheticWAL.sample()
        let wal = WAL(data: walBuilder.data())
        #expect(try SharedMemoryIndex(data: Data(SyntheticIndex().bytes())).agrees(with: wal))

        var stale = SyntheticIndex()
        stale.mxFrame = 4
        #expect(try !SharedMemoryIndex(data: Data(stale.bytes())).agrees(with: wal))

        var otherGeneration = SyntheticIndex()
        otherGeneration.salt1 = walBuilder.salt1 &+ 1
        #expect(try !SharedMemoryIndex(data: Data(otherGeneration.bytes())).agrees(with: wal))

        var otherSalt2 = SyntheticIndex()
        otherSalt2.salt2 = 0
        #expect(try !SharedMemoryIndex(data: Data(otherSalt2.bytes())).agrees(with: wal))

        var ignored = walBuilder.bytes()
        ignored[25] ^= 0xFF
        #expect(try !SharedMemoryIndex(data: Data(SyntheticIndex().bytes())).agrees(with: WAL(data: Data(ignored))))
    }

    @Test("short input is a typed error")
    func tooShort() {
        #expect(throws: SharedMemoryIndexError.tooShort(length: 0)) { try SharedMemoryIndex(data: Data()) }
        #expect(throws: SharedMemoryIndexError.tooShort(length: 135)) {
            try SharedMemoryIndex(data: Data(SyntheticIndex().bytes().prefix(135)))
        }
        #expect(SharedMemoryIndexError.tooShort(length: 3).description.hasSuffix("."))
        #expect((try? SharedMemoryIndex(data: Data(SyntheticIndex().bytes().prefix(136)))) != nil)
    }

    @Test("random bytes never crash")
    func fuzz() {
        var random = SeededRandom(seed: 5)
        for _ in 0..<1000 {
            let length = Int(random.next() % 300)
            let bytes = (0..<length).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            if let index = try? SharedMemoryIndex(data: Data(bytes)) {
                #expect(index.readMarks.count == 5)
                _ = index.agrees(with: WAL(data: Data(bytes)))
            } else {
                #expect(length < SharedMemoryIndex.headerLength)
            }
        }
    }
}
