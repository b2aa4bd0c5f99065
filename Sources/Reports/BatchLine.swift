import Findings
import Foundation

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

    public func json() -> JSONValue {
        .object([
            ("schemaVersion", .int(Self.schemaVersion)),
            ("command", .string(command)),
            ("input", .string(input)),
            ("sha256", .optional(sha256)),
            ("status", .string(status.rawValue)),
            ("exitCode", .int(Int(exitCode))),
            ("summary", summary),
            ("findings", .array(findings.map(FindingsReport.json))),
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

    /// What `--resume` needs from a line already in the file.
    public struct Key: Sendable, Equatable {
        public let command: String
        public let input: String
        public let exitCode: Int32

        /// nil for a line that is not a batch line (or was cut off).
        public init?(line: String) {
            guard let data = line.data(using: .utf8),
                  let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
                  let command = object["command"] as? String, let input = object["input"] as? String else { return nil }
            self.command = command
            self.input = input
            self.exitCode = (object["exitCode"] as? NSNumber)?.int32Value ?? 0
        }
    }
}
