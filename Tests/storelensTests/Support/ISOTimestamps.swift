import Foundation

/// The ISO 8601 UTC timestamps commands print, read back independently of storelens.
enum ISOTimestamps {
    /// Seconds since 1970 of `YYYY-MM-DDTHH:MM:SS[.ffffff]Z`, the fraction read in full (the
    /// formatter alone keeps milliseconds).
    static func seconds(_ iso: String) -> Double? {
        guard iso.hasSuffix("Z") else { return nil }
        let body = iso.dropLast()
        let parts = body.split(separator: ".", maxSplits: 1)
        guard let whole = parts.first, let date = ISO8601DateFormatter().date(from: whole + "Z") else { return nil }
        guard parts.count == 2 else { return date.timeIntervalSince1970 }
        guard parts[1].allSatisfy(\.isNumber), let fraction = Double("0." + parts[1]) else { return nil }
        return date.timeIntervalSince1970 + fraction
    }
}
