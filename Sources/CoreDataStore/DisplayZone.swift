import Foundation

/// The time zone dates are shown in for people (text, CSV, Markdown, HTML: `--tz`); JSON always
/// keeps ISO 8601 UTC. Bound for the length of one command with `DisplayZone.$current`, so the
/// renderers deep inside a report need no extra parameter.
public struct DisplayZone: Sendable, Equatable {
    /// nil: UTC, written with `Z` exactly as JSON writes it.
    public let zone: TimeZone?

    public static let utc = DisplayZone(zone: nil)

    @TaskLocal public static var current: DisplayZone = .utc

    /// The zone with this IANA name (`Europe/Berlin`, `America/New_York`, `UTC`); nil when the
    /// system's time zone database does not know it.
    public init?(identifier: String) {
        guard !identifier.isEmpty, identifier.count <= 128 else { return nil }
        if identifier == "UTC" || identifier == "Etc/UTC" || identifier == "Z" { self.zone = nil; return }
        guard let zone = TimeZone(identifier: identifier) else { return nil }
        self.zone = zone
    }

    init(zone: TimeZone?) {
        self.zone = zone
    }

    public var isUTC: Bool { zone == nil }

    /// The zone's name as given (`UTC` for UTC).
    public var name: String { zone?.identifier ?? "UTC" }

    /// Seconds since 2001-01-01 UTC as ISO 8601 in this zone, with its offset at that instant
    /// (`2024-07-29T05:19:53.611546+02:00`); in UTC exactly `ValueDecoder.iso8601`.
    public func iso8601(referenceSeconds: Double) -> String {
        guard let zone, referenceSeconds.isFinite, abs(referenceSeconds) < 1e12 else {
            return ValueDecoder.iso8601(referenceSeconds: referenceSeconds)
        }
        let offset = zone.secondsFromGMT(for: Date(timeIntervalSinceReferenceDate: referenceSeconds))
        let local = ValueDecoder.iso8601(referenceSeconds: referenceSeconds + Double(offset))
        guard local.hasSuffix("Z") else { return local }
        let sign = offset < 0 ? "-" : "+"
        let minutes = abs(offset) / 60
        return String(local.dropLast()) + sign + String(format: "%02d:%02d", minutes / 60, minutes % 60)
    }

    /// An ISO 8601 UTC text as written by `ValueDecoder.iso8601`, shown in this zone; text that
    /// does not parse is returned as it is.
    public func iso8601(utc text: String) -> String {
        guard zone != nil, let seconds = ValueDecoder.parseDate(text) else { return text }
        return iso8601(referenceSeconds: seconds)
    }
}
