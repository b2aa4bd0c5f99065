import Acquisition
import Foundation
import StoreFormats

/// Where the project and the shared real fixtures are, from any test file.
public enum ProjectPaths {
    /// The one argument a parameterised real-store test gets when the fixtures are absent, so it
    /// shows as skipped with a reason (never as zero cases).
    public static let realFixturesAbsent = "(no real fixtures)"

    /// The folder names under `../shared/fixtures/real`, sorted; `[realFixturesAbsent]` without them.
    public static func realFixtureFolders(from file: String = #filePath) -> [String] {
        guard let real = realFixtures(from: file),
              let names = try? FileManager.default.contentsOfDirectory(atPath: real.path) else { return [realFixturesAbsent] }
        let folders = names.filter { name in
            var isDir: ObjCBool = false
            return FileManager.default.fileExists(atPath: real.appendingPathComponent(name).path, isDirectory: &isDir) && isDir.boolValue
        }.sorted()
        return folders.isEmpty ? [realFixturesAbsent] : folders
    }

    /// The store file of a real fixture folder: the first file that is not a -wal, -shm or hidden.
    public static func realStoreFile(in folder: URL) throws -> URL? {
        try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
            .filter { !$0.hasSuffix("-wal") && !$0.hasSuffix("-shm") && !$0.hasPrefix(".") }
            .map { folder.appendingPathComponent($0) }
            .first { url in
                var isDir: ObjCBool = false
                return FileManager.default.fileExists(atPath: url.path, isDirectory: &isDir) && !isDir.boolValue
            }
    }

    /// The package root: the nearest folder above `file` holding Package.swift.
    public static func root(from file: String = #filePath) -> URL {
        var url = URL(fileURLWithPath: file).deletingLastPathComponent()
        while url.path != "/" {
            if FileManager.default.fileExists(atPath: url.appendingPathComponent("Package.swift").path) { return url }
            url.deleteLastPathComponent()
        }
        return URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
    }

    /// `../shared/fixtures/real` beside the project, or nil when this machine does not have it.
    public static func realFixtures(from file: String = #filePath) -> URL? {
        if let env = ProcessInfo.processInfo.environment["STORELENS_REAL_FIXTURES"], !env.isEmpty {
            return FileManager.default.fileExists(atPath: env) ? URL(fileURLWithPath: env) : nil
        }
        let url = root(from: file).deletingLastPathComponent().appendingPathComponent("shared/fixtures/real")
        return FileManager.default.fileExists(atPath: url.path) ? url : nil
    }

    /// Why real-fixture tests are skipped here (the reason Swift Testing shows for each skip).
    public static let realFixturesMissing = "../shared/fixtures/real is not present on this machine; tests on genuine Apple stores are skipped"

    /// Whether the real fixtures are here: the condition of every real-store test's `.enabled(if:)`.
    public static var hasRealFixtures: Bool { realFixtures() != nil }

    /// CI sets STORELENS_REQUIRE_REAL_FIXTURES=1 (and STORELENS_REQUIRE_BROWSER=1): there a missing
    /// fixture folder or browser fails the run (RequiredEnvironmentTests) instead of skipping quietly.
    public static func isRequired(_ variable: String) -> Bool {
        ProcessInfo.processInfo.environment[variable] == "1"
    }

    /// The `storelens` executable the tests run: the one STORELENS_TEST_EXECUTABLE names
    /// (`scripts/test.sh` names the release build, the binary users run: half the CPU of the debug
    /// one over the hostile corpus, and the sources hold no `assert` that only a debug build keeps),
    /// else the debug build, else the release build, else the product beside the test bundle.
    public static func executable(from file: String = #filePath) -> URL {
        if let named = ProcessInfo.processInfo.environment["STORELENS_TEST_EXECUTABLE"], !named.isEmpty {
            return URL(fileURLWithPath: named)
        }
        return debugExecutable(from: file)
    }

