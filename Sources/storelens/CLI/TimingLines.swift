import Foundation
import Operations
import StoreFormats

extension Timings {
    /// `STORELENS_TIMINGS` set: each measurement as a `timing …` line on stderr, for `make bench`
    /// (the only place the variable is read for the operations).
    static var fromEnvironment: Timings? {
        guard ProcessInfo.processInfo.environment["STORELENS_TIMINGS"] != nil else { return nil }
        return Timings { line in Output().error("timing \(line)\n") }
    }
}
