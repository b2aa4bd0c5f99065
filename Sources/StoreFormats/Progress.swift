import Foundation

/// Progress of long work — reading an archive, hashing, decoding history, running checks —
/// reported by library code that knows nothing about terminals.
///
/// Library code calls `ProgressReporter.current.report(…)`; nothing is passed down through
/// signatures. The executable binds `current` (a task-local, also usable from synchronous code
/// and per thread) to a reporter that draws one line on stderr when stderr is a terminal.
/// Everywhere else — tests, pipes, `--quiet`, other users of the library — it is `.silent`,
/// and a call returns at once without building its text (the task name is an autoclosure).
///
/// Updates are rate-limited here, so callers may report on every item: the sink sees at most
/// one update per `interval`, and none before `delay` has passed since the first report (short
/// work never flashes a line). It lives in StoreFormats because every library target that does
/// long work already depends on it.
public final class ProgressReporter: @unchecked Sendable {
    /// One progress line's facts. `text` is how the terminal shows it.
    public struct Update: Sendable, Equatable {
        public enum Unit: Sendable, Equatable {
            case bytes
            /// Counted things, named in the plural: "transactions", "entries".
            case items(String)
            /// A step of work whose name says it all: only the task is shown.
            case step
        }
        public let task: String
        public let done: Int64
        public let total: Int64?
        public let unit: Unit

        public init(task: String, done: Int64, total: Int64?, unit: Unit) {
            self.task = task
            self.done = done
            self.total = total
            self.unit = unit
        }

        /// "reading x.tar.gz: 45% (100.0 MB of 220.0 MB)", "history: 12,345 of 100,000 transactions (12%)".
        public var text: String {
            switch unit {
            case .step:
                return task
            case .bytes:
                if let total, total > 0 {
                    return "\(task): \(Self.percent(done, total)) (\(Self.bytes(done)) of \(Self.bytes(total)))"
                }
                return "\(task): \(Self.bytes(done))"
            case .items(let noun):
                let suffix = noun.isEmpty ? "" : " \(noun)"
                if let total, total > 0 {
                    return "\(task): \(Self.grouped(done)) of \(Self.grouped(total))\(suffix) (\(Self.percent(done, total)))"
                }
                return "\(task): \(Self.grouped(done))\(suffix)"
            }
        }

        static func percent(_ done: Int64, _ total: Int64) -> String {
            "\(min(100, max(0, Int(Double(done) * 100 / Double(total)))))%"
        }

        static func bytes(_ n: Int64) -> String {
            let units = ["bytes", "KB", "MB", "GB", "TB"]
            var value = Double(n)
            var unit = 0
            while value >= 1000 && unit < units.count - 1 { value /= 1000; unit += 1 }
            return unit == 0 ? "\(n) bytes" : String(format: "%.1f", value) + " " + units[unit]
        }

        /// 1234567 → "1,234,567".
        public static func grouped(_ n: Int64) -> String {
            let digits = String(n.magnitude)
            var out = ""
            for (i, c) in digits.enumerated() {
                if i > 0 && (digits.count - i) % 3 == 0 { out.append(",") }
                out.append(c)
            }
            return n < 0 ? "-" + out : out
        }
    }

    /// Receives an update to show, or nil to clear the line.
    public typealias Sink = @Sendable (Update?) -> Void

    /// The reporter library code reports to. `.silent` unless the executable binds one.
    @TaskLocal public static var current: ProgressReporter = .silent

    /// Reports nothing; every call returns at once.
    public static let silent = ProgressReporter()

    private let sink: Sink?
    private let intervalNanoseconds: UInt64
    private let delayNanoseconds: UInt64
    private let clock: @Sendable () -> UInt64
    private let lock = NSLock()
    private var firstReport: UInt64?
    private var lastShown: UInt64?
    private var shown = false
    private var context: String?

    /// Where in a longer run the work reported next belongs ("store 37 of 2,000"), shown before
    /// each task until cleared with nil: hashing one file of a scan of thousands says which of them.
    public func setContext(_ text: String?) {
        guard sink != nil else { return }
        lock.lock()
        context = text
        lock.unlock()
    }

    private init() {
        sink = nil
        intervalNanoseconds = 0
        delayNanoseconds = 0
        clock = { 0 }
    }

    /// - Parameters:
    ///   - interval: the least time between two updates the sink sees.
    ///   - delay: how long work must have run before the first update is shown.
    ///   - clock: monotonic nanoseconds (tests pass their own).
    public init(interval: Duration = .milliseconds(100), delay: Duration = .milliseconds(300),
                clock: @escaping @Sendable () -> UInt64 = { DispatchTime.now().uptimeNanoseconds },
                sink: @escaping Sink) {
        self.sink = sink
        self.intervalNanoseconds = Self.nanoseconds(interval)
        self.delayNanoseconds = Self.nanoseconds(delay)
        self.clock = clock
    }

    public var isSilent: Bool { sink == nil }

    /// Reports that `done` of `total` (when known) has been done of `task`. Cheap when silent
    /// or rate-limited: the task's text is built only when the update is shown.
    public func report(_ task: @autoclosure () -> String, done: Int64, total: Int64? = nil, unit: Update.Unit = .items("")) {
        guard let sink else { return }
        let now = clock()
        lock.lock()
        defer { lock.unlock() }
        let first = firstReport ?? now
        firstReport = first
        guard now &- first >= delayNanoseconds else { return }
        if let last = lastShown, now &- last < intervalNanoseconds { return }
        lastShown = now
        shown = true
        sink(Update(task: context.map { "\($0): \(task())" } ?? task(), done: done, total: total, unit: unit))
    }

    /// Removes the line, if one is shown (before printing results, and when work ends).
    public func clear() {
        guard let sink else { return }
        lock.lock()
        defer { lock.unlock() }
        guard shown else { return }
        shown = false
        lastShown = nil
        sink(nil)
    }

    /// Runs `body` with this reporter as `current`, and clears its line afterwards.
    public func bind<T>(_ body: () throws -> T) rethrows -> T {
        defer { clear() }
        return try Self.$current.withValue(self) { try body() }
    }

    static func nanoseconds(_ d: Duration) -> UInt64 {
        let (seconds, attoseconds) = d.components
        return UInt64(max(0, seconds)) * 1_000_000_000 + UInt64(max(0, attoseconds) / 1_000_000_000)
    }
}
