import Acquisition
import CoreDataStore
import Findings
import Foundation
import Operations
@testable import Reports
import StoreBuilder
import StoreTestSupport
import Testing
import WALForensics

@Suite("HTML report")
struct HTMLReportTests {
    @Test("escape: markup, quotes and ampersands become references; control characters never reach the page")
    func escape() {
        #expect(HTML.escape("<script>alert(1)</script>") == "&lt;script&gt;alert(1)&lt;/script&gt;")
        #expect(HTML.escape("a & b") == "a &amp; b")
        #expect(HTML.escape("&amp;") == "&amp;amp;", "text that looks like a reference stays text")
        #expect(HTML.escape("\" onmouseover='x'") == "&quot; onmouseover=&#39;x&#39;")
        #expect(HTML.escape("line\nnext\ttab") == "line\nnext\ttab")
        #expect(HTML.escape("bell\u{7}esc\u{1b}[31m nul\u{0} c1\u{85}") == "bell\u{FFFD}esc\u{FFFD}[31m nul\u{FFFD} c1\u{FFFD}")
        #expect(HTML.escape("Zoë 📦 ✓") == "Zoë 📦 ✓")
        #expect(HTML.escape("") == "")
    }

    /// A report of the hostile sample store, with a finding whose every field is markup.
    static func hostileReport() throws -> (html: String, folder: TemporaryFolder) {
        let folder = try TemporaryFolder("html-report")
        let url = folder.path("hostile.store")
        try ReportSamples.write(to: url)
        let session = try EvidenceSession()
        defer { session.scratch.remove() }
        let stores = try session.stores(from: [url.path])
        var document = ReportDocument(inputs: [url.path], commandLine: "storelens report <x> --out \"y\"", toolVersion: "test")
        for store in stores {
            var section = ReportDocument.StoreSection(path: store.displayPath, found: store.found)
            section.inspection = try StoreInspector.inspect(store.copy, displayPath: store.displayPath)
            section.wal = try WALAnalyzer.analyze(try WALEvidence(copy: store.copy, displayPath: store.displayPath))
            let connection = try store.copy.open()
            let coreData = try #require(try CoreDataStore.read(connection))
            let reader = try HistoryReader(connection: connection, store: coreData, model: nil)
            section.timeline = try reader.timeline()
            section.entityWriters = try reader.summary()
            section.findings = [
                Finding(id: "planted-<b>", severity: .error, store: store.displayPath, entity: ReportSamples.scriptEntity,
                        message: "Message with <script>alert(5)</script>", evidence: ["<k>": .string("<v onclick=x>")],
                        explanation: "</td></tr></table><h1>owned</h1>", suggestion: "<a href=\"javascript:alert(6)\">click</a>"),
                Finding(id: "plain-warning", severity: .warning, store: store.displayPath, message: "A warning.", explanation: "Why."),
            ]
            document.stores.append(section)
        }
        try session.finish()
        document.originals = session.ledger.entries
        document.evidenceVerified = true
        return (HTMLReport.render(document), folder)
    }

    /// Every tag in the page is one this target writes; links only point inside the page.
    static let allowedTags: Set<String> = ["html", "head", "meta", "title", "style", "body", "header", "footer", "nav", "section",
                                           "h1", "h2", "h3", "p", "span", "strong", "code", "dl", "dt", "dd", "a", "div", "label",
                                           "select", "option", "input", "table", "thead", "tbody", "tr", "th", "td", "details",
                                           "summary", "ol", "li", "svg", "rect", "line", "text", "script"]

