import Foundation
import StoreBuilder
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

    /// check-jsonschema from PyPI, in a virtualenv under `.build/` (made once).
    static let checkJSONSchema: URL? = PythonVenv.make("check-jsonschema", packages: ["check-jsonschema"], probe: ["check-jsonschema", "--version"])

    /// The installed schemas are each one file a validator uses as it is: with no network (every
    /// `$ref` to another schema resolves inside the file) and no base URI to give. Checked with
    /// check-jsonschema on outputs that use the referenced parts (findings, recovered values), and
    /// on a broken one, which must fail.
    @Test("the installed JSON Schemas validate offline with check-jsonschema, findings and recovered values included",
          .enabled(if: DebTests.present, "no package in dist/ (make deb builds it; .ci/run does, and requires this test)"),
          .enabled(if: DebTests.checkJSONSchema != nil, "check-jsonschema could not be installed from PyPI into .build/; the reason is printed above"))
    func schemasOffline() throws {
        let folder = try TemporaryFolder("deb-schemas")
        let root = folder.path("root")
        let unpack = PythonVenv.run(["dpkg-deb", "-x", Self.package.path, root.path])
        #expect(unpack.status == 0, "\(unpack.stderr)")
        let installed = root.appendingPathComponent("usr/share/storelens/schemas")
        try FileManager.default.createDirectory(at: folder.path("store"), withIntermediateDirectories: true)
        let broken = try InvariantFixture.make(in: folder.path("store")) { try $0.executeRaw("UPDATE Z_PRIMARYKEY SET Z_MAX = 1 WHERE Z_NAME = 'Note'") }
        let demoFolder = try TemporaryFolder("deb-schemas-demo")
        let demo = try SampleStores.demo(in: demoFolder)
        let outputs: [(schema: String, arguments: [String], file: String)] = [
            ("check", ["check", broken.path, "--format", "json"], "check.json"),
            ("recover", ["recover", demo.path, "--format", "json"], "recover.json"),
            ("wal-diff", ["wal", demo.path, "--diff", "--format", "json"], "wal-diff.json"),
        ]
        let tool = try #require(Self.checkJSONSchema).appendingPathComponent("bin/check-jsonschema").path
        for output in outputs {
            let run = try CLI.run(output.arguments)
            #expect([0, 1].contains(run.status), "\(output.arguments): \(run.stderr)")
            let file = folder.path(output.file)
            try Data(run.stdout.utf8).write(to: file)
            // No network: a schema that still pointed outside itself would fail to resolve here.
            let valid = PythonVenv.run(["env", "http_proxy=http://127.0.0.1:9", "https_proxy=http://127.0.0.1:9",
                                        tool, "--schemafile", installed.appendingPathComponent("\(output.schema).schema.json").path, file.path])
            #expect(valid.status == 0, "\(output.schema): \(valid.stdout.suffix(1500))\(valid.stderr.suffix(1500))")
        }
        // A finding without its severity: the embedded finding schema is applied, not skipped.
        var document = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: folder.path("check.json"))) as? [String: Any])
        var findings = try #require(document["findings"] as? [[String: Any]])
        #expect(!findings.isEmpty)
        findings[0]["severity"] = nil
        document["findings"] = findings
        try JSONSerialization.data(withJSONObject: document).write(to: folder.path("broken.json"))
        let invalid = PythonVenv.run([tool, "--schemafile", installed.appendingPathComponent("check.schema.json").path, folder.path("broken.json").path])
        #expect(invalid.status != 0 && invalid.stdout.contains("severity"), "\(invalid.stdout.suffix(800))")
    }

    /// The installed man pages cite only documentation the package installs, and every page says
    /// every exit status, 130 and 141 included.
    @Test("man pages cite installed docs (/usr/share/doc/storelens), and each has its EXIT STATUS with 130 and 141",
          .enabled(if: DebTests.present, "no package in dist/ (make deb builds it; .ci/run does, and requires this test)"))
    func manPagesCiteInstalledDocs() throws {
        let folder = try TemporaryFolder("deb-man")
        let root = folder.path("root")
        #expect(PythonVenv.run(["dpkg-deb", "-x", Self.package.path, root.path]).status == 0)
        let man = root.appendingPathComponent("usr/share/man/man1")
        let pages = try FileManager.default.contentsOfDirectory(atPath: man.path).filter { $0.hasSuffix(".1.gz") }
        #expect(pages.count > 10)
        for page in pages {
            let text = PythonVenv.run(["sh", "-c", "gzip -dc '\(man.appendingPathComponent(page).path)'"]).stdout
            #expect(text.contains(".SH EXIT STATUS") && text.contains("\n130\n") && text.contains("\n141\n"), "\(page): EXIT STATUS with 130 and 141")
            #expect(!text.contains(" docs/") && !text.contains("(docs/"), "\(page) cites the repository's docs/")
            let cited = text.matches(of: /\/usr\/share\/doc\/storelens\/([a\-z0-9\\-]+)\.md/).map { String($0.1).replacingOccurrences(of: "\\-", with: "-") }
            for name in cited {
                #expect(FileManager.default.fileExists(atPath: root.appendingPathComponent("usr/share/doc/storelens/\(name).md").path), "\(page) cites \(name).md, which the package does not install")
            }
        }
    }

    /// A package users can put in their own apt repository: lintian reports no error and no warning.
    @Test("lintian: no error, no warning",
          .enabled(if: DebTests.present, "no package in dist/ (make deb builds it; .ci/run does, and requires this test)"),
          .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/lintian"), "lintian is not installed (make test-deps installs it on Debian)"))
    func lintianClean() throws {
        // lintian leaves its own temporary folders (mldbm-elf-…): given a TMPDIR of the test's, removed with it.
        let tmp = try TemporaryFolder("lintian-tmp")
        let run = PythonVenv.run(["env", "TMPDIR=\(tmp.url.path)", "lintian", "--allow-root", "--no-tag-display-limit", Self.package.path])
        let problems = (run.stdout + run.stderr).split(separator: "\n").filter { $0.hasPrefix("E:") || $0.hasPrefix("W:") }
        #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
    }
}

#endif
