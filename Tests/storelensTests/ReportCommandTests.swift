import Foundation
import StoreBuilder
import StoreTestSupport
import Testing

@Suite("report command, Markdown views and progress")
struct ReportCommandTests {
    @Test("report: one HTML file with the audit's findings; never overwrites without --force, never an input; evidence untouched")
    func writesOnce() throws {
        let folder = try TemporaryFolder("report-cli")
        try DemoContainer.write(into: folder.path("c"))
        try Data(DemoContainer.manifest.utf8).write(to: folder.path("m.json"))
        let before = try FolderSnapshot(folder.path("c"))
        let out = folder.path("out/report.html")
        try FileManager.default.createDirectory(at: folder.path("out"), withIntermediateDirectories: true)

        let first = try CLI.run(["report", folder.path("c").path, "--manifest", folder.path("m.json").path, "--out", out.path])
        #expect(first.status == 1, "the demo's planted findings are errors: \(first.stderr)")
        #expect(first.stdout.hasPrefix("wrote \(out.path) ("))
        #expect(first.stdout.contains("findings: 4 error"))
        let html = try String(contentsOf: out, encoding: .utf8)
        for id in ["writer-violation", "duplicate-import", "not-migrated", "json-not-imported"] {
            #expect(html.contains("<code>\(id)</code>"), "\(id) is listed")
        }
        #expect(html.contains("Audit against the manifest"))
        #expect(html.contains("Records per entity per side"))
        #expect(html.contains("WAL transactions"))
        #expect(html.contains("verified unchanged afterwards"))
        #expect(try FolderSnapshot(folder.path("c")) == before, "the evidence is never modified")

        let again = try CLI.run(["report", folder.path("c").path, "--out", out.path])
        #expect(again.status == 2)
        #expect(again.stderr.contains("\(out.path) already exists"), "\(again.stderr)")
        #expect(try String(contentsOf: out, encoding: .utf8) == html, "the existing report is left alone")

        let forced = try CLI.run(["report", folder.path("c").path, "--out", out.path, "--force"])
        #expect(forced.status == 0 || forced.status == 1, "\(forced.stderr)")
        #expect(try String(contentsOf: out, encoding: .utf8) != html, "--force replaces it (this one has no audit)")

        let store = folder.path("c/Library/Application Support/default.store")
        let onInput = try CLI.run(["report", store.path, "--out", store.path, "--force"])
        #expect(onInput.status == 2)
        #expect(onInput.stderr.contains("is one of the inputs"), "\(onInput.stderr)")
        #expect(try FolderSnapshot(folder.path("c")) == before, "--force never writes over the evidence")
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: folder.path("out").path).filter { $0 != "report.html" }
        #expect(leftovers.isEmpty, "no temporary file is left behind: \(leftovers)")

        let missingOut = try CLI.run(["report", folder.path("c").path])
        #expect(missingOut.status == 2)
        #expect(missingOut.stderr.contains("--out"))
    }

    @Test("report of a damaged archive: the report is written with what could be read, and the exit code says input error")
    func damagedArchive() throws {
        let folder = try TemporaryFolder("report-damaged")
        try DemoContainer.write(into: folder.path("c"))
        let archive = folder.path("c.tar")
        try ArchiveMaker.write(try ArchiveMaker.entries(of: folder.path("c")), to: archive, format: .paxTar)
        let data = try Data(contentsOf: archive)
        try data.prefix(data.count * 2 / 3).write(to: folder.path("cut.tar"))
        let r = try CLI.run(["report", folder.path("cut.tar").path, "--out", folder.path("r.html").path])
        #expect(r.status == 2, "\(r.stderr)")
        #expect(r.stderr.contains("cut.tar"))
        let html = try String(contentsOf: folder.path("r.html"), encoding: .utf8)
        #expect(html.contains("class=\"problem\""), "the damage is stated in the report")
    }

    @Test("--format markdown for scan, inspect and wal; escaped and sized for a ticket")
    func markdown() throws {
        let folder = try TemporaryFolder("markdown-cli")
        let store = folder.path("hostile.store")
        try ReportSamples.write(to: store)
        let inspect = try CLI.run(["inspect", store.path, "--format", "markdown"])
        #expect(inspect.status == 0, "\(inspect.stderr)")
        #expect(inspect.stdout.hasPrefix("## storelens inspect of `"))
        #expect(inspect.stdout.contains("\\<script\\>alert(1)\\</script\\>"))
        #expect(!inspect.stdout.contains("<script>"))
        let scan = try CLI.run(["scan", folder.url.path, "--format", "markdown"])
        #expect(scan.status == 0, "\(scan.stderr)")
        #expect(scan.stdout.contains("| `hostile.store` | coredata | swiftdata |"), "\(scan.stdout)")
        let wal = try CLI.run(["wal", store.path, "--format", "markdown"])
        #expect(wal.status == 0, "\(wal.stderr)")
        #expect(wal.stdout.contains("## storelens wal of `"))
        #expect(wal.stdout.contains("| commit | frames | pages | entities (tables) written |"))
    }

    @Test("progress goes to stderr only when asked for or on a terminal, never into results, and --quiet silences it")
    func progress() throws {
        let folder = try TemporaryFolder("progress-cli")
        try DemoContainer.write(into: folder.path("c"))
        let archive = folder.path("c.tar")
        try ArchiveMaker.write(try ArchiveMaker.entries(of: folder.path("c")), to: archive, format: .paxTar, filter: .gzip)
        let piped = try CLI.run(["scan", archive.path], environment: ["STORELENS_PROGRESS": "auto"])
        #expect(piped.status == 0)
        #expect(!piped.stderr.contains("\u{1B}") && !piped.stderr.contains("\r"), "stderr is not a terminal: no progress line")
        let forced = try CLI.run(["scan", archive.path], environment: ["STORELENS_PROGRESS": "always"])
        #expect(forced.status == 0)
        #expect(forced.stderr.contains("\r\u{1B}[2Kreading \(archive.path): "), "\(forced.stderr.debugDescription)")
        #expect(forced.stderr.hasSuffix("\r\u{1B}[2K"), "the line is cleared before the command ends")
        #expect(forced.stdout == piped.stdout, "results are the same with and without progress")
        let quiet = try CLI.run(["scan", archive.path, "--quiet"], environment: ["STORELENS_PROGRESS": "always"])
        #expect(quiet.stderr.isEmpty, "\(quiet.stderr.debugDescription)")
    }
}
