import Foundation
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
        #expect(data.count == 32768)
        let index = try SharedMemoryIndex(data: data)
        let wal = WAL(data: try Fixture.data("swiftdata-resources/default.store-wal"))

        #expect(index.iVersion == 3_007_000)
        #expect(index.isInit)
        #expect(!index.bigEndianChecksum)
        #expect(index.pageSize == 4096)
        #expect(index.headerChecksumValid)
        #expect(index.copiesMatch)
        #expect(index.isIntact)
        #expect(index.salt1 == 0xe1f3_7357)
        #expect(index.salt2 == 0xaa79_144c)
        #expect(index.salt1 == wal.salt1 && index.salt2 == wal.salt2)
        // The index stopped at frame 29 while the WAL went on to 355 frames:
        // the -shm was captured earlier than the WAL, so it does not agree.
        #expect(index.mxFrame == 29)
        #expect(index.nPage == 24)
        #expect(index.iChange == 3)
        #expect(index.nBackfill == 0)
        #expect(index.nBackfillAttempted == 0)
        #expect(index.readMarks == [0, 29, 0xFFFF_FFFF, 0xFFFF_FFFF, 0xFFFF_FFFF])
        #expect(!index.agrees(with: wal))
        // Its frame checksum is the WAL's own cumulative checksum at frame 29.
        #expect(wal.frame(29)?.isCommit == true)
        #expect(wal.frame(29)?.checksum == index.frameChecksum)
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
        let walBuilder = SyntheticWALTests.sample()
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
        var random = WALTestSupport.Random(seed: 5)
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
