import Foundation
import StoreTestSupport

/// storelens started and held at one of its `TestPause` points (STORELENS_TEST_PAUSE_AT) until
/// the test creates the gate file, so that the test can act while it waits there.
enum PausedRun {
    /// Starts storelens paused at `point` and waits until it is there.
    static func start(_ arguments: [String], at point: String, scratch: URL, gate: URL) throws -> Process {
        try launch(arguments, at: point, scratch: scratch, gate: gate, stderr: FileHandle.nullDevice)
    }

    /// `start` with stderr kept, for tests that read the one sentence of a failure.
    static func startCapturing(_ arguments: [String], at point: String, scratch: URL, gate: URL) throws -> (Process, Pipe) {
        let stderr = Pipe()
        return (try launch(arguments, at: point, scratch: scratch, gate: gate, stderr: stderr), stderr)
    }

    private static func launch(_ arguments: [String], at point: String, scratch: URL, gate: URL, stderr: Any) throws -> Process {
        let process = Process()
        process.executableURL = ProjectPaths.executable()
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging([
            "TMPDIR": scratch.path, "STORELENS_TEST_PAUSE_AT": point, "STORELENS_TEST_PAUSE_FILE": gate.path,
        ]) { $1 }
        process.standardOutput = FileHandle.nullDevice
        process.standardError = stderr
        try process.run()
        // Not a timing bound: the pause holds for up to 60 s, so the wait ends when it is reached
        // (or the process has ended, which the caller's expectations report).
        while process.isRunning, !FileManager.default.fileExists(atPath: gate.path + ".reached") { usleep(5_000) }
        return process
    }
}
