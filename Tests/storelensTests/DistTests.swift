import Foundation
import StoreFormats
import StoreTestSupport
import Testing

#if os(Linux)

/// `make dist`'s archive, unpacked into an empty folder and run in a bare environment (`env -i`,
/// a PATH without a toolchain, no LD_LIBRARY_PATH) on copies of the real stores. A release build
/// takes minutes, so this test does not make one: it runs when dist/ holds the archive, and
/// STORELENS_DIST_TEST=1 (CI, after `make dist`) makes a missing archive a failure.
@Suite("make dist: a binary without a toolchain")
struct DistTests {
    static let root = ReleaseBuild.root
    static var version: String? { ReleaseBuild.version }

    static var name: String {
        var machine = utsname()
        uname(&machine)
        let arch = withUnsafeBytes(of: machine.machine) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        return "storelens-\(version ?? "?")-linux-\(arch)"
    }

    static var archive: URL { root.appendingPathComponent("dist/\(name).tar.gz") }
    static var required: Bool { ReleaseBuild.required }
    static var present: Bool { FileManager.default.fileExists(atPath: archive.path) }

    /// Runs `executable` with nothing of this process's environment but `environment`.
    static func bare(_ executable: URL, _ arguments: [String], environment: [String: String]) throws -> CLI.Outcome {
        try CLI.bounded(["-i"] + environment.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" } + [executable.path] + arguments,
                        timeout: 600, executable: URL(fileURLWithPath: "/usr/bin/env"))
    }

    static func run(_ tool: String, _ arguments: [String], in folder: URL? = nil) throws -> (status: Int32, output: String) {
        let outcome = try CLI.bounded(folder.map { ["-C", $0.path, tool] + arguments } ?? [tool] + arguments,
                                      timeout: 600, executable: URL(fileURLWithPath: "/usr/bin/env"))
        return (outcome.status, outcome.stdout + outcome.stderr)
    }

    @Test("the archive is where CI expects it",
          .enabled(if: DistTests.required, "only where STORELENS_DIST_TEST=1 (.ci/run sets it after make dist) is a missing archive a failure"))
    func archiveIsThere() {
        #expect(Self.present, "STORELENS_DIST_TEST=1 but \(Self.archive.path) is missing: run make dist first")
    }

    @Test("unpacked into an empty folder, it runs on the real stores with env -i and no toolchain, as the debug build reads them",
          .enabled(if: ProjectPaths.hasRealFixtures, Comment(rawValue: ProjectPaths.realFixturesMissing)),
          .enabled(if: DistTests.present, "no release archive in dist/ (make dist builds it; .ci/run does, and requires this test)"),
          arguments: ProjectPaths.realFixtureFolders())
    func bareEnvironment(_ fixture: String) throws {
        let folder = try TemporaryFolder("dist")
        let unpacked = folder.path("unpacked"), home = folder.path("home"), tmp = folder.path("tmp"), stores = folder.path("stores")
        for url in [unpacked, home, tmp, stores] { try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true) }

