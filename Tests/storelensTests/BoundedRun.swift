import Foundation
import StoreTestSupport

/// Runs the built `storelens` like `CLI.run`, but with a time bound: a run still going after
/// `timeout` seconds is killed and reported as a hang. Used by the hostile-corpus and evidence
/// tests, where a hang is one of the failures being looked for.
enum BoundedRun {
    struct Outcome: Sendable {
        let status: Int32
        /// Killed by a signal (a crash, or our kill after a hang).
        let signaled: Bool
        let timedOut: Bool
        let stdout: String
        let stderr: String
        let seconds: Double

        /// Whether the process died the way a crash does: a signal, an exit code of 128 or more,
        /// or Swift's fatal-error message.
        var crashed: Bool { signaled || status >= 128 || stderr.contains("Fatal error") || stderr.contains("Program crashed") }
    }

    private final class Collected: @unchecked Sendable {
        let lock = NSLock()
        var stdout = Data()
        var stderr = Data()
    }

    /// - Parameter tool: another program to run instead of storelens (a shell that sets a limit first).
    static func run(_ arguments: [String], environment: [String: String] = [:], timeout: TimeInterval = 30, tool: String? = nil) throws -> Outcome {
        let process = Process()
        process.executableURL = tool.map { URL(fileURLWithPath: $0) } ?? ProjectPaths.executable()
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        for (k, v) in environment { env[k] = v }
        process.environment = env
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        let exited = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in exited.signal() }
        let start = Date()
        try process.run()

        // Drain both pipes while the child runs so a large output cannot block it. (Not
        // FileHandle.readDataToEndOfFile: it traps when read(2) is interrupted by a signal, which
        // happens with many children exiting at once.)
        let collected = Collected()
        let readers = DispatchGroup()
        for (fd, isOut) in [(out.fileHandleForReading.fileDescriptor, true), (err.fileHandleForReading.fileDescriptor, false)] {
            readers.enter()
            DispatchQueue.global().async {
                let data = drain(fd)
                collected.lock.lock()
                if isOut { collected.stdout = data } else { collected.stderr = data }
                collected.lock.unlock()
                readers.leave()
            }
        }
        var timedOut = false
        if exited.wait(timeout: .now() + timeout) == .timedOut {
            timedOut = true
            process.terminate()
            if exited.wait(timeout: .now() + 3) == .timedOut {
                kill(process.processIdentifier, SIGKILL)
                exited.wait()
            }
        }
        _ = readers.wait(timeout: .now() + 10)
        withExtendedLifetime((out, err)) {}
        collected.lock.lock()
        defer { collected.lock.unlock() }
        return Outcome(status: process.terminationStatus, signaled: process.terminationReason == .uncaughtSignal,
                       timedOut: timedOut, stdout: String(decoding: collected.stdout, as: UTF8.self),
                       stderr: String(decoding: collected.stderr, as: UTF8.self), seconds: Date().timeIntervalSince(start))
    }

    /// Everything up to end of file, retrying reads a signal interrupted.
    static func drain(_ fd: Int32) -> Data {
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n > 0 {
                data.append(contentsOf: buffer[0..<n])
            } else if n < 0 && errno == EINTR {
                continue
            } else {
                return data
            }
        }
    }

    /// The commands the built binary has (`report` is newer than the others).
    static let availableCommands: Set<String> = {
        guard let help = try? run(["--help"], timeout: 30) else { return [] }
        var names = Set<String>()
        var inSubcommands = false
        for line in help.stdout.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("SUBCOMMANDS:") { inSubcommands = true; continue }
            guard inSubcommands, line.hasPrefix("  "), !line.hasPrefix("   ") else { continue }
            if let word = line.split(separator: " ").first { names.insert(String(word)) }
        }
        return names
    }()

    /// Every command, with the extra arguments it needs: audit a manifest, rows an entity, repair and
    /// report a place for their output (in `outputs`, never beside the input).
    static func everyCommand(input: String, manifest: URL, outputs: URL, entity: String = "TodoItem") -> [(name: String, arguments: [String])] {
        var result: [(String, [String])] = [
            ("scan", ["scan", input]),
            ("inspect", ["inspect", input]),
            ("schema", ["schema", input]),
            ("rows", ["rows", input, entity, "--limit", "50"]),
            ("history", ["history", input]),
            ("wal", ["wal", input]),
            ("audit", ["audit", input, "--manifest", manifest.path]),
            ("check", ["check", input]),
            ("repair", ["repair", input, "--out", outputs.appendingPathComponent("repaired.store").path]),
        ]
        if availableCommands.contains("report") {
            result.append(("report", ["report", input, "--out", outputs.appendingPathComponent("report.html").path]))
        }
        return result
    }

    /// A manifest that fits the to-do stores the tests build.
    static let todoManifest = """
    {"manifestVersion": 1,
     "stacks": [{"name": "app", "kind": "swiftdata", "store": "**/*.store", "writers": {"bundleIDs": ["com.example.todo"]}}],
     "entities": [{"current": "TodoItem", "writer": "app", "identity": ["id"]}, {"current": "TodoList", "writer": "app"}]}
    """
}
