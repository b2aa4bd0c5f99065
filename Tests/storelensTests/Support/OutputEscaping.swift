import Foundation
import Testing

/// What storelens prints of hostile bytes: which scalars must not reach a terminal, and the
/// documented escaping undone.
enum OutputEscaping {
    /// A scalar that must not reach a terminal: C0 but the ones `allowed`, DEL, C1, the bidi and
    /// line-separator characters.
    static func hostile(_ scalar: Unicode.Scalar, allowed: Set<Unicode.Scalar> = ["\n"]) -> Bool {
        if allowed.contains(scalar) { return false }
        switch scalar.value {
        case 0..<0x20, 0x7F...0x9F, 0x200E, 0x200F, 0x061C, 0x2028, 0x2029, 0x202A...0x202E, 0x2066...0x2069: return true
        default: return false
        }
    }

    /// Expects no hostile scalar in `text` (`what` names it in the failure).
    static func expectClean(_ text: String, allowed: Set<Unicode.Scalar> = ["\n"], _ what: String) {
        let found = text.unicodeScalars.filter { hostile($0, allowed: allowed) }.map { "U+" + String($0.value, radix: 16) }
        #expect(found.isEmpty, "\(what): \(Set(found).sorted()) reached the output")
    }

    /// The documented escaping undone: `\\` is a backslash, `\uXXXX` the scalar; nil when a
    /// backslash starts anything else (the escaping would be ambiguous).
    static func unescape(_ cell: String) -> String? {
        let scalars = Array(cell.unicodeScalars)
        var out = String.UnicodeScalarView()
        var i = 0
        while i < scalars.count {
            guard scalars[i] == "\\" else { out.append(scalars[i]); i += 1; continue }
            guard i + 1 < scalars.count else { return nil }
            if scalars[i + 1] == "\\" { out.append("\\"); i += 2; continue }
            guard scalars[i + 1] == "u", i + 6 <= scalars.count,
                  let value = UInt32(String(String.UnicodeScalarView(scalars[(i + 2)..<(i + 6)])), radix: 16),
                  let scalar = Unicode.Scalar(value) else { return nil }
            out.append(scalar)
            i += 6
        }
        return String(out)
    }
}
