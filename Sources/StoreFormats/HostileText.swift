/// Characters from a device that must not reach a terminal, a spreadsheet or a JSON reader as
/// they are: control characters (ESC, BEL, CR, newlines inside a value) and the invisible
/// characters that reorder text. Every view escapes or replaces them by this one rule.
public enum HostileText {
    public static func isHostile(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0..<0x20, 0x7F...0x9F: return true
        case 0x200E, 0x200F, 0x061C, 0x2028, 0x2029, 0x202A...0x202E, 0x2066...0x2069: return true
        default: return false
        }
    }

    /// `s` with every hostile character shown as U+FFFD.
    public static func sanitized(_ s: String) -> String {
        String(String.UnicodeScalarView(s.unicodeScalars.map { isHostile($0) ? "\u{FFFD}" : $0 }))
    }

    /// Bytes that may not be UTF-8 (a path from a device, an argument), shown as text: valid
    /// UTF-8 as itself (hostile characters replaced), every other byte as `\xHH`.
    public static func bytes(_ raw: [UInt8]) -> String {
        var out = ""
        var i = 0
        while i < raw.count {
            // The longest valid UTF-8 sequence starting here (1 to 4 bytes), else one byte escaped.
            var taken = false
            for length in 1...min(4, raw.count - i) {
                if let scalar = String(validating: raw[i ..< i + length], as: UTF8.self), scalar.unicodeScalars.count == 1 {
                    out += sanitized(scalar)
                    i += length
                    taken = true
                    break
                }
            }
            if !taken {
                out += "\\x" + String(raw[i], radix: 16, uppercase: true).leftPaddedHex
                i += 1
            }
        }
        return out
    }
}

private extension String {
    var leftPaddedHex: String { count < 2 ? "0" + self : self }
}
