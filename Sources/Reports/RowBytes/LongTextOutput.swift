import CoreDataStore
import Foundation
import StoreFormats

/// A text longer than `LongValue.window` written in pieces as it is read from the store, so a
/// writer's memory never grows with one value: the same bytes the whole text's JSON string or
/// CSV/TSV cell would give.
enum LongTextOutput {
    /// `out` handed to `spill` and emptied once it holds `OutputBlocks.size` bytes or more.
    static func spillIfFull(_ out: inout [UInt8], _ spill: ([UInt8]) -> Void) {
        guard out.count >= OutputBlocks.size else { return }
        spill(out)
        out.removeAll(keepingCapacity: true)
    }

    /// The text as a JSON string, `JSONValue.escape`d piece by piece (it escapes scalar by scalar).
    static func json(_ text: LongText, into out: inout [UInt8], spill: ([UInt8]) -> Void) throws {
        out.append(0x22)
        try text.forEachPiece { piece in
            var escaped = ""
            JSONValue.escape(piece, into: &escaped)
            let bytes = escaped.utf8
            out.append(contentsOf: bytes.dropFirst().dropLast())
            spillIfFull(&out, spill)
        }
        out.append(0x22)
    }

    /// The text as a CSV or TSV cell, byte for byte what `Delimited.cell` gives for the whole
    /// text: read twice, once to learn whether it needs quotes and whether it is a formula, once
    /// to write it (its control characters escaped unless raw). The first reading looks at the
    /// stored bytes: the ASCII bytes that decide both are the same in the decoded text.
    static func cell(_ text: LongText, as delimited: Delimited, rawCSV: Bool, into out: inout [UInt8], spill: ([UInt8]) -> Void) throws {
        var quote = false
        var first: UInt8?
        var number = PlainNumber()
        guard let stored = text.stored else { throw LongTextUnavailable(byteCount: text.byteCount) }
        // Escaped, a tab, CR or LF is `\u0009`-style text: then only a quote (or CSV's comma) asks for quotes.
        let quoting: [UInt8] = rawCSV ? [delimited.separator, 0x22, 0x0A, 0x0D] : (delimited == .csv ? [0x2C, 0x22] : [0x22])
        try stored.forEachPiece { piece in
            if first == nil { first = piece.first }
            piece.withUnsafeBytes { bytes in
                guard let base = bytes.baseAddress else { return }
                quote = quote || quoting.contains { memchr(base, Int32($0), bytes.count) != nil }
            }
            for b in piece {
                if number.isRefused { break }
                number.add(b)
            }
        }
        // An escaped tab or CR in front starts the cell with a backslash: no formula.
        let formula: [UInt8] = rawCSV ? [0x3D, 0x2B, 0x2D, 0x40, 0x09, 0x0D] : [0x3D, 0x2B, 0x2D, 0x40]
        let neutralise = !rawCSV && (first.map { formula.contains($0) } ?? false) && !number.isNumber
        if quote { out.append(0x22) }
        if neutralise { out.append(0x27) }
        try text.forEachPiece { piece in
            var piece = rawCSV ? piece : Delimited.escapingControls(piece)
            piece.withUTF8 { bytes in
                guard quote else { out.append(contentsOf: bytes); return }
                // Each `"` doubled: the runs between quotes appended whole.
                var start = 0
                while start < bytes.count, let hit = memchr(bytes.baseAddress! + start, 0x22, bytes.count - start) {
                    let at = bytes.baseAddress!.distance(to: hit.assumingMemoryBound(to: UInt8.self))
                    out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start ... at]))
                    out.append(0x22)
                    start = at + 1
                }
                if start < bytes.count { out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start...])) }
            }
            spillIfFull(&out, spill)
        }
        if quote { out.append(0x22) }
    }

    /// `Delimited.isPlainNumber`, fed a byte at a time: sign, digits, optional `.digits`,
    /// optional exponent.
    struct PlainNumber {
        private enum State { case start, sign, whole, dot, fraction, e, exponentSign, exponent, no }
        private var state = State.start

        var isNumber: Bool { state == .whole || state == .fraction || state == .exponent }
        /// No more bytes can make it a number.
        var isRefused: Bool { state == .no }

        mutating func add(_ b: UInt8) {
            let digit = b >= 0x30 && b <= 0x39
            let sign = b == 0x2B || b == 0x2D
            let e = b == 0x65 || b == 0x45
            switch state {
            case .start: state = sign ? .sign : digit ? .whole : .no
            case .sign: state = digit ? .whole : .no
            case .whole: state = digit ? .whole : b == 0x2E ? .dot : e ? .e : .no
            case .dot: state = digit ? .fraction : .no
            case .fraction: state = digit ? .fraction : e ? .e : .no
            case .e: state = sign ? .exponentSign : digit ? .exponent : .no
            case .exponentSign, .exponent: state = digit ? .exponent : .no
            case .no: break
            }
        }
    }
}

/// JSON with long texts in it: rendered with a mark in each long text's place (a string no store
/// can hold: it has a random UUID of this process), then written with each mark's JSON string
/// replaced by the text, streamed.
final class LongTextSplice {
    private static let mark = "\u{0}storelens-long-text-\(UUID().uuidString)-"
    /// The mark as `JSONValue.escape` writes it, without its number and closing quote.
    private static let renderedMark: String = {
        var text = ""
        JSONValue.escape(mark, into: &text)
        return String(text.dropLast())
    }()
    private var texts: [LongText] = []

    static func holdsLongText(_ value: FieldValue) -> Bool {
        switch value {
        case .longText: return true
        case .composite(let elements): return elements.contains { holdsLongText($0.value) }
        default: return false
        }
    }

    /// `ValueJSON.json`, with a mark for each long text.
    func marking(_ value: FieldValue) -> JSONValue {
        switch value {
        case .longText(let text):
            texts.append(text)
            return .string(Self.mark + String(texts.count - 1))
        case .composite(let elements):
            return .object(elements.map { ($0.name, marking($0.value)) })
        default:
            return ValueJSON.json(value)
        }
    }

    /// Writes `rendered` into `out`, each mark replaced by its text's JSON string.
    func write(_ rendered: String, into out: inout [UInt8], spill: ([UInt8]) -> Void) throws {
        let parts = rendered.components(separatedBy: Self.renderedMark)
        out.append(contentsOf: parts[0].utf8)
        for part in parts.dropFirst() {
            let digits = part.prefix { $0.isASCII && $0.isNumber }
            guard let index = Int(digits), texts.indices.contains(index) else { continue }
            try LongTextOutput.json(texts[index], into: &out, spill: spill)
            // After the number: the mark's closing quote.
            out.append(contentsOf: part.dropFirst(digits.count + 1).utf8)
            LongTextOutput.spillIfFull(&out, spill)
        }
    }
}
