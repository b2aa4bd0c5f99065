import Foundation
import StoreTestSupport
import Testing

@Suite("storelens-fixtures")
struct FixturesToolTests {
    static var tool: URL { ProjectPaths.debugExecutable().deletingLastPathComponent().appendingPathComponent("storelens-fixtures") }

    @Test("--help prints the usage and writes nothing; an unknown option is refused, never taken as a folder name",
          .enabled(if: FileManager.default.isExecutableFile(atPath: tool.path), "storelens-fixtures is not built"))
    func help() throws {
        let folder = try TemporaryFolder("fixtures-help")
        let before = try FileManager.default.contentsOfDirectory(atPath: FileManager.default.currentDirectoryPath)
        for flag in ["--help", "-h"] {
            let run = try CLI.bounded([flag], environment: ["TMPDIR": folder.url.path], executable: Self.tool)
            #expect(run.status == 0, "\(flag): \(run.stderr)")
            #expect(run.stdout.hasPrefix("usage: storelens-fixtures"), "\(flag): \(run.stdout)")
        }
        let bogus = try CLI.bounded(["--bogus"], environment: ["TMPDIR": folder.url.path], executable: Self.tool)
        #expect(bogus.status == 2)
        #expect(bogus.stderr == "storelens-fixtures: unknown option '--bogus'; run storelens-fixtures --help.\n")
        let after = try FileManager.default.contentsOfDirectory(atPath: FileManager.default.currentDirectoryPath)
        #expect(Set(after) == Set(before), "no folder named after an option")
        #expect(!FileManager.default.fileExists(atPath: "--help") && !FileManager.default.fileExists(atPath: "-h"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.url.path).isEmpty)
    }
}
