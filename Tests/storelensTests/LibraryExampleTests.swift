import Foundation
import StoreTestSupport
import Testing

/// A new Swift package that depends on storelens by path runs the migration-test example with
/// `swift test`. It runs where it is, as an app team would run it: Examples/MigrationTest names
/// this checkout as `../..`. Its build folder is its own (`.build/library-example`, nothing shared
/// with this package's own build) and kept between runs like any build folder: `scripts/test.sh`
/// builds it with the rest before the tests start, so this test compiles only what changed and
/// then runs the example's tests, offline, at low priority. Run alone on a fresh checkout it builds
/// every library target first (minutes).
@Suite("library: Examples/MigrationTest as an app team's package")
struct LibraryExampleTests {
    static let relative = "path: \"../..\""


    @Test("a package depending on storelens by path builds and passes its migration test with swift test, offline")
    func migrationExample() throws {
        let root = ProjectPaths.root()
        let example = root.appendingPathComponent("Examples/MigrationTest")
        let manifest = try String(contentsOf: example.appendingPathComponent("Package.swift"), encoding: .utf8)
        #expect(manifest.contains(Self.relative), "the example names this checkout as ../.., so it also works where it is")
        let before = try FolderSnapshot(example)

        let folder = try TemporaryFolder("library-example")
        let tmp = folder.path("tmp")
        try FileManager.default.createDirectory(at: tmp, withIntermediateDirectories: true)
        let swift = ProcessInfo.processInfo.environment["SWIFT"].flatMap { $0.isEmpty ? nil : $0 } ?? "swift"
        let log = folder.path("swift-test.log")
        FileManager.default.createFile(atPath: log.path, contents: nil)
        let handle = try FileHandle(forWritingTo: log)
        defer { try? handle.close() }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        // --disable-automatic-resolution: the graph is two local packages, nothing may be fetched.
        process.arguments = ["nice", "-n", "10", swift, "test", "--package-path", example.path,
                             "--scratch-path", root.appendingPathComponent(LibraryExample.scratch).path, "--disable-automatic-resolution"]
        var environment = ProcessInfo.processInfo.environment
        environment["TMPDIR"] = tmp.path
        process.environment = environment
        process.standardOutput = handle
        process.standardError = handle
        process.standardInput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        let output = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        let tail = String(output.suffix(6000))
        #expect(process.terminationReason == .exit && process.terminationStatus == 0, "swift test in the example failed:\n\(tail)")
        for name in ["nothing lost, nothing doubled, one writer", "a record skipped and a record imported twice are caught",
                     "the widget writing the items is a second writer"] {
            #expect(output.contains("Test \"\(name)\" passed"), "the example's test \"\(name)\" did not pass:\n\(tail)")
        }
        #expect(!output.contains("Fetching") && !output.contains("Cloning"), "nothing is fetched:\n\(tail)")
        // Run in place, it leaves the example's own files as they were (no Package.resolved, no .build there).
        #expect(try FolderSnapshot(example) == before, "swift test changed Examples/MigrationTest")
        #expect(!FileManager.default.fileExists(atPath: example.appendingPathComponent(".build").path))
    }
}
