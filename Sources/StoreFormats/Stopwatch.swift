import Foundation

/// Seconds elapsed since it was made, on the monotonic clock: what `STORELENS_TIMINGS` lines and
/// batch lines report. One formula for turning a `Duration` into seconds, so every timing agrees.
public struct Stopwatch: Sendable {
    public let started: ContinuousClock.Instant

    public init() { started = ContinuousClock.now }

    /// Seconds since `init`, to the attosecond the clock gives.
    public var seconds: Double { Self.seconds(of: ContinuousClock.now - started) }

    /// `duration` in seconds (as from `ContinuousClock.measure`).
    public static func seconds(of duration: Duration) -> Double {
        let (whole, attoseconds) = duration.components
        return Double(whole) + Double(attoseconds) / 1e18
    }
}

/// Where timing lines go (`STORELENS_TIMINGS` for `make bench`): given to an operation by whoever
/// calls it, so the libraries neither read the environment nor print; nil records nothing.
public struct Timings: Sendable {
    private let sink: @Sendable (String) -> Void

    /// `sink` receives one line per measurement, `name=value` pairs without "timing " or a newline.
    public init(_ sink: @escaping @Sendable (String) -> Void) {
        self.sink = sink
    }

    public func record(_ line: String) {
        sink(line)
    }

    /// Where the libraries' own measurements deep inside a call go (the checks' tasks, the WAL
    /// agreement, backup decryption), for the ones no options value reaches: set once by whoever
    /// runs storelens, before any work starts (the command sets it when `STORELENS_TIMINGS` asks),
    /// and only read afterwards; nil records nothing.
    nonisolated(unsafe) public static var process: Timings?

    /// Seconds as the timing lines print them (six decimals).
    public static func seconds(_ duration: Duration) -> String {
        String(format: "%.6f", Stopwatch.seconds(of: duration))
    }
}
