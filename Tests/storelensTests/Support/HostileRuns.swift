import Foundation

/// How a command run on hostile input is bounded and judged.
enum HostileRuns {
    /// A hang bound, not a timing assertion: generous, as `report` on the 300,000-string plist takes
    /// 5 s of CPU and the CI machine is shared (it took over 30 s at a load of 13 on 2 cores).
    static let timeout: TimeInterval = 60

    /// Whether an error message names the input (its path, or its file name).
    static func names(_ message: String, _ input: String) -> Bool {
        let name = URL(fileURLWithPath: input).lastPathComponent
        return message.contains(input) || message.contains(name)
    }
}