        // The archive's own checksum, then its contents: the binary, the licence, their sums.
        let sums = try String(contentsOf: URL(fileURLWithPath: Self.archive.path + ".sha256"), encoding: .utf8)
        #expect(sums.hasPrefix(try SHA256.hexOfFile(at: Self.archive) + "  \(Self.name).tar.gz"), "dist/\(Self.name).tar.gz.sha256")
        let untar = try Self.run("tar", ["-xzf", Self.archive.path], in: unpacked)
        #expect(untar.status == 0, "\(untar.output)")
        let top = unpacked.appendingPathComponent(Self.name)
        #expect(try FileManager.default.contentsOfDirectory(atPath: unpacked.path) == [Self.name], "one folder named like the archive")
        #expect(Set(try FileManager.default.contentsOfDirectory(atPath: top.path)) == ["storelens", "LICENSE", "SHA256SUMS", "completions", "man", "schemas", "docs"])
        // The JSON Schemas, each byte for byte the repository's bundled into one file (the schemas
        // it refers to embedded: it validates offline, as the Debian package test shows).
        let schemas = Self.root.appendingPathComponent("schemas")
        let bundled = folder.path("bundled")
        let bundle = try Self.run("python3", [Self.root.appendingPathComponent("scripts/bundle-schemas.py").path, schemas.path, bundled.path], in: Self.root)
        #expect(bundle.status == 0, "\(bundle.output)")
        let shipped = try FileManager.default.contentsOfDirectory(atPath: top.appendingPathComponent("schemas").path).sorted()
        #expect(shipped == (try FileManager.default.contentsOfDirectory(atPath: schemas.path).filter { $0.hasSuffix(".schema.json") }.sorted()))
        for name in shipped {
            #expect(try Data(contentsOf: top.appendingPathComponent("schemas/\(name)")) == Data(contentsOf: bundled.appendingPathComponent(name)), "\(name)")
        }
        #expect(Set(try FileManager.default.contentsOfDirectory(atPath: top.appendingPathComponent("completions").path)) == ["storelens.bash", "_storelens", "storelens.fish"])
        let pages = try FileManager.default.contentsOfDirectory(atPath: top.appendingPathComponent("man/man1").path)
        #expect(pages.contains("storelens.1") && pages.contains("storelens-inspect.1") && pages.contains("storelens-lint.1"), "\(pages.sorted())")
        let check = try Self.run("sha256sum", ["-c", "SHA256SUMS"], in: top)
        #expect(check.status == 0, "the archive's SHA256SUMS match its files: \(check.output)")
        #expect(try Data(contentsOf: top.appendingPathComponent("LICENSE")) == Data(contentsOf: Self.root.appendingPathComponent("LICENSE")))
        let binary = top.appendingPathComponent("storelens")

        // No Swift runtime or Foundation library is loaded from anywhere: they are inside.
        let ldd = try Self.run("ldd", [binary.path])
        #expect(ldd.status == 0, "\(ldd.output)")
        for library in ["libswiftCore", "libFoundation", "libswift_Concurrency", "libdispatch", "libBlocksRuntime", "lib_FoundationICU"] {
            #expect(!ldd.output.contains(library), "\(library) must be linked statically:\n\(ldd.output)")
        }
        let path = "/usr/bin:/bin"
        for dir in path.split(separator: ":") {
            #expect(!FileManager.default.fileExists(atPath: "\(dir)/swift"), "PATH \(path) must hold no Swift toolchain")
        }
        let environment = ["PATH": path, "HOME": home.path, "TMPDIR": tmp.path]

        let version = try Self.bare(binary, ["--version"], environment: environment)
        #expect(version.status == 0)
        #expect(version.stdout.range(of: #"^storelens \#(Self.version ?? "?") \(commit ([0-9a-f]{12}(-dirty)?|unknown)\)\n$"#, options: .regularExpression) != nil,
                "\(version.stdout)")
        #expect(!version.stdout.contains("commit unknown"), "make dist in a git checkout bakes the commit in: \(version.stdout)")

        // A copy of the real store's whole family: the evidence itself is never opened.
        let real = try #require(ProjectPaths.realFixtures()).appendingPathComponent(fixture)
        let copy = stores.appendingPathComponent(fixture)
        let cp = try Self.run("cp", ["-a", real.path, copy.path])
        #expect(cp.status == 0, "\(cp.output)")
        let before = try FolderSnapshot(copy)
        for arguments in [["inspect", copy.path, "--format", "json"], ["scan", copy.path, "--format", "json"]] {
            let dist = try Self.bare(binary, arguments, environment: environment)
            let debug = try CLI.run(arguments, timeout: 600, executable: ProjectPaths.debugExecutable())
            #expect(!dist.crashed && !dist.timedOut, "\(arguments): \(dist.stderr)")
            #expect(dist.status == debug.status, "\(arguments): dist exit \(dist.status), debug build \(debug.status): \(dist.stderr)")
            #expect(dist.stdout == debug.stdout, "\(arguments): the dist binary reads the store as the debug build does\n\(dist.stderr)")
            #expect(dist.stderr == debug.stderr, "\(arguments): the same diagnostics")
            // A refused input (exit 2, e.g. a backup's Manifest.db alone) prints nothing on stdout in both.
            if dist.status != 2 { #expect(!dist.stdout.isEmpty, "\(arguments)") }
        }
        #expect(try FolderSnapshot(copy) == before, "even the copy is left byte-identical")
        #expect(try FileManager.default.contentsOfDirectory(atPath: tmp.path).isEmpty, "no scratch left in the bare run's TMPDIR")
    }
}
#endif
