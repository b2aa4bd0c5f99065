import Findings
import Foundation
import Operations
import OutputFiles
import Reports
import StoreFormats

/// `storelens report INPUT --out report.html`: one self-contained HTML file for a support ticket
/// (its help: ReportCommand+Help.swift; where it writes: ReportCommand+Options.swift).
struct ReportCommand: Command {
    let paths: [String]
    let destination: ReportDestination
    let manifestPath: String?
    let force: Bool
    let failOn: Finding.Severity
    let modelPath: String?
    let migrationTo: String?
    let lint: Bool
    let input: InputSettings
    /// The files read besides the inputs (manifest, models, password file): no report lands on one.
    let readFiles: [String]

    init(_ parsed: ParsedArguments) throws(ParseError) {
        paths = try parsed.inputs()
        destination = try Self.destination(parsed)
        manifestPath = parsed.value("--manifest")
        force = parsed.flag("--force")
        failOn = CommonOptions.failOn(parsed)
        modelPath = parsed.value("--model")
        migrationTo = parsed.value("--migration-to")
        lint = parsed.flag("--lint")
        input = try InputSettings(parsed)
        readFiles = OutputPaths.readOptions.flatMap { parsed.valuesIfOffered($0) }
    }

    func run(_ output: Output) throws -> ExitCode {
        let out: String
        switch destination {
        case .file(let file): out = file
        case .folder(let outDir, let batch): return try runBatch(batch, outDir: outDir, output: output)
        }
        if out != "-" { try OutputFile.checkWritable(out, force: force) }
        let options = try reportOptions()
        // The report checks the originals itself before it is written (it says so in the file).
        return try Storelens.reading(input.options) { session in
            try Storelens.report(paths, options, in: session, render: HTMLReport.render)
        } then: { built, session in
            let (stores, findings) = (built.contents.stores, built.contents.findings)
            if out == "-" {
                output.write(built.html)
            } else {
                try OutputFile.write(built.html, to: out, force: force, originals: session.ledger.entries.map(\.path))
                let counts = Finding.Severity.allCases.reversed().map { s in "\(findings.filter { $0.severity == s }.count) \(s.rawValue)" }
                output.write("wrote \(TextTable.sanitized(out)) (\(built.html.utf8.count) bytes): \(plural(stores.count, "store")), findings: \(counts.joined(separator: ", "))\n")
            }
            input.tellKeptScratch(of: session, to: output)
            // The report is written either way; a damaged input or a failed audit still ends as an input error.
            if let problem = built.contents.problem {
                output.error("Error: \(problem)\n")
                return .usageOrInput
            }
            return findings.any(atOrAbove: failOn) ? .findings : .success
        }
    }

    /// Batch mode: every input a case of its own, its report in the folder (`Storelens.reportBatch`).
    func runBatch(_ batch: BatchSettings, outDir: String, output: Output) throws -> ExitCode {
        let options = Storelens.ReportBatchOptions(report: try reportOptions(), outDir: outDir, force: force, failOn: failOn, readFiles: readFiles)
        return try Batch.finish("report", batch, output) { events in
            try Storelens.reportBatch(paths, Batch.options("report", batch, input: input), options, events: events, render: HTMLReport.render)
        }
    }
}
