import Findings
import Foundation
import StoreFormats

/// One line of a batch's JSON Lines results (`--jsonl FILE`): one input, what became of it.
/// Lines from many machines concatenate into one file; `--resume` recognises a done input by
/// its `command` and `input`. Documented in docs/json-output.md ("Batch results").
public struct BatchLine: Sendable {
    public static let schemaVersion = 1

    public enum Status: String, Sendable, Hashable {
        /// Read, nothing to report (exit code 0).
        case ok
        /// Read, with findings at or above `--fail-on` (exit code 1).
        case findings
        /// Not read, or read only in part: `error` says why (exit code 2 or 3).
        case error
    }

    public var command: String
    public var input: String
    public var sha256: String?
    public var status: Status = .ok
    public var exitCode: Int32 = 0
    public var summary: JSONValue = .null
    public var findings: [Finding] = []
    public var error: String?
    public var host: String?
    public var toolVersion: String?
    public var startedAt: Date?
    public var seconds: Double?

    public init(command: String, input: String) {
        self.command = command
        self.input = input
    }

    /// Stores listed in one line's summary before the list is cut (its `storeCount` is always complete).
    public static let summaryStoreLimit = 50

    public func json() -> JSONValue {
        // `schemaVersion` first, as in every JSON document storelens writes (Reports' `JSONDocument`).
        .object([
            ("schemaVersion", .int(Self.schemaVersion)),
            ("command", .string(command)),
            ("input", .string(input)),
            ("sha256", .optional(sha256)),
            ("status", .string(status.rawValue)),
            ("exitCode", .int(Int(exitCode))),
            ("summary", summary),
            ("findings", .array(findings.map { $0.json() })),
            ("error", .optional(error)),
            ("host", .optional(host)),
            ("storelensVersion", .optional(toolVersion)),
            ("startedAt", startedAt.map { .string(Self.iso($0)) } ?? .null),
            ("seconds", seconds.map { .double(($0 * 1000).rounded() / 1000) } ?? .null),
        ])
    }

    static func iso(_ date: Date) -> String {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return f.string(from: date)
    }

    /// A line read back from a results file (`merge`, `--resume`), every field checked: a line
    /// another tool or a hand wrote could otherwise pass nonsense as an outcome (an exitCode of
    /// 2^32 read as 0, "ok" with exit code 2).
    public struct Read: Sendable, Equatable {
        public let command: String
        public let input: String
        public let status: Status
        public let exitCode: Int32
        public let error: String?
        public let host: String?
    }

    /// Why a line is not a batch line, as the end of "FILE line N is …".
    public struct Invalid: Error, Sendable, Equatable {
        public let reason: String
    }

    /// The exit code each status allows (docs/batch.md): ok 0, findings 1, error 2 or 3.
    static func allows(_ status: Status, _ code: Int32) -> Bool {
        switch status {
        case .ok: return code == 0
        case .findings: return code == 1
        case .error: return code == 2 || code == 3
        }
    }

