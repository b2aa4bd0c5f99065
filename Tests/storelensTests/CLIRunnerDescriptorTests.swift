import Foundation
import StoreTestSupport
import Testing

/// The suite runs storelens thousands of times from one test process. A runner that leaks its
/// pipes' read ends exhausts the open-file limit part way through (CI failed on EMFILE: copies,
/// launches and SQLite opens of unrelated tests), so the runner's own hygiene is tested here.
@Suite struct CLIRunnerDescriptorTests {
    /// The inodes of the pipes this process holds open (Linux: /proc/self/fd).
    static func openPipes() -> Set<String> {
        let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        var pipes = Set<String>()
        for fd in fds {
            if let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(fd)"), target.hasPrefix("pipe:") {
                pipes.insert(target)
            }
        }
        return pipes
    }

    @Test("40 runs of storelens leave no pipe of theirs open in the test process",
          .enabled(if: FileManager.default.fileExists(atPath: "/proc/self/fd"), "needs /proc/self/fd (Linux)"))
    func runsLeaveNoPipes() throws {
        let before = Self.openPipes()
        let runs = 40
        for _ in 0..<runs {
            let result = try CLI.run(["--version"])
            #expect(result.status == 0)
        }
        let left = Self.openPipes().subtracting(before)
        // Other tests run in parallel and hold a few pipes of their own for a moment; a leak of
        // this runner's read ends would leave two per run (80 here).
        #expect(left.count < runs, "\(left.count) pipes opened during the runs are still open")
    }
}
