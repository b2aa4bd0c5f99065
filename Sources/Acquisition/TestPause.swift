import Foundation

/// A stopping point for the tests that must act at an exact moment of a long operation (change
/// the evidence while a repair verifies, interrupt it there), without guessing with sleeps.
///
/// With `STORELENS_TEST_PAUSE_AT=<point>` and `STORELENS_TEST_PAUSE_FILE=<path>` in the
/// environment, reaching `<point>` creates `<path>.reached` and waits until `<path>` exists (at
/// most 60 s). Without them it does nothing. Package access: the tests' hook is not part of the
/// library's public API.
package enum TestPause {
    package static func reach(_ point: String) {
        let env = ProcessInfo.processInfo.environment
        guard env["STORELENS_TEST_PAUSE_AT"] == point, let file = env["STORELENS_TEST_PAUSE_FILE"], !file.isEmpty else { return }
        _ = FileManager.default.createFile(atPath: file + ".reached", contents: Data(point.utf8))
        for _ in 0..<6000 where !FileManager.default.fileExists(atPath: file) { usleep(10_000) }
    }
}
