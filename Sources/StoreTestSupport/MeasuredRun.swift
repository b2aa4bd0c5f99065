import Foundation

extension CLI {
    /// What one measured run did: its exit status and the most memory it held.
    public struct Measured: Sendable {
        public let status: Int32
        /// The child's peak resident set size; nil when python3 (which measures it) is not available.
        public let peakResidentBytes: Int?
        public let stderr: String
        /// Why the peak could not be measured, when it could not.
        public let unmeasured: String?
    }

    /// Runs storelens with `arguments`, its stdout written to the file `stdout` (a large output
    /// never passes through the test's memory), and returns its peak resident set size.
    ///
    /// A small python3 process starts storelens and reports its own `RUSAGE_CHILDREN`: on Linux a
    /// process started straight from the test (vfork and exec) inherits the test process's own
    /// high-water mark in `ru_maxrss`, which may be hundreds of megabytes; started from a small
    /// process, only that process's few megabytes come along.
    public static func measured(_ arguments: [String], stdout: URL, environment: [String: String] = [:],
                                timeout: TimeInterval = defaultTimeout, file: String = #filePath) throws -> Measured {
        let errors = stdout.deletingLastPathComponent().appendingPathComponent(stdout.lastPathComponent + ".stderr")
        let script = """
            import resource, subprocess, sys
            out, err, argv = sys.argv[1], sys.argv[2], sys.argv[3:]
            with open(out, "wb") as o, open(err, "wb") as e:
                status = subprocess.call(argv, stdin=subprocess.DEVNULL, stdout=o, stderr=e)
            print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
            sys.exit(status if status >= 0 else 128 - status)
            """
        let run = try bounded(["python3", "-c", script, stdout.path, errors.path, ProjectPaths.executable(from: file).path] + arguments,
                              environment: environment, timeout: timeout, executable: URL(fileURLWithPath: "/usr/bin/env"))
        let stderrText = (try? String(contentsOf: errors, encoding: .utf8)) ?? run.stderr
        try? FileManager.default.removeItem(at: errors)
        guard !run.timedOut else { throw CLIRunFailure(arguments: arguments, problem: "still running after \(Int(timeout)) s; killed") }
        guard let reported = Int(run.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            return Measured(status: run.status, peakResidentBytes: nil, stderr: stderrText,
                            unmeasured: "python3 could not run storelens and measure it (\(run.stderr.prefix(200))); its peak memory is not checked")
        }
        #if os(Linux)
        let peak = reported * 1024  // kilobytes on Linux
        #else
        let peak = reported         // bytes on macOS
        #endif
        return Measured(status: run.status, peakResidentBytes: peak, stderr: stderrText, unmeasured: nil)
    }
}
