import Foundation

/// The result of running the `storelens` executable.
public struct CommandResult: Sendable {
    public let status: Int32
    public let stdout: String
    public let stderr: String
}

/// Why a `CLI.run` failed the test that called it: it hung, or it left scratch behind.
public struct CLIRunFailure: Error, CustomStringConvertible {
    public let arguments: [String]
    public let problem: String
    public var description: String { "storelens \(arguments.joined(separator: " ")): \(problem)" }
}

/// Runs the built `storelens`. The one runner of the tests: `CLI.run` for tests that expect an
/// answer, `CLI.bounded` for those that look for hangs and crashes themselves (the hostile corpus,
/// the evidence guarantee).
public enum CLI {
    /// How long one run may take before it counts as a hang. Generous: the machine is shared.
    public static let defaultTimeout: TimeInterval = 120

    /// What one bounded run did.
    public struct Outcome: Sendable {
        public let status: Int32
        /// Killed by a signal (a crash, or our kill after a hang).
        public let signaled: Bool
        public let timedOut: Bool
        public let stdout: String
        public let stderr: String
        public let seconds: Double

        /// Whether the process died the way a crash does: a signal, an exit code of 128 or more,
        /// or Swift's fatal-error message.
        public var crashed: Bool { signaled || status >= 128 || stderr.contains("Fatal error") || stderr.contains("Program crashed") }
    }

    /// Runs storelens with `arguments` and returns its answer. Each run gets a TMPDIR of its own
    /// (unless `environment` names one: then the caller checks it) that must be empty afterwards;
    /// a run that leaves scratch there, or is still going after `timeout` (then killed), throws
    /// `CLIRunFailure` naming the arguments, which fails the calling test.
    /// - Parameter standardInput: what the child reads as stdin (the null device unless given).
    /// - Parameter executable: the binary to run (`ProjectPaths.executable` unless given).
    public static func run(_ arguments: [String], environment: [String: String] = [:], timeout: TimeInterval = defaultTimeout,
                           standardInput: FileHandle? = nil, executable: URL? = nil, file: String = #filePath) throws -> CommandResult {
        var environment = environment
        var privateTMPDIR: URL?
        if environment["TMPDIR"] == nil {
            let url = FileManager.default.temporaryDirectory.appendingPathComponent("sltest-cli-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: false)
            environment["TMPDIR"] = url.path
            privateTMPDIR = url
        }
        defer { if let privateTMPDIR { try? FileManager.default.removeItem(at: privateTMPDIR) } }
        let batchFileBefore = JSONSpool.batchLines(arguments)
        let outcome = try bounded(arguments, environment: environment, timeout: timeout, executable: executable ?? ProjectPaths.executable(from: file),
                                  standardInput: standardInput)
        if outcome.timedOut {
            throw CLIRunFailure(arguments: arguments, problem: "still running after \(Int(timeout)) s; killed")
        }
        if let privateTMPDIR {
            let left = (try? FileManager.default.contentsOfDirectory(atPath: privateTMPDIR.path)) ?? []
            if !left.isEmpty {
                throw CLIRunFailure(arguments: arguments, problem: "left \(left.sorted().joined(separator: ", ")) in its TMPDIR (exit \(outcome.status))")
            }
        }
        JSONSpool.record(arguments, outcome, batchFileBefore: batchFileBefore)
        return CommandResult(status: outcome.status, stdout: outcome.stdout, stderr: outcome.stderr)
    }

    private final class Collected: @unchecked Sendable {
        let lock = NSLock()
        var stdout = Data()
        var stderr = Data()
    }

    /// Runs `executable` (storelens unless given: e.g. a shell that sets a limit first) and kills
    /// it after `timeout` seconds (SIGTERM, then SIGKILL): the outcome says so instead of throwing.
    public static func bounded(_ arguments: [String], environment: [String: String] = [:], timeout: TimeInterval = defaultTimeout,
                               executable: URL? = nil, standardInput: FileHandle? = nil) throws -> Outcome {
        let process = Process()
        process.executableURL = executable ?? ProjectPaths.executable()
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        for (k, v) in environment { env[k] = v }
        process.environment = env
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = standardInput ?? FileHandle.nullDevice
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
        // Close our read ends ourselves: Foundation's Process keeps its pipes alive past the run
        // (the Process object outlives it on Linux), so relying on deinit leaked two descriptors a
        // run, and the whole suite's thousands of runs hit the open-file limit (EMFILE in CI).
        try? out.fileHandleForReading.close()
        try? err.fileHandleForReading.close()
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
}

/// Every JSON output of the runs the tests make, kept for `make test` to validate against its
/// schema in schemas/ afterwards (scripts/json-schemas.py): with STORELENS_TEST_JSON_SPOOL set
/// (scripts/test.sh sets it), each `CLI.run` whose stdout is JSON (`--format json`, `jsonl`,
/// `array`) or that wrote a batch results file (`--jsonl FILE`) leaves one record there. One
/// process validates them all at the end, instead of a Python start per run.
enum JSONSpool {
    static let folder = ProcessInfo.processInfo.environment["STORELENS_TEST_JSON_SPOOL"].map { URL(fileURLWithPath: $0) }

    /// The batch results file a run names (`--jsonl FILE`), resolved as the child resolves it.
    static func batchFile(_ arguments: [String]) -> URL? {
        guard let i = arguments.firstIndex(of: "--jsonl"), i + 1 < arguments.count, arguments[i + 1] != "-" else { return nil }
        return URL(fileURLWithPath: arguments[i + 1], relativeTo: URL(fileURLWithPath: FileManager.default.currentDirectoryPath))
    }

    /// The batch file's lines before the run: only the lines the run adds are its output (a test
    /// may have written lines of its own there, malformed ones included, for `merge` or `--resume`
    /// to meet; `--resume` may also set a cut line aside, rewriting the file).
    static func batchLines(_ arguments: [String]) -> [Substring] {
        guard folder != nil, let url = batchFile(arguments), let text = try? String(contentsOf: url, encoding: .utf8) else { return [] }
        return text.split(separator: "\n")
    }

    static func record(_ arguments: [String], _ outcome: CLI.Outcome, batchFileBefore: [Substring]) {
        guard let folder else { return }
        var json = false
        for (i, argument) in arguments.enumerated() {
            let next = i + 1 < arguments.count ? arguments[i + 1] : nil
            if ["--format", "-f"].contains(argument), let next, ["json", "jsonl", "array"].contains(next) { json = true }
            if ["--format=json", "--format=jsonl", "--format=array"].contains(argument) { json = true }
        }
        var appended = ""
        if let url = batchFile(arguments), let text = try? String(contentsOf: url, encoding: .utf8) {
            var before: [Substring: Int] = [:]
            for line in batchFileBefore { before[line, default: 0] += 1 }
            for line in text.split(separator: "\n") {
                if let n = before[line], n > 0 { before[line] = n - 1 } else { appended += line + "\n" }
            }
        }
        guard json || !appended.isEmpty else { return }
        let record: [String: Any] = ["arguments": arguments, "status": Int(outcome.status), "stdout": json ? outcome.stdout : "", "jsonl": appended]
        guard let data = try? JSONSerialization.data(withJSONObject: record) else { return }
        try? data.write(to: folder.appendingPathComponent("\(UUID().uuidString).json"))
    }
}
