import Foundation
import StoreFormats

/// The texts `ValueDecoder` gives for dates and UUIDs, written as bytes into a caller's buffer
/// instead of built as Strings: what the row writers use per value. Each gives exactly the bytes
/// of its String counterpart (ValueBytesTests compares them).
extension ValueDecoder {
    /// `iso8601(referenceSeconds:)`'s text, appended as UTF-8 (it is ASCII).
    public static func appendISO8601(referenceSeconds: Double, to out: inout [UInt8]) {
        guard let t = UTCDateTime(referenceSeconds: referenceSeconds) else {
            out.append(contentsOf: String(referenceSeconds).utf8)
            return
        }
        let (year, month, day, rest, micros) = (t.year, t.month, t.day, t.secondOfDay, t.microsecond)
        appendPadded(year, 4, &out)
        out.append(0x2D)
        appendPadded(month, 2, &out)
        out.append(0x2D)
        appendPadded(day, 2, &out)
        out.append(0x54)
        appendPadded(rest / 3600, 2, &out)
        out.append(0x3A)
        appendPadded(rest % 3600 / 60, 2, &out)
        out.append(0x3A)
        appendPadded(rest % 60, 2, &out)
        if micros > 0 {
            // Six digits, trailing zeros dropped (micros is 1 ... 999_999 here).
            var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) = (0, 0, 0, 0, 0, 0)
            var m = micros
            var last = 0
            withUnsafeMutableBytes(of: &digits) { d in
                for i in stride(from: 5, through: 0, by: -1) {
                    d[i] = UInt8(truncatingIfNeeded: 0x30 + m % 10)
                    m /= 10
                }
                last = 5
                while last > 0 && d[last] == 0x30 { last -= 1 }
            }
            out.append(0x2E)
            withUnsafeBytes(of: &digits) { out.append(contentsOf: $0[0 ... last]) }
        }
        out.append(0x5A)
    }

    /// `pad(v, width)` of iso8601: the sign, then the magnitude zero-padded to `width` digits.
    private static func appendPadded(_ v: Int64, _ width: Int, _ out: inout [UInt8]) {
        if v < 0 { out.append(0x2D) }
        var magnitude = v.magnitude
        var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                     UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &digits) { d in
            var n = 0
            repeat {
                d[19 - n] = UInt8(truncatingIfNeeded: 0x30 + magnitude % 10)
                magnitude /= 10
                n += 1
            } while magnitude > 0
            for _ in n ..< max(n, width) { out.append(0x30) }
            out.append(contentsOf: d[(20 - n)...])
        }
    }

    /// `uuidString(_:)`'s text for 16 bytes (uppercase, 8-4-4-4-12), appended.
    public static func appendUUID(_ bytes: UnsafeRawBufferPointer, to out: inout [UInt8]) {
        precondition(bytes.count == 16, "a UUID is 16 bytes")
        let digits: StaticString = "0123456789ABCDEF"
        digits.withUTF8Buffer { hex in
            for (i, b) in bytes.enumerated() {
                if i == 4 || i == 6 || i == 8 || i == 10 { out.append(0x2D) }
                out.append(hex[Int(b >> 4)])
                out.append(hex[Int(b & 0xF)])
            }
        }
    }
}