    /// The debug build of `storelens` (else the release build, else the product beside the test
    /// bundle), whatever STORELENS_TEST_EXECUTABLE says: what the release binary is compared with.
    public static func debugExecutable(from file: String = #filePath) -> URL {
        let root = root(from: file)
        for candidate in [".build/debug/storelens", ".build/release/storelens"] {
            let url = root.appendingPathComponent(candidate)
            if FileManager.default.isExecutableFile(atPath: url.path) { return url }
        }
        // SwiftPM puts the product beside the test bundle.
        let bundle = Bundle.main.bundleURL.deletingLastPathComponent().appendingPathComponent("storelens")
        return bundle
    }
}

/// Where the tests' own folders go: a short folder of the run's own, so that a test's deepest
/// input stays under SQLite's 512-byte path limit (a builder writes it with SQLite) whatever the
/// caller's TMPDIR is. `scripts/test.sh` makes it (`/tmp/sl-XXXXXX`), names it in
/// STORELENS_TEST_ROOT and fails the run when anything is left in it; without that variable the
/// test process makes one itself and removes it at exit when the tests left it empty.
public enum TestRoot {
    public static let url: URL = make()

    /// The variable `scripts/test.sh` names its root in.
    public static let variable = "STORELENS_TEST_ROOT"

    private static func make() -> URL {
        if let named = ProcessInfo.processInfo.environment[variable], !named.isEmpty {
            try? FileManager.default.createDirectory(atPath: named, withIntermediateDirectories: true)
            return URL(fileURLWithPath: named)
        }
        var template = Array("/tmp/sl-XXXXXX".utf8CString)
        guard template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) != nil else {
            // No writable /tmp (some sandboxes): TMPDIR, as before.
            return FileManager.default.temporaryDirectory
        }
        let path = String(cString: template)
        ownPath = path
        atexit { if let own = TestRoot.ownPath { rmdir(own) } }  // only if empty: leftovers stay visible
        return URL(fileURLWithPath: path)
    }

    /// The root this process made itself (nil when the run named one), removed at exit if empty.
    nonisolated(unsafe) private static var ownPath: String?
}

/// A temporary folder for one test, removed when the value is released. Named `sltest-…`, never
/// `storelens-…`: `make test` fails when a `storelens-*` folder (a scratch folder) is left behind.
/// It lives under `TestRoot`, not TMPDIR: the paths a test builds must not depend on TMPDIR's length.
public final class TemporaryFolder: @unchecked Sendable {
    public let url: URL
    public init(_ name: String = "test") throws {
        url = TestRoot.url.appendingPathComponent("sltest-\(name)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }
    public func path(_ component: String) -> URL { url.appendingPathComponent(component) }
    deinit {
        // Tests make folders read-only on purpose; make them writable again to remove them.
        _ = try? Process.run(URL(fileURLWithPath: "/bin/chmod"), arguments: ["-R", "u+w", url.path]).waitUntilExit()
        try? FileManager.default.removeItem(at: url)
    }
}

/// A snapshot of every file under a folder: path → (size, SHA-256, mtime). Used to prove inputs
/// were left byte-identical and that nothing new appeared beside them.
public struct FolderSnapshot: Equatable {
    public struct Entry: Equatable { public let size: Int; public let sha256: String; public let modified: Date? }
    public let entries: [String: Entry]

    public init(_ folder: URL) throws {
        var entries: [String: Entry] = [:]
        // Read as bytes: a folder named in another encoding is walked through its alias.
        func visit(_ path: String, shown: String) throws {
            for (name, child) in RawPath.children(of: path) ?? [] {
                guard let child else { throw CocoaError(.fileReadUnknown, userInfo: [NSFilePathErrorKey: shown + "/" + name]) }
                let attributes = try FileManager.default.attributesOfItem(atPath: child)
                guard (attributes[.type] as? FileAttributeType) == .typeRegular else {
                    entries[shown + "/" + name] = Entry(size: -1, sha256: "dir", modified: nil)
                    if (attributes[.type] as? FileAttributeType) == .typeDirectory { try visit(child, shown: shown + "/" + name) }
                    continue
                }
                entries[shown + "/" + name] = Entry(size: (attributes[.size] as? NSNumber)?.intValue ?? 0,
                                                    sha256: try SHA256.hexOfFile(at: URL(fileURLWithPath: child)),
                                                    modified: attributes[.modificationDate] as? Date)
            }
        }
        try visit(folder.path, shown: folder.path)
        self.entries = entries
    }
}
