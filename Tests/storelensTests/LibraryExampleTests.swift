import Foundation
import StoreTestSupport
import Testing

/// Issue 17's "done when": a new Swift package that depends on storelens by path runs the
/// migration-test example with `swift test`. The example is copied to a temporary folder (its own
/// build folder and TMPDIR there, nothing shared with this package's .build), pointed at this
/// checkout, and built and tested offline. It compiles every library target again, so it is slow:
/// one run, one job, at low priority, beside the rest of the suite.
@Suite("library: Examples/MigrationTest as an app team's package")
struct LibraryExampleTests {
    static let relative = "path: \"../..\""

    @Test("a package depending on storelens by path builds and passes its migration test with swift test, offline")
    func migrationExample() throws {
        let root = ProjectPaths.root()
        let example = root.appendingPathComponent("Examples/MigrationTest")
        let manifest = try String(contentsOf: example.appendingPathComponent("Package.swift"), encoding: .utf8)
        #expect(manifest.contains(Self.relative), "the example names this checkout as ../.., so it also works where it is")

        let folder = try TemporaryFolder("library-example")
        let copy = folder.path("MigrationTest"), scratch = folder.path("build"), tmp = folder.path("tmp")
        try FileManager.default.createDirectory(at: tmp, withIntermediateDirectories: true)
        // The package's own files only: never a .build someone made by running it in place.
        try FileManager.default.createDirectory(at: copy, withIntermediateDirectories: true)
        for name in ["Package.swift", "Sources", "Tests"] where FileManager.default.fileExists(atPath: example.appendingPathComponent(name).path) {
            try FileManager.default.copyItem(at: example.appendingPathComponent(name), to: copy.appendingPathComponent(name))
        }
        let pointed = manifest.replacingOccurrences(of: Self.relative, with: "path: \"\(root.path)\"")
        try Data(pointed.utf8).write(to: copy.appendingPathComponent("Package.swift"))

        let swift = ProcessInfo.processInfo.environment["SWIFT"].flatMap { $0.isEmpty ? nil : $0 } ?? "swift"
        let log = folder.path("swift-test.log")
        FileManager.default.createFile(atPath: log.path, contents: nil)
        let handle = try FileHandle(forWritingTo: log)
        defer { try? handle.close() }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        // --disable-automatic-resolution: the graph is two local packages, nothing may be fetched.
        process.arguments = ["nice", "-n", "10", swift, "test", "--package-path", copy.path, "--scratch-path", scratch.path,
                             "--disable-automatic-resolution", "--jobs", "1"]
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
    }
}
