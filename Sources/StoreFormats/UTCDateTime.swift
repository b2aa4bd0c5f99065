/// A moment as UTC calendar fields (proleptic Gregorian), from Core Data's seconds since
/// 2001-01-01: what the ISO 8601 texts of dates are written from, without a formatter per value
/// (the row writers print millions of them; inlinable for that reason).
public struct UTCDateTime: Sendable, Equatable {
    /// Seconds from 1970-01-01 to 2001-01-01 UTC, Core Data's reference date.
    public static let referenceDateOffset: Double = 978_307_200

    public let year: Int64
    /// 1 ... 12.
    public let month: Int64
    /// 1 ... 31.
    public let day: Int64
    /// 0 ..< 86_400.
    public let secondOfDay: Int64
    /// 0 ..< 1_000_000, rounded to the nearest microsecond (a carry goes into the second).
    public let microsecond: Int64

    /// Nil for values no calendar can show: not finite, or 1e12 seconds (31,700 years) or more
    /// from 2001, where a Double no longer holds microseconds and Int64 arithmetic must not trap.
    @inlinable
    public init?(referenceSeconds: Double) {
        guard referenceSeconds.isFinite, abs(referenceSeconds) < 1e12 else { return nil }
        let unix = referenceSeconds + Self.referenceDateOffset
        var whole = unix.rounded(.down)
        var micros = Int64(((unix - whole) * 1_000_000).rounded())
        if micros >= 1_000_000 { whole += 1; micros -= 1_000_000 }
        let seconds = Int64(whole)
        var days = seconds / 86_400
        var rest = seconds % 86_400
        if rest < 0 { rest += 86_400; days -= 1 }
        (year, month, day) = Self.civilDate(daysSince1970: days)
        secondOfDay = rest
        microsecond = micros
    }

    /// Year, month and day of the day `days` after 1970-01-01 (before it when negative), by
    /// H. Hinnant's `civil_from_days`. `days` must be within ±(Int64.max / 2).
    @inlinable
    public static func civilDate(daysSince1970 days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
