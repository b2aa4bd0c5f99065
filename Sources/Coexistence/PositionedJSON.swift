import Foundation

/// A JSON value that remembers where it was in the file, so that a manifest error can point at
/// the line and column of the field that is wrong. Foundation's parser forgets positions.
indirect enum PositionedJSON {
    case null(Position)
    case bool(Bool, Position)
    case number(Double, Position)
    case string(String, Position)
    case array([PositionedJSON], Position)
    case object([(key: String, keyPosition: Position, value: PositionedJSON)], Position)

    struct Position: Equatable, Sendable, CustomStringConvertible {
        let line: Int
        let column: Int
        var description: String { "line \(line), column \(column)" }
    }

    var position: Position {
        switch self {
        case .null(let p), .bool(_, let p), .number(_, let p), .string(_, let p), .array(_, let p), .object(_, let p): return p
        }
    }

    var typeName: String {
        switch self {
        case .null: return "null"
        case .bool: return "a boolean"
        case .number: return "a number"
        case .string: return "a string"
        case .array: return "an array"
        case .object: return "an object"
        }
    }

    struct SyntaxError: Error {
        let message: String
        let position: Position
    }

    /// Parses `text`. Bounded: nesting deeper than 64 or input over `maxBytes` is refused.
    static func parse(_ text: String, maxBytes: Int = 4 << 20) throws -> PositionedJSON {
        guard text.utf8.count <= maxBytes else {
            throw SyntaxError(message: "the file is larger than \(maxBytes >> 20) MiB", position: Position(line: 1, column: 1))
        }
        var parser = Parser(scalars: Array(text.unicodeScalars))
        parser.skipSpace()
        let value = try parser.value(depth: 0)
        parser.skipSpace()
        guard parser.index == parser.scalars.count else {
            throw SyntaxError(message: "unexpected text after the end of the JSON value", position: parser.position)
        }
        return value
    }

    private struct Parser {
        let scalars: [Unicode.Scalar]
        var index = 0
        var line = 1
        var column = 1

        var position: Position { Position(line: line, column: column) }

        mutating func advance() {
            if scalars[index] == "\n" { line += 1; column = 1 } else { column += 1 }
            index += 1
        }

        mutating func skipSpace() {
            while index < scalars.count, [" ", "\t", "\n", "\r"].contains(scalars[index]) { advance() }
        }

        mutating func expect(_ c: Unicode.Scalar) throws {
            guard index < scalars.count, scalars[index] == c else {
                throw SyntaxError(message: "expected '\(c)'", position: position)
            }
            advance()
        }

        mutating func value(depth: Int) throws -> PositionedJSON {
            guard depth < 64 else { throw SyntaxError(message: "nested more than 64 levels", position: position) }
            guard index < scalars.count else { throw SyntaxError(message: "unexpected end of the file", position: position) }
            let start = position
            switch scalars[index] {
            case "{":
                advance(); skipSpace()
                var members: [(key: String, keyPosition: Position, value: PositionedJSON)] = []
                if index < scalars.count, scalars[index] == "}" { advance(); return .object(members, start) }
                while true {
                    skipSpace()
                    let keyPosition = position
                    guard case .string(let key, _) = try value(depth: depth + 1) else {
                        throw SyntaxError(message: "object keys must be strings", position: keyPosition)
                    }
                    skipSpace(); try expect(":"); skipSpace()
                    members.append((key, keyPosition, try value(depth: depth + 1)))
                    skipSpace()
                    guard index < scalars.count else { throw SyntaxError(message: "unexpected end of the file in an object", position: position) }
                    if scalars[index] == "," { advance(); continue }
                    try expect("}")
                    return .object(members, start)
                }
            case "[":
                advance(); skipSpace()
                var items: [PositionedJSON] = []
                if index < scalars.count, scalars[index] == "]" { advance(); return .array(items, start) }
                while true {
                    skipSpace()
                    items.append(try value(depth: depth + 1))
                    skipSpace()
                    guard index < scalars.count else { throw SyntaxError(message: "unexpected end of the file in an array", position: position) }
                    if scalars[index] == "," { advance(); continue }
                    try expect("]")
                    return .array(items, start)
                }
            case "\"":
                advance()
                var s = String.UnicodeScalarView()
                while true {
                    guard index < scalars.count else { throw SyntaxError(message: "unterminated string", position: start) }
                    let c = scalars[index]
                    advance()
                    if c == "\"" { break }
                    if c.value < 0x20 { throw SyntaxError(message: "control character in a string", position: position) }
                    if c == "\\" {
                        guard index < scalars.count else { throw SyntaxError(message: "unterminated string", position: start) }
                        let e = scalars[index]
                        advance()
                        switch e {
                        case "\"": s.append("\""); case "\\": s.append("\\"); case "/": s.append("/")
                        case "b": s.append("\u{8}"); case "f": s.append("\u{c}"); case "n": s.append("\n")
                        case "r": s.append("\r"); case "t": s.append("\t")
                        case "u":
                            guard index + 4 <= scalars.count,
                                  let code = UInt32(String(String.UnicodeScalarView(scalars[index..<index + 4])), radix: 16) else {
                                throw SyntaxError(message: "bad \\u escape", position: position)
                            }
                            for _ in 0..<4 { advance() }
                            s.append(Unicode.Scalar(code) ?? "\u{FFFD}")
                        default: throw SyntaxError(message: "bad escape \\\(e)", position: position)
                        }
                    } else {
                        s.append(c)
                    }
                }
                return .string(String(s), start)
            case "t", "f", "n":
                for (word, result) in [("true", PositionedJSON.bool(true, start)), ("false", .bool(false, start)), ("null", .null(start))] {
                    let w = Array(word.unicodeScalars)
                    if index + w.count <= scalars.count, Array(scalars[index..<index + w.count]) == w {
                        for _ in w { advance() }
                        return result
                    }
                }
                throw SyntaxError(message: "unexpected word", position: start)
            default:
                var text = ""
                while index < scalars.count, "+-0123456789.eE".unicodeScalars.contains(scalars[index]) {
                    text.unicodeScalars.append(scalars[index]); advance()
                }
                guard !text.isEmpty else {
                    throw SyntaxError(message: "unexpected character '\(scalars[index])'", position: start)
                }
                // Not scalars[index]: the text may run to the end of the file ("1e", "E").
                guard let number = Double(text) else {
                    throw SyntaxError(message: "'\(text)' is not a number", position: start)
                }
                return .number(number, start)
            }
        }
    }
}
