import Foundation
import Testing
@testable import Deflate

/// Produced by Python: `zlib.compressobj(9, zlib.DEFLATED, -15)` over `vectorPlaintext`.
private let pythonRawDeflateVector = """
Ky7JL0rNSc0rVihKLFdISU3LSSxJVShLTQaKWykkJiWPIjhiYGRiZmFlY+fg5OLm4eXjFxAUEhYRFROXkJSSlpGVk1dQVFJWUVVT19DU0tbR1dM3MDQyNjE1\
M7ewtLK2sbWzd3B0cnZxdXP38PTy9vH18w8IDAoOCQ0Lj4iMio6JjYtPANoBjIH0jMys7JzcvPyCwqLiktKy8orKquqa2rr6hsam5pbWtvaOzq7unt6+/gkT\
J02eMnXa9BkzZ82eM3fe/AULFy1esnTZ8hUrV61es3bd+g0bN23esnXb9h07d+3es3ff/gMHDx0+cvTY8RMnT50+c/bc+QsXL12+cvXa9Rs3b92+c/fe/QcP\
Hz1+8vTZ8xcvX71+8/bd+w8fP33+8vXb9x8/f/3+8/fffwA=
"""

private let vectorPlaintext: Data = Data("storelens raw deflate vector: ".utf8)
    + Data(String(repeating: "abcabcabc", count: 30).utf8) + Data((0...255).map { UInt8($0) })

private func vector() throws -> Data {
    try #require(Data(base64Encoded: pythonRawDeflateVector.filter { !$0.isWhitespace }))
}

/// Seeded bytes that do not compress, so multi-chunk paths get exercised.
private func noise(count: Int, seed: UInt64) -> Data {
    var state = seed
    return Data((0..<count).map { _ in
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return UInt8(truncatingIfNeeded: state >> 33)
    })
}

@Suite struct RawDeflateTests {
    @Test func inflatesStreamWrittenByPythonZlib() throws {
        let output = try RawDeflate.inflate(try vector(), maxOutputBytes: 1 << 20)
        #expect(output == vectorPlaintext)
    }

    @Test(arguments: [Int32(-1), 0, 1, 6, 9])
    func roundTripsAtEveryLevel(level: Int32) throws {
        let inputs = [
            Data(),
            Data([42]),
            vectorPlaintext,
            noise(count: 200_000, seed: 7),  // several 64 KB output chunks
            Data(String(repeating: "Z_MODELCACHE ", count: 40_000).utf8),
        ]
        for input in inputs {
            let compressed = try RawDeflate.deflate(input, level: level)
            #expect(try RawDeflate.inflate(compressed, maxOutputBytes: input.count) == input)
        }
    }

    @Test func writesRawStreamsWithoutZlibHeader() throws {
        let input = Data(String(repeating: "hello ", count: 100).utf8)
        let compressed = try RawDeflate.deflate(input)
        // A zlib stream would start 78 xx with (CMF*256 + FLG) % 31 == 0 and end with an Adler-32.
        #expect(compressed.count < input.count)
        #expect(try RawDeflate.inflate(compressed, maxOutputBytes: input.count) == input)
        #expect(try RawDeflate.deflate(input) == compressed)  // deterministic
    }

    @Test func inflatesSlicedData() throws {
        let compressed = try vector()
        let padded = Data([1, 2, 3]) + compressed
        let slice = padded[3...]
        #expect(slice.startIndex == 3)
        #expect(try RawDeflate.inflate(slice, maxOutputBytes: 1 << 20) == vectorPlaintext)
    }

    @Test func stopsDecompressionBombs() throws {
        let zeros = Data(count: 1 << 20)
        let bomb = try RawDeflate.deflate(zeros, level: 9)
        #expect(bomb.count < 2_000)
        #expect(throws: RawDeflateError.outputLimitExceeded(limit: 64 * 1024)) {
            try RawDeflate.inflate(bomb, maxOutputBytes: 64 * 1024)
        }
        // The cap is inclusive.
        #expect(try RawDeflate.inflate(bomb, maxOutputBytes: 1 << 20).count == 1 << 20)
        #expect(throws: RawDeflateError.outputLimitExceeded(limit: (1 << 20) - 1)) {
            try RawDeflate.inflate(bomb, maxOutputBytes: (1 << 20) - 1)
        }
        #expect(throws: RawDeflateError.outputLimitExceeded(limit: 0)) {
            try RawDeflate.inflate(bomb, maxOutputBytes: 0)
        }
    }

    @Test func rejectsTruncatedStreams() throws {
        let compressed = try vector()
        #expect(throws: RawDeflateError.truncated) { try RawDeflate.inflate(Data(), maxOutputBytes: 100) }
        for length in [1, compressed.count / 2, compressed.count - 1] {
            #expect(throws: RawDeflateError.truncated) {
                try RawDeflate.inflate(compressed.prefix(length), maxOutputBytes: 1 << 20)
            }
        }
        let large = try RawDeflate.deflate(noise(count: 150_000, seed: 3))
        #expect(throws: RawDeflateError.truncated) {
            try RawDeflate.inflate(large.prefix(large.count - 10), maxOutputBytes: 1 << 20)
        }
    }

    @Test func rejectsCorruptStreams() throws {
        // Block type 3 is reserved in RFC 1951.
        #expect(throws: RawDeflateError.self) { try RawDeflate.inflate(Data([0xFF, 0xFF, 0xFF]), maxOutputBytes: 100) }
        do {
            _ = try RawDeflate.inflate(Data([0x07, 0x00]), maxOutputBytes: 100)
            Issue.record("a reserved block type was accepted")
        } catch {
            guard case .corrupt = error else {
                Issue.record("expected .corrupt, got \(error)")
                return
            }
        }
        // A zlib-wrapped stream is not raw DEFLATE: its header bytes do not form a valid block.
        let zlibWrapped = Data([0x78, 0x9C, 0x4B, 0x4C, 0x4A, 0x06, 0x00, 0x02, 0x4D, 0x01, 0x27])
        #expect(throws: RawDeflateError.self) { try RawDeflate.inflate(zlibWrapped, maxOutputBytes: 100) }
    }

    @Test func rejectsBytesAfterTheEndOfTheStream() throws {
        let compressed = try vector() + Data([1, 2, 3])
        #expect(throws: RawDeflateError.trailingData(byteCount: 3)) {
            try RawDeflate.inflate(compressed, maxOutputBytes: 1 << 20)
        }
    }

    @Test func survivesRandomMutations() throws {
        let seed = [UInt8](try vector())
        var state: UInt64 = 0xDEF1A7E
        func next() -> UInt64 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return state >> 11
        }
        for _ in 0..<2_000 {
            var bytes = seed
            for _ in 0..<(1 + next() % 4) {
                bytes[Int(next() % UInt64(bytes.count))] = UInt8(truncatingIfNeeded: next())
            }
            _ = try? RawDeflate.inflate(Data(bytes), maxOutputBytes: 4_096)
        }
    }

    @Test func rejectsInvalidArguments() {
        #expect(throws: RawDeflateError.self) { try RawDeflate.deflate(Data([1]), level: 10) }
        #expect(throws: RawDeflateError.self) { try RawDeflate.inflate(Data([1]), maxOutputBytes: -1) }
    }

    @Test func errorsDescribeThemselves() {
        #expect(RawDeflateError.outputLimitExceeded(limit: 10).description.contains("10 bytes"))
        #expect(RawDeflateError.truncated.description == "The DEFLATE stream is truncated.")
    }
}
