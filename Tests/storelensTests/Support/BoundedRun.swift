import Foundation
import StoreTestSupport

/// The hostile-corpus and evidence tests' view of `CLI.bounded` (the one runner, in
/// StoreTestSupport): a run still going after `timeout` seconds is killed and reported as a hang,
/// which is one of the failures those tests look for. Also the command lists they share.
enum BoundedRun {
    typealias Outcome = CLI.Outcome

    /// - Parameter tool: another program to run instead of storelens (a shell that sets a limit first).
    static func run(_ arguments: [String], environment: [String: String] = [:], timeout: TimeInterval = CLI.defaultTimeout, tool: String? = nil) throws -> Outcome {
        try CLI.bounded(arguments, environment: environment, timeout: timeout, executable: tool.map { URL(fileURLWithPath: $0) })
    }

    /// The subcommands `storelens --help` lists, or nil when the help cannot be run or read. The
    /// corpus runs every one of them (`CommandPlan.commands`); a test compares the two lists.
    static let helpCommands: Set<String>? = {
        guard let help = try? run(["--help"], timeout: 60), help.status == 0, !help.timedOut else { return nil }
        var names = Set<String>()
        var inSubcommands = false
        for line in help.stdout.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("SUBCOMMANDS:") { inSubcommands = true; continue }
            // The list ends at its first blank line.
            if inSubcommands && line.trimmingCharacters(in: .whitespaces).isEmpty { break }
            guard inSubcommands, line.hasPrefix("  "), !line.hasPrefix("   ") else { continue }
            if let word = line.split(separator: " ").first { names.insert(String(word)) }
        }
        return names.isEmpty ? nil : names
    }()

    /// A manifest that fits the to-do stores the tests build.
    static let todoManifest = """
    {"manifestVersion": 1,
     "stacks": [{"name": "app", "kind": "swiftdata", "store": "**/*.store", "writers": {"bundleIDs": ["com.example.todo"]}}],
     "entities": [{"current": "TodoItem", "writer": "app", "identity": ["id"]}, {"current": "TodoList", "writer": "app"}]}
    """
}