    @Test("a hostile store: names, writers, values and finding text render as text, and the page's only script is its own")
    func hostileStringsAreText() throws {
        let (html, _) = try Self.hostileReport()
        #expect(html.components(separatedBy: "<script").count == 2, "exactly one script element: the report's own")
        #expect(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"), "the entity name is shown as text")
        #expect(html.contains("&lt;img src=x onerror=alert(2)&gt;"), "the hostile author is shown as text")
        for raw in ["<img", "<svg onload", "<b>", "<h1>owned", "<a href=\"javascript", "<v onclick", "<k>", "</script><script>"] {
            #expect(!html.contains(raw), "\(raw) reached the page as markup")
        }
        // Structural: every tag opened anywhere is one of ours.
        let regex = try NSRegularExpression(pattern: "<(/?)([a-zA-Z][a-zA-Z0-9]*)")
        let range = NSRange(html.startIndex..., in: html)
        for match in regex.matches(in: html, range: range) {
            let name = (html as NSString).substring(with: match.range(at: 2)).lowercased()
            #expect(Self.allowedTags.contains(name), "unexpected tag <\(name)>")
        }
        let links = try NSRegularExpression(pattern: "href=\"([^\"]*)\"").matches(in: html, range: range)
            .map { (html as NSString).substring(with: $0.range(at: 1)) }
        #expect(!links.isEmpty && links.allSatisfy { $0.hasPrefix("#") }, "\(links)")
    }

    @Test("self-contained: a CSP that forbids requests, no URL to fetch, charts inline, a filter to drive")
    func selfContained() throws {
        let (html, _) = try Self.hostileReport()
        #expect(html.contains("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">"))
        #expect(!html.contains("http://") && !html.contains("https://"), "no URL anywhere in the file")
        let range = NSRange(html.startIndex..., in: html)
        #expect(try NSRegularExpression(pattern: "<[a-zA-Z][^<>]*\\s(src|href|xlink:href)=\"?[a-z]+:").firstMatch(in: html, range: range) == nil,
                "no element loads or links to anything outside the page")
        #expect(html.contains("<svg viewBox"), "charts are inline SVG")
        #expect(html.contains("History transactions per writer"))
        #expect(html.contains("id=\"sev\"") && html.contains("id=\"q\""), "severity filter and search box")
        #expect(html.contains("data-severity=\"error\"") && html.contains("data-severity=\"warning\""))
        #expect(html.contains("@media print"))
        #expect(html.contains("WAL transactions"))
        #expect(html.utf8.count < 200_000)
    }

    @Test("long lists are capped with a visible note")
    func caps() throws {
        var document = ReportDocument(inputs: ["x"], commandLine: "storelens report x", toolVersion: "test")
        var section = ReportDocument.StoreSection(path: "x.store")
        section.findings = (0..<1200).map { Finding(id: "f\($0)", severity: .info, store: "x.store", message: "m\($0)", explanation: "") }
        document.stores = [section]
        let html = HTMLReport.render(document)
        #expect(html.contains("Showing first 1,000 of 1,200 findings"))
        #expect(html.components(separatedBy: "class=\"finding\"").count == 1001)
    }

    @Test("Markdown views escape what came from the device")
    func markdown() throws {
        let folder = try TemporaryFolder("md-report")
        let url = folder.path("hostile.store")
        try ReportSamples.write(to: url)
        let session = try EvidenceSession()
        defer { session.scratch.remove() }
        let inspections = try session.stores(from: [url.path]).map { try StoreInspector.inspect($0.copy, displayPath: $0.displayPath) }
        let md = InspectionReport.markdown(inspections)
        #expect(md.contains("\\<script\\>alert(1)\\</script\\>"))
        #expect(!md.contains("<script>"))
        #expect(md.contains("| Z_ENT | entity | main file | with WAL | max PK | Z_MAX |"))
    }

    @Test("a batch line is one JSON line, and --resume reads its command and input back")
    func batchLine() throws {
        var line = BatchLine(command: "scan", input: "tickets/a \"b\".tar.gz")
        line.status = .error
        line.exitCode = 2
        line.error = "tickets/a \"b\".tar.gz is damaged"
        line.findings = [Finding(id: "x", severity: .error, message: "m", explanation: "e")]
        let text = line.json().rendered(pretty: false)
        #expect(!text.contains("\n"))
        let key = try #require(BatchLine.Key(line: text))
        #expect(key == BatchLine.Key(line: text))
        #expect(key.command == "scan" && key.input == "tickets/a \"b\".tar.gz" && key.exitCode == 2)
        #expect(BatchLine.Key(line: "{\"command\":\"scan\",\"inp") == nil, "a line cut off by a killed run is ignored")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        #expect(Array(object.keys).sorted() == ["command", "error", "exitCode", "findings", "host", "input", "schemaVersion", "seconds",
                                                "sha256", "startedAt", "status", "storelensVersion", "summary"])
    }
}
