import Foundation

/// One stored attribute value as `FieldValue`, by the type name the store gives it; a value that
/// is not its type is shown as its text with the problem named (never guessed at, never a crash).
public enum AtomicStoreValue {
    /// `-12.50`, `3e-7`: what a decimal's text may be (Foundation's parser accepts a prefix of `1.2.3`).
    static func isDecimalNumber(_ text: String) -> Bool {
        var chars = Substring(text)
        if chars.first == "-" || chars.first == "+" { chars = chars.dropFirst() }
        let mantissa = chars.prefix { $0 != "e" && $0 != "E" }
        let exponent = chars.dropFirst(mantissa.count).dropFirst()
        let parts = mantissa.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), parts.contains(where: { !$0.isEmpty }),
              parts.allSatisfy({ $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber) }) else { return false }
        guard chars.count > mantissa.count else { return true }
        let digits = exponent.first == "-" || exponent.first == "+" ? exponent.dropFirst() : exponent
        return !digits.isEmpty && digits.allSatisfy { $0.isASCII && $0.isNumber }
    }

    public static func decode(type: String, text: String) -> (FieldValue, String?) {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        func shown(_ problem: String) -> (FieldValue, String?) {
            (.text(text), "\(problem) (\(type) value \(String(text.prefix(40)).debugDescription))")
        }
        switch type {
        case "string", "uri", "objectID":
            return (.text(text), nil)
        case "int16", "int32", "int64", "integer 16", "integer 32", "integer 64":
            return Int64(trimmed).map { (.integer($0), nil) } ?? shown("not a whole number")
        case "double", "float":
            guard let d = Double(trimmed), !trimmed.isEmpty else { return shown("not a number") }
            return (.real(d), nil)
        case "decimal":
            return isDecimalNumber(trimmed) ? (.decimal(trimmed), nil) : shown("not a decimal number")
        case "bool":
            switch trimmed.lowercased() {
            case "1", "yes", "true": return (.bool(true), nil)
            case "0", "no", "false": return (.bool(false), nil)
            default: return shown("not a Boolean")
            }
        case "date":
            guard let seconds = Double(trimmed), seconds.isFinite else { return shown("not seconds since 2001-01-01") }
            return (.date(iso: ValueDecoder.iso8601(referenceSeconds: seconds), referenceSeconds: seconds), nil)
        case "uuid":
            return UUID(uuidString: trimmed).map { (.uuid($0.uuidString), nil) } ?? shown("not a UUID")
        case "binary", "transformable":
            guard let bytes = Data(base64Encoded: trimmed, options: .ignoreUnknownCharacters),
                  trimmed.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "+/=\n\r\t ".contains($0)) }) else {
                return shown("not base64")
            }
            let hex = bytes.prefix(BinaryValue.prefixLength).map { String(format: "%02x", $0) }.joined()
            return (.binary(BinaryValue(size: bytes.count, prefixHex: hex, storage: .plain)), nil)
        default:
            return shown("a type storelens does not know")
        }
    }
}
