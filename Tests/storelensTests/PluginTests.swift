import Foundation
import StoreTestSupport
import Testing

/// `swift package storelens …` from a package that depends on storelens (Examples/MigrationTest,
/// by path): the command plugin builds storelens and runs it in that package, with its arguments,
/// its output on stdout and its exit status. Shares the example's build folder, which
/// scripts/test.sh builds (the tool included) before the tests start.
@Suite("the SwiftPM command plugin in an app team's package")
struct PluginTests {
    @Test("swift package storelens lint … --format sarif: storelens's SARIF on stdout, its exit status, the package unchanged",
          .enabled(if: ProjectPaths.hasRealFixtures, Comment(rawValue: ProjectPaths.realFixturesMissing)))
    func lintThroughThePlugin() throws {
        let root = ProjectPaths.root()
        let example = root.appendingPathComponent("Examples/MigrationTest")
        let before = try FolderSnapshot(example)
        let store = try #require(ProjectPaths.realFixtures()).appendingPathComponent("swiftdata-resources/default.store")
        let folder = try TemporaryFolder("plugin")
        let out = folder.path("stdout"), err = folder.path("stderr")
        let swift = ProcessInfo.processInfo.environment["SWIFT"].flatMap { $0.isEmpty ? nil : $0 } ?? "swift"
        let command = ["nice", "-n", "10", swift, "package", "--package-path", example.path,
                       "--scratch-path", root.appendingPathComponent(LibraryExample.scratch).path,
                       "--disable-automatic-resolution", "--disable-sandbox",
                       "storelens", "lint", store.path, "--format", "sarif"]
        let run = PythonVenv.run(["sh", "-c", command.map { "'\($0)'" }.joined(separator: " ") + " > '\(out.path)' 2> '\(err.path)'; echo $?"])
        let status = run.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let stderr = (try? String(contentsOf: err, encoding: .utf8)) ?? ""
        #expect(status == "1", "lint finds errors, so the plugin fails as storelens does: status \(status)\n\(stderr.suffix(3000))")
        let sarif = try String(contentsOf: out, encoding: .utf8)
        let log = try #require(try JSONSerialization.jsonObject(with: Data(sarif.utf8)) as? [String: Any], "\(sarif.prefix(300))")
        let results = ((log["runs"] as? [[String: Any]])?.first?["results"] as? [[String: Any]]) ?? []
        #expect(results.contains { $0["ruleId"] as? String == "cloudkit-unique-constraint" }, "the store's findings: \(results.count)")
        #expect(stderr.contains("Plugin ended with exit code 1"), "storelens' own status, in the one line SwiftPM gives: \(stderr.suffix(500))")
        // SwiftPM ends with 1 for any failing plugin: bad input is told apart by the plugin's line.
        let missing = PythonVenv.run(["sh", "-c", (command.prefix(while: { $0 != "lint" }) + ["check", "Fixtures/nope"]).map { "'\($0)'" }.joined(separator: " ")
                                      + " > '\(err.path)' 2>&1; echo $?"])
        let missingErr = (try? String(contentsOf: err, encoding: .utf8)) ?? ""
        #expect(missing.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "1")
        // storelens' own sentence comes through the plugin too (on stdout or stderr, as SwiftPM forwards it).
        #expect(missingErr.contains("Plugin ended with exit code 2") && missingErr.contains("no such file"), "\(missingErr.suffix(500))")
        #expect(try FolderSnapshot(example) == before, "the example package is unchanged")
    }
}
