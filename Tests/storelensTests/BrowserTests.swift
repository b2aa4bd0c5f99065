import Dispatch
import Foundation
import StoreBuilder
import StoreTestSupport
import Testing

/// The report as a browser sees it: headless chromium loads a report made from builder stores
/// (one with an entity named `<script>alert(1)</script>`), runs its inline script, and dumps the
/// DOM. A screenshot is left in `.build/report-screenshot.png` for CI to keep.
@Suite("report in a browser (headless chromium)")
struct BrowserTests {
    /// Runs chromium headless with its own profile, killed after `timeout` seconds.
    static func headless(_ chromium: String, _ arguments: [String], profile: URL, timeout: Double = 90) throws -> (status: Int32, stdout: String, stderr: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: chromium)
        // --no-sandbox: CI runs as root, where chromium's sandbox cannot start.
        process.arguments = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                             "--no-default-browser-check", "--disable-extensions", "--disable-background-networking",
                             "--disable-component-update", "--user-data-dir=\(profile.path)"] + arguments
        // Chromium makes its singleton socket in TMPDIR, and a socket path has room for only about
        // 100 bytes: a TMPDIR of its own, short (under the tests' root), whatever the caller's is.
        let tmp = TestRoot.url.appendingPathComponent("cr-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: tmp, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: tmp) }
        process.environment = ProcessInfo.processInfo.environment.merging(["TMPDIR": tmp.path]) { $1 }
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let watchdog = DispatchWorkItem { if process.isRunning { process.terminate() } }
        DispatchQueue.global().asyncAfter(deadline: .now() + timeout, execute: watchdog)
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        watchdog.cancel()
        return (process.terminationStatus, String(decoding: stdout, as: UTF8.self), String(decoding: stderr, as: UTF8.self))
    }

    /// `(severity, hidden)` of every finding row in a dumped DOM.
    static func findingRows(_ dom: String) throws -> [(severity: String, hidden: Bool)] {
        let regex = try NSRegularExpression(pattern: "<tr class=\"finding\" data-severity=\"([a-z]+)\"( hidden=\"\")?>")
        return regex.matches(in: dom, range: NSRange(dom.startIndex..., in: dom)).map { m in
            ((dom as NSString).substring(with: m.range(at: 1)), m.range(at: 2).location != NSNotFound)
        }
    }

    @Test("summary, findings, the severity filter and search, the <script> entity as text, no request leaves the page",
          .enabled(if: Chromium.executable() != nil, Comment(rawValue: Chromium.missing)))
    func reportInChromium() throws {
        let chromium = try #require(Chromium.executable())
        let folder = try TemporaryFolder("browser")
        try DemoContainer.write(into: folder.path("c"))
        try Data(DemoContainer.manifest.utf8).write(to: folder.path("m.json"))
        try ReportSamples.write(to: folder.path("hostile.store"))
        let report = folder.path("report.html")
        let made = try CLI.run(["report", folder.path("c").path, folder.path("hostile.store").path,
                                "--manifest", folder.path("m.json").path, "--out", report.path])
        #expect(made.status == 1, "\(made.stderr)")
        let file = try String(contentsOf: report, encoding: .utf8)
        #expect(!file.contains("http://") && !file.contains("https://"), "no URL in the file that a browser could fetch")

        // The filter: the script reads #severity=error on load and hides every other row.
        let filtered = try Self.headless(chromium, ["--virtual-time-budget=3000", "--dump-dom", report.absoluteString + "#severity=error"],
                                         profile: folder.path("profile-1"))
        #expect(filtered.status == 0, "\(filtered.stderr)")
        let dom = filtered.stdout
        #expect(dom.contains("<section id=\"summary\">") && dom.contains("<h2>Summary</h2>"), "summary present")
        let rows = try Self.findingRows(dom)
        #expect(rows.count >= 6, "findings rendered: \(rows.count)")
        #expect(rows.contains { $0.severity == "error" } && rows.contains { $0.severity != "error" }, "the sample has errors and warnings")
        for row in rows { #expect(row.hidden == (row.severity != "error"), "\(row)") }
        #expect(dom.contains("data-filter=\"error\""), "the inline script ran")
        let errors = rows.filter { $0.severity == "error" }.count
        #expect(dom.contains("showing \(errors) of \(rows.count) findings (severity error)"))
        #expect(dom.contains("&lt;script&gt;alert(1)&lt;/script&gt;"), "the entity name is text in the DOM")
        #expect(dom.components(separatedBy: "<script").count == 2, "the only script element is the report's own")
        #expect(dom.contains("data-resources=\"0\""), "the page loaded no resource")
        #expect(dom.contains("http-equiv=\"Content-Security-Policy\" content=\"default-src 'none';"))

        // The search box: #q= filters by text.
        let searched = try Self.headless(chromium, ["--virtual-time-budget=3000", "--dump-dom", report.absoluteString + "#q=json-not-imported"],
                                         profile: folder.path("profile-2"))
        let visible = try Self.findingRows(searched.stdout).filter { !$0.hidden }
        #expect(visible.count == 1, "only the json-not-imported finding matches")

        // The CI artifact.
        let screenshot = ProjectPaths.root().appendingPathComponent(".build/report-screenshot.png")
        try? FileManager.default.removeItem(at: screenshot)
        let shot = try Self.headless(chromium, ["--screenshot=\(screenshot.path)", "--window-size=1280,2000", "--hide-scrollbars", report.absoluteString],
                                     profile: folder.path("profile-3"))
        #expect(shot.status == 0, "\(shot.stderr)")
        let attributes = try FileManager.default.attributesOfItem(atPath: screenshot.path)
        #expect(((attributes[.size] as? NSNumber)?.intValue ?? 0) > 10_000, "a screenshot of the report in \(screenshot.path)")
    }
}
