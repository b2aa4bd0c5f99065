import Foundation

/// Reproducible filler bytes: the tests' one linear congruential generator (Knuth's MMIX
/// constants, the byte from bits 33...40 of the state). `state` carries on between calls, so a
/// test drawing several pieces gets the same bytes as one long draw.
public enum PseudoRandomBytes {
    /// `count` bytes, advancing `state` once per byte. A plain loop over a preallocated buffer: the
    /// `map` over a range it replaces cost seconds per megabyte in the debug build tests run in.
    public static func next(_ count: Int, state: inout UInt64) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var s = state
        bytes.withUnsafeMutableBufferPointer { buffer in
            for i in 0..<buffer.count {
                s = s &* 6364136223846793005 &+ 1442695040888963407
                buffer[i] = UInt8(truncatingIfNeeded: s >> 33)
            }
        }
        state = s
        return bytes
    }

    /// `count` bytes from a fresh `seed`, as `Data`.
    public static func data(_ count: Int, seed: UInt64) -> Data {
        var state = seed
        return Data(next(count, state: &state))
    }
}