    public static func read(_ text: String) -> Result<Read, Invalid> {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] else {
            return .failure(Invalid(reason: "not a JSON object (a line cut off, or not a results file)"))
        }
        guard let version = JSONField.integer(object["schemaVersion"]), version == schemaVersion else {
            return .failure(Invalid(reason: "not a batch line of schemaVersion \(schemaVersion)"))
        }
        func wrong(_ key: String, _ expected: String) -> Result<Read, Invalid> {
            let shown = object[key].map(JSONField.shown) ?? "missing"
            return .failure(Invalid(reason: "a batch line whose \(key) is \(shown), not \(expected)"))
        }
        guard let command = object["command"] as? String, !command.isEmpty else { return wrong("command", "a command name") }
        guard let input = object["input"] as? String, !input.isEmpty else { return wrong("input", "a path") }
        guard let status = (object["status"] as? String).flatMap(Status.init(rawValue:)) else {
            return wrong("status", "\"ok\", \"findings\" or \"error\"")
        }
        guard let code = JSONField.integer(object["exitCode"]), (0...3).contains(code) else {
            return wrong("exitCode", "a whole number from 0 to 3")
        }
        guard allows(status, Int32(code)) else {
            return .failure(Invalid(reason: "a batch line whose status \"\(status.rawValue)\" contradicts its exitCode \(code) (ok is 0, findings 1, error 2 or 3)"))
        }
        for key in ["error", "host", "storelensVersion"] where !JSONField.isStringOrNull(object[key]) {
            return wrong(key, "a string or null")
        }
        if let sha = object["sha256"], !(sha is NSNull) {
            guard let hex = sha as? String, hex.utf8.count == 64, hex.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x66) }) else {
                return wrong("sha256", "64 hexadecimal digits or null")
            }
        }
        if let started = object["startedAt"], !(started is NSNull) {
            guard let text = started as? String, isTimestamp(text) else { return wrong("startedAt", "an RFC 3339 timestamp or null") }
        }
        if let seconds = object["seconds"], !(seconds is NSNull) {
            guard let value = JSONField.number(seconds), value.isFinite, value >= 0 else { return wrong("seconds", "a number of seconds or null") }
        }
        if let summary = object["summary"], !(summary is NSNull || summary is [String: Any]) { return wrong("summary", "an object or null") }
        if let findings = object["findings"], !(findings is NSNull), !((findings as? [Any])?.allSatisfy({ $0 is [String: Any] }) ?? false) {
            return wrong("findings", "a list of findings")
        }
        return .success(Read(command: command, input: input, status: status, exitCode: Int32(code),
                             error: object["error"] as? String, host: object["host"] as? String))
    }

    /// An RFC 3339 timestamp as `startedAt` has it (`2026-11-29T10:00:00.123Z`, an offset instead
    /// of `Z` allowed), checked by its shape and field ranges: a date formatter made per line was
    /// six times merge's own work.
    static func isTimestamp(_ text: String) -> Bool {
        let b = Array(text.utf8)
        func number(_ at: Int, _ count: Int, _ range: ClosedRange<Int>) -> Bool {
            guard at + count <= b.count else { return false }
            var value = 0
            for i in at ..< at + count {
                guard b[i] >= 0x30 && b[i] <= 0x39 else { return false }
                value = value * 10 + Int(b[i] - 0x30)
            }
            return range.contains(value)
        }
        func byte(_ at: Int, _ expected: UInt8) -> Bool { at < b.count && b[at] == expected }
        guard number(0, 4, 0...9999), byte(4, 0x2D), number(5, 2, 1...12), byte(7, 0x2D), number(8, 2, 1...31),
              byte(10, 0x54) || byte(10, 0x74), number(11, 2, 0...23), byte(13, 0x3A), number(14, 2, 0...59),
              byte(16, 0x3A), number(17, 2, 0...60) else { return false }
        var at = 19
        if byte(at, 0x2E) {
            at += 1
            let digits = b[at...].prefix { $0 >= 0x30 && $0 <= 0x39 }.count
            guard digits > 0 else { return false }
            at += digits
        }
        if (byte(at, 0x5A) || byte(at, 0x7A)) && at + 1 == b.count { return true }
        return (byte(at, 0x2B) || byte(at, 0x2D)) && number(at + 1, 2, 0...23) && byte(at + 3, 0x3A) && number(at + 4, 2, 0...59) && at + 6 == b.count
    }

    /// What `--resume` needs from a line already in the file.
    public struct Key: Sendable, Equatable {
        public let command: String
        public let input: String
        public let exitCode: Int32

        /// nil for a line that is not a batch line (cut off, or failing `read`'s checks): its
        /// input runs again.
        public init?(line: String) {
            guard case .success(let read) = BatchLine.read(line) else { return nil }
            self.command = read.command
            self.input = read.input
            self.exitCode = read.exitCode
        }
    }
}

/// Types of values `JSONSerialization` gives, told apart as JSON has them: Foundation hands every
/// number and `true`/`false` over as NSNumber, and `1e20` or `1.0` would pass `as? Int` checks.
enum JSONField {
    /// A JSON integer literal that fits an Int (not a boolean, not a fraction or exponent form).
    static func integer(_ value: Any?) -> Int? {
        guard let number = value as? NSNumber, !isBoolean(number) else { return nil }
        switch String(cString: number.objCType) {
        case "i", "q", "l", "s": return number.intValue
        default: return nil
        }
    }

    /// Any JSON number (not a boolean).
    static func number(_ value: Any) -> Double? {
        guard let number = value as? NSNumber, !isBoolean(number), !(number is NSDecimalNumber) else { return nil }
        return number.doubleValue
    }

    static func isStringOrNull(_ value: Any?) -> Bool {
        value == nil || value is NSNull || value is String
    }

    static func isBoolean(_ number: NSNumber) -> Bool {
        String(cString: number.objCType) == "c"
    }

    /// The value for a one-sentence error: short, its bytes sanitised.
    static func shown(_ value: Any) -> String {
        let text: String
        switch value {
        case is NSNull: text = "null"
        case let s as String: text = "\"" + s + "\""
        case let n as NSNumber: text = isBoolean(n) ? (n.boolValue ? "true" : "false") : n.description
        case is [Any]: text = "a list"
        case is [String: Any]: text = "an object"
        default: text = "\(value)"
        }
        let cut = text.count > 40 ? String(text.prefix(40)) + "…" : text
        return HostileText.sanitized(cut)
    }
}
