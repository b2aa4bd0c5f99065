import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension CLI {
    /// What one measured run did: its exit status and the most memory it held.
    public struct Measured: Sendable {
        public let status: Int32
        /// Killed by a signal (a crash, or our kill after `timeout`).
        public let signaled: Bool
        /// The child's peak resident set size, as the kernel counted it for that one process.
        public let peakResidentBytes: Int
        public let stderr: String
    }

    /// Runs storelens with `arguments`, its stdout written to the file `stdout` (a large output
    /// never passes through the test's memory), and returns its peak resident set size: the
    /// `rusage` that `wait4` reports for that child alone (RUSAGE_CHILDREN would mix in every other
    /// test's children). Killed after `timeout` seconds.
    public static func measured(_ arguments: [String], stdout: URL, environment: [String: String] = [:],
                                timeout: TimeInterval = defaultTimeout, file: String = #filePath) throws -> Measured {
        let executable = ProjectPaths.executable(from: file).path
        let errors = stdout.deletingLastPathComponent().appendingPathComponent(stdout.lastPathComponent + ".stderr")
        var env = ProcessInfo.processInfo.environment
        for (k, v) in environment { env[k] = v }
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = env.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        #if os(Linux)
        var actions = posix_spawn_file_actions_t()
        #else
        var actions: posix_spawn_file_actions_t?
        #endif
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, stdout.path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, errors.path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, executable, &actions, nil, argv, envp)
        guard spawned == 0 else {
            throw CLIRunFailure(arguments: arguments, problem: "could not be started (\(String(cString: strerror(spawned))))")
        }
        let watchdog = Watchdog(pid: pid)
        DispatchQueue.global().asyncAfter(deadline: .now() + timeout) { watchdog.fire() }
        var status: Int32 = 0
        var usage = rusage()
        while wait4(pid, &status, 0, &usage) < 0 && errno == EINTR {}
        watchdog.disarm()
        #if os(Linux)
        let peak = usage.ru_maxrss * 1024  // kilobytes on Linux
        #else
        let peak = usage.ru_maxrss         // bytes on macOS
        #endif
        let stderrText = (try? String(contentsOf: errors, encoding: .utf8)) ?? ""
        try? FileManager.default.removeItem(at: errors)
        let signal = status & 0x7f
        return Measured(status: signal == 0 ? (status >> 8) & 0xff : 128 + signal, signaled: signal != 0,
                        peakResidentBytes: Int(peak), stderr: stderrText)
    }

    /// Kills a child still running at its deadline; disarmed as soon as the child is reaped.
    private final class Watchdog: @unchecked Sendable {
        private let lock = NSLock()
        private let pid: pid_t
        private var armed = true
        init(pid: pid_t) { self.pid = pid }
        func fire() { lock.withLock { if armed { kill(pid, SIGKILL) } } }
        func disarm() { lock.withLock { armed = false } }
    }
}
