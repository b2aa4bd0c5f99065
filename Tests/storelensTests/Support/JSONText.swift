import Foundation
import SQLiteAccess
import StoreBuilder
import StoreFormats
import StoreTestSupport
import Testing

/// Two JSON values compared as JSON: both written with sorted keys (Foundation on Linux has no
/// `isEqual` across bridged types).
enum JSONText {
    static func same(_ a: Any, _ b: Any) -> Bool {
        guard JSONSerialization.isValidJSONObject([a]), JSONSerialization.isValidJSONObject([b]),
              let x = try? JSONSerialization.data(withJSONObject: [a], options: [.sortedKeys]),
              let y = try? JSONSerialization.data(withJSONObject: [b], options: [.sortedKeys]) else { return false }
        return x == y
    }
}
