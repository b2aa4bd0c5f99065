import Foundation

/// A pair of 32-bit checksum words, as SQLite stores them in WAL and
/// wal-index headers.
///
/// SQLite's WAL checksum is a running pair (s0, s1) that is folded over
/// 32-bit words; it is cumulative across frames, so the pair stored in a
/// frame vouches for every byte before it as well.
public struct WALChecksum: Hashable, Sendable, CustomStringConvertible {
    /// The first word (s0).
    public var first: UInt32
    /// The second word (s1).
    public var second: UInt32

    public init(first: UInt32, second: UInt32) {
        self.first = first
        self.second = second
    }

    /// The starting value for a header checksum.
    public static let zero = WALChecksum(first: 0, second: 0)

    public var description: String {
        "0x" + Self.hex(first) + " 0x" + Self.hex(second)
    }

    private static func hex(_ value: UInt32) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: max(0, 8 - digits.count)) + digits
    }

    /// Folds `count` bytes of `bytes`, starting at `offset`, into `seed`.
    ///
    /// This is the hot loop of WAL parsing (every page byte goes through it),
    /// so it reads words with `loadUnaligned` and wrapping adds only. The
    /// range is clamped to the buffer and to a multiple of 8 bytes, so
    /// out-of-range input cannot trap; callers check bounds beforehand anyway.
    ///
    /// - Parameter bigEndianWords: true for WAL magic 0x377f0683, false for
    ///   0x377f0682 (and for the native, little-endian `-shm` header).
    @inline(__always)
    static func fold(
        _ bytes: UnsafeRawBufferPointer, offset: Int, count: Int,
        bigEndianWords: Bool, seed: WALChecksum
    ) -> WALChecksum {
        guard let base = bytes.baseAddress, offset >= 0, count > 0, offset <= bytes.count else {
            return seed
        }
        let available = min(count, bytes.count - offset)
        let end = offset + (available & ~7)
        var s0 = seed.first
        var s1 = seed.second
        var index = offset
        if bigEndianWords {
            while index < end {
                let x0 = UInt32(bigEndian: base.loadUnaligned(fromByteOffset: index, as: UInt32.self))
                let x1 = UInt32(bigEndian: base.loadUnaligned(fromByteOffset: index + 4, as: UInt32.self))
                s0 = s0 &+ x0 &+ s1
                s1 = s1 &+ x1 &+ s0
                index += 8
            }
        } else {
            while index < end {
                let x0 = UInt32(littleEndian: base.loadUnaligned(fromByteOffset: index, as: UInt32.self))
                let x1 = UInt32(littleEndian: base.loadUnaligned(fromByteOffset: index + 4, as: UInt32.self))
                s0 = s0 &+ x0 &+ s1
                s1 = s1 &+ x1 &+ s0
                index += 8
            }
        }
        return WALChecksum(first: s0, second: s1)
    }

    /// Folds the bytes of `data` in `range` into `seed`; a convenience for
    /// small inputs such as headers.
    static func fold(
        _ data: some ContiguousBytes, range: Range<Int>, bigEndianWords: Bool,
        seed: WALChecksum = .zero
    ) -> WALChecksum {
        data.withUnsafeBytes { raw in
            fold(raw, offset: range.lowerBound, count: range.count,
                 bigEndianWords: bigEndianWords, seed: seed)
        }
    }
}
