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
}
