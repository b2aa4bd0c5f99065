import Foundation

/// A fixed-size window of bytes with integer reads that never trap.
///
/// Headers in SQLite files sit at fixed offsets, so the parsers copy the
/// header once (after checking its length) and read fields by offset. A
/// read that falls outside the window returns 0 instead of trapping: the
/// bytes come from a device and must never crash the tool.
struct ByteReader: Sendable {
    /// The copied bytes, indexed from 0 whatever the source `Data`'s indices were.
    let bytes: [UInt8]

    /// Copies the first `length` bytes of `data`, or fails when `data` is shorter.
    init?(_ data: Data, length: Int) {
        guard length >= 0, data.count >= length else { return nil }
        bytes = [UInt8](data.prefix(length))
    }

    /// The byte at `offset`, or 0 outside the window.
    func uint8(at offset: Int) -> UInt8 {
        guard offset >= 0, offset < bytes.count else { return 0 }
        return bytes[offset]
    }

    /// A big-endian 16-bit integer at `offset`, or 0 outside the window.
    func uint16BE(at offset: Int) -> UInt16 {
        guard offset >= 0, offset <= bytes.count - 2 else { return 0 }
        return UInt16(bytes[offset]) << 8 | UInt16(bytes[offset + 1])
    }

    /// A little-endian 16-bit integer at `offset`, or 0 outside the window.
    func uint16LE(at offset: Int) -> UInt16 {
        guard offset >= 0, offset <= bytes.count - 2 else { return 0 }
        return UInt16(bytes[offset + 1]) << 8 | UInt16(bytes[offset])
    }

    /// A big-endian 32-bit integer at `offset`, or 0 outside the window.
    func uint32BE(at offset: Int) -> UInt32 {
        guard offset >= 0, offset <= bytes.count - 4 else { return 0 }
        return UInt32(bytes[offset]) << 24 | UInt32(bytes[offset + 1]) << 16
            | UInt32(bytes[offset + 2]) << 8 | UInt32(bytes[offset + 3])
    }

    /// A big-endian 64-bit integer at `offset`, or 0 outside the window.
    func uint64BE(at offset: Int) -> UInt64 {
        guard offset >= 0, offset <= bytes.count - 8 else { return 0 }
        return UInt64(uint32BE(at: offset)) << 32 | UInt64(uint32BE(at: offset + 4))
    }

    /// A little-endian 32-bit integer at `offset`, or 0 outside the window.
    func uint32LE(at offset: Int) -> UInt32 {
        guard offset >= 0, offset <= bytes.count - 4 else { return 0 }
        return UInt32(bytes[offset + 3]) << 24 | UInt32(bytes[offset + 2]) << 16
            | UInt32(bytes[offset + 1]) << 8 | UInt32(bytes[offset])
    }

    /// The bytes in `range`, or an empty slice when the range leaves the window.
    func slice(_ range: Range<Int>) -> ArraySlice<UInt8> {
        guard range.lowerBound >= 0, range.upperBound <= bytes.count else { return [] }
        return bytes[range]
    }
}
