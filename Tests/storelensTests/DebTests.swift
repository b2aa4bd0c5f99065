import Foundation
import StoreFormats
import StoreTestSupport
import Testing

#if os(Linux)

/// `make deb`'s package, installed with dpkg into a root of its own (`dpkg --root`, no container):
/// the files land where Debian expects them, `Depends` names the package of every library the
/// binary names (resolved here independently, by `ldd`), and the installed binary runs `--version`
/// and `inspect` on a real store. The package is built by `make deb` (.ci/run); without it the
/// tests are skipped, and STORELENS_DIST_TEST=1 makes a missing package a failure.
@Suite("make deb: a Debian package")
struct DebTests {
    static var package: URL {
        let arch = PythonVenv.run(["dpkg", "--print-architecture"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        return ReleaseBuild.root.appendingPathComponent("dist/storelens_\(ReleaseBuild.version ?? "?")_\(arch).deb")
    }
    static var present: Bool { FileManager.default.fileExists(atPath: package.path) }

    @Test("the package is where CI expects it",
          .enabled(if: ReleaseBuild.required, "only where STORELENS_DIST_TEST=1 (.ci/run sets it after make deb) is a missing package a failure"))
    func packageIsThere() {
        #expect(Self.present, "STORELENS_DIST_TEST=1 but \(Self.package.path) is missing: run make deb first")
    }

    @Test("installed with dpkg --root: files where Debian looks, Depends from the binary's libraries, and it runs inspect on a real store",
          .enabled(if: ProjectPaths.hasRealFixtures, Comment(rawValue: ProjectPaths.realFixturesMissing)),
          .enabled(if: DebTests.present, "no package in dist/ (make deb builds it; .ci/run does, and requires this test)"))
    func installInRoot() throws {
        let folder = try TemporaryFolder("deb")
        let root = folder.path("root")
        // An empty dpkg database: nothing is installed in this root but the package.
        for sub in ["var/lib/dpkg/info", "var/lib/dpkg/updates", "var/lib/dpkg/triggers"] {
            try FileManager.default.createDirectory(at: root.appendingPathComponent(sub), withIntermediateDirectories: true)
        }
        FileManager.default.createFile(atPath: root.appendingPathComponent("var/lib/dpkg/status").path, contents: Data())
        // The libraries are the host's, so the root does not hold the packages Depends names.
        let install = PythonVenv.run(["dpkg", "--root=\(root.path)", "--force-depends", "--force-not-root", "--log=/dev/null", "-i", Self.package.path])
        #expect(install.status == 0, "\(install.stdout)\(install.stderr)")
        for file in ["usr/bin/storelens", "usr/share/man/man1/storelens.1.gz", "usr/share/man/man1/storelens-inspect.1.gz",
                     "usr/share/bash-completion/completions/storelens", "usr/share/zsh/vendor-completions/_storelens",
                     "usr/share/fish/vendor_completions.d/storelens.fish", "usr/share/doc/storelens/copyright",
                     "usr/share/storelens/schemas/inspect.schema.json", "usr/share/storelens/schemas/finding.schema.json"] {
            #expect(FileManager.default.fileExists(atPath: root.appendingPathComponent(file).path), "\(file) installed")
        }
        let listed = PythonVenv.run(["dpkg", "--root=\(root.path)", "-L", "storelens"]).stdout
        #expect(listed.contains("/usr/bin/storelens"), "dpkg knows the package's files: \(listed.prefix(300))")

        // Depends: the package of each library ldd resolves, found here by ldd and dpkg -S.
        let binary = root.appendingPathComponent("usr/bin/storelens")
        let depends = PythonVenv.run(["dpkg-deb", "-f", Self.package.path, "Depends"]).stdout
            .split(separator: ",").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        // The libraries the binary names itself (readelf's NEEDED), as ldd resolves them: the
        // packages of their own dependencies come with those packages.
        let needed = Set(PythonVenv.run(["sh", "-c", "readelf -d '\(binary.path)' | sed -n 's/.*(NEEDED).*\\[\\(.*\\)\\]/\\1/p'"]).stdout
            .split(separator: "\n").map(String.init))
        #expect(needed.contains("libsqlite3.so.0"), "\(needed)")
        let ldd = PythonVenv.run(["ldd", binary.path]).stdout
        for line in ldd.split(separator: "\n") {
            let parts = line.split(separator: " ")
            guard parts.count >= 3, parts[1] == "=>", parts[2].hasPrefix("/"), needed.contains(String(parts[0].trimmingCharacters(in: .whitespaces))) else { continue }
            let resolved = URL(fileURLWithPath: String(parts[2])).resolvingSymlinksInPath().path
            let owner = PythonVenv.run(["dpkg", "-S", resolved]).stdout.split(separator: ":").first.map(String.init)
                ?? PythonVenv.run(["dpkg", "-S", String(parts[2])]).stdout.split(separator: ":").first.map(String.init)
            guard let owner else { continue }
            #expect(depends.contains(owner), "\(parts[0]) comes from \(owner), which Depends (\(depends)) must name")
        }
        #expect(!depends.contains { $0.hasPrefix("libswift") }, "the Swift runtime is inside the binary")

        let version = PythonVenv.run([binary.path, "--version"])
        #expect(version.status == 0 && version.stdout.hasPrefix("storelens \(ReleaseBuild.version ?? "?")"), "\(version.stdout)\(version.stderr)")
        let store = try #require(ProjectPaths.realFixtures()).appendingPathComponent("swiftdata-resources/default.store")
        let inspect = PythonVenv.run([binary.path, "inspect", store.path, "--format", "json"])
        #expect(inspect.status == 0, "\(inspect.stderr)")
        #expect(inspect.stdout.contains("\"Item\""), "the store's entities")
        let page = PythonVenv.run(["sh", "-c", "gzip -dc '\(root.appendingPathComponent("usr/share/man/man1/storelens-inspect.1.gz").path)' | head -1"])
        #expect(page.stdout.hasPrefix(".TH STORELENS\\-INSPECT 1"), "\(page.stdout)")
    }
}

#endif
