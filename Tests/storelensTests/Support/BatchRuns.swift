import Foundation
import StoreBuilder
import StoreFormats
import StoreTestSupport

/// The inputs of a batch run (--each) and how its outputs are compared.
enum BatchRuns {
    /// tickets/: a container folder, its tar.gz, the same archive cut off (corrupt), and a store file.
    static func tickets(in folder: TemporaryFolder) throws -> URL {
        let tickets = folder.path("tickets")
        try DemoContainer.write(into: tickets.appendingPathComponent("a-container"))
        let entries = try ArchiveMaker.entries(of: tickets.appendingPathComponent("a-container"))
        try ArchiveMaker.write(entries, to: tickets.appendingPathComponent("b.tar.gz"), format: .paxTar, filter: .gzip)
        let whole = try Data(contentsOf: tickets.appendingPathComponent("b.tar.gz"))
        try whole.prefix(whole.count / 2).write(to: tickets.appendingPathComponent("c-corrupt.tar.gz"))
        try ReportSamples.write(to: tickets.appendingPathComponent("d.store"))
        return tickets
    }

    /// The file a report batch writes for `input`, by the rule docs/report.md states: the name
    /// made safe, '-', 10 hex digits of the path's SHA-256, '.html'.
    static func reportName(_ input: String) -> String {
        var base = String(input.split(separator: "/").last ?? "").unicodeScalars
            .map { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "._-".unicodeScalars.contains($0)) ? String($0) : "_" }.joined()
        while base.hasPrefix(".") || base.hasPrefix("-") { base.removeFirst() }
        return String((base.isEmpty ? "input" : base).prefix(80)) + "-" + SHA256.hex(Data(input.utf8)).prefix(10) + ".html"
    }

    /// A report with the two facts that differ between runs left out: when it was generated and
    /// the command line that made it.
    static func comparable(_ html: String) -> String {
        html.replacingOccurrences(of: "<dt>generated</dt><dd>[^<]*</dd>", with: "", options: .regularExpression)
            .replacingOccurrences(of: "<dt>command</dt><dd><code>[^<]*</code></dd>", with: "", options: .regularExpression)
    }

    /// The report files in a batch's --out-dir (temporary files would start with a dot).
    static func files(in folder: URL) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
    }
}
