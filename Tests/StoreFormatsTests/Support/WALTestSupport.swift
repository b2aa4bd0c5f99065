import Foundation
import StoreTestSupport
import Testing
@testable import StoreFormats

enum WALTestSupport {
    /// The real stores in `../shared/fixtures/real`, found by walking up
    /// from this file to the package root. Read-only: tests never write them.
    enum RealFixture {
        static let directory: URL? = locate()

        static var isAvailable: Bool { directory != nil }

        static let skipReason: Comment =
            Comment(rawValue: ProjectPaths.realFixturesMissing)

        static func url(_ relativePath: String) throws -> URL {
            let directory = try #require(directory)
            return directory.appendingPathComponent(relativePath)
        }

        /// Reads a fixture file (never writes it).
        static func data(_ relativePath: String) throws -> Data {
            try Data(contentsOf: url(relativePath))
        }

        // One locator for the whole suite (StoreTestSupport), so every test reads the same folder.
        private static func locate() -> URL? { ProjectPaths.realFixtures() }
    }

    /// Writes WAL files with a checksum implemented here, byte by byte,
    /// independently of `WALChecksum`.
    struct SyntheticWAL {
        struct Frame {
            var page: UInt32
            var commit: UInt32
            /// Overrides for the salts written into this frame's header.
            var salt1: UInt32?
            var salt2: UInt32?
            /// The page image; generated from the frame and page numbers when nil.
            var contents: [UInt8]?
            init(page: UInt32, commit: UInt32, contents: [UInt8]? = nil) {
                self.page = page
                self.commit = commit
                self.contents = contents
            }
        }

        var bigEndian = false
        var pageSize = 512
        var formatVersion: UInt32 = 3_007_000
        var checkpointSequence: UInt32 = 3
        var salt1: UInt32 = 0x1234_5678
        var salt2: UInt32 = 0x9ABC_DEF0
        /// Writes this salt-1 into the header (with a correct checksum) while
        /// frames keep `salt1`.
        var headerSalt1Override: UInt32?
        var frames: [Frame] = []

        /// Six frames: pages 1,2 (commit, size 3) | 3,2 (commit, size 4) | 4 | 1 (commit, size 4).
        static func sample(bigEndian: Bool = false) -> SyntheticWAL {
            var wal = SyntheticWAL(bigEndian: bigEndian)
            wal.frames = [
                .init(page: 1, commit: 0), .init(page: 2, commit: 3),
                .init(page: 3, commit: 0), .init(page: 2, commit: 4),
                .init(page: 4, commit: 0), .init(page: 1, commit: 4),
            ]
            return wal
        }

        init(bigEndian: Bool = false) { self.bigEndian = bigEndian }

        func data() -> Data { Data(bytes()) }

        /// Offset of frame `frame`'s page (1-based).
        func pageOffset(frame: Int) -> Int { 32 + (frame - 1) * (24 + pageSize) + 24 }

        /// Deterministic page contents that differ between frames.
        func page(frameIndex: Int, page: UInt32) -> [UInt8] {
            (0..<pageSize).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ frameIndex &* 7 &+ Int(page)) }
        }

        func bytes() -> [UInt8] {
            var out: [UInt8] = []
            out += Self.be(bigEndian ? 0x377f_0683 : 0x377f_0682)
            out += Self.be(formatVersion)
            out += Self.be(UInt32(truncatingIfNeeded: pageSize))
            out += Self.be(checkpointSequence)
            out += Self.be(headerSalt1Override ?? salt1)
            out += Self.be(salt2)
            var s0: UInt32 = 0
            var s1: UInt32 = 0
            Self.checksum(out, bigEndian: bigEndian, &s0, &s1)
            out += Self.be(s0) + Self.be(s1)
            for (offset, frame) in frames.enumerated() {
                let head = Self.be(frame.page) + Self.be(frame.commit)
                let body = frame.contents ?? page(frameIndex: offset + 1, page: frame.page)
                Self.checksum(head, bigEndian: bigEndian, &s0, &s1)
                Self.checksum(body, bigEndian: bigEndian, &s0, &s1)
                out += head + Self.be(frame.salt1 ?? salt1) + Self.be(frame.salt2 ?? salt2)
                out += Self.be(s0) + Self.be(s1) + body
            }
            return out
        }

        static func be(_ value: UInt32) -> [UInt8] {
            [UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)]
        }

        static func le(_ value: UInt32) -> [UInt8] { be(value).reversed() }

        /// SQLite's WAL checksum, written out plainly over whole 8-byte groups.
        static func checksum(_ bytes: [UInt8], bigEndian: Bool, _ s0: inout UInt32, _ s1: inout UInt32) {
            func word(_ at: Int) -> UInt32 {
                let b = bigEndian ? Array(bytes[at..<at + 4]) : Array(bytes[at..<at + 4].reversed())
                return b.reduce(0) { $0 << 8 | UInt32($1) }
            }
            var index = 0
            while index + 8 <= bytes.count {
                s0 = s0 &+ word(index) &+ s1
                s1 = s1 &+ word(index + 4) &+ s0
                index += 8
            }
        }
    }
}
