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
