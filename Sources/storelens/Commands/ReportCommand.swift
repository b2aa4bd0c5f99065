import Acquisition
import Checks
import Coexistence
import CoreDataStore
import Findings
import Foundation
import ModelReview
import Operations
import OutputFiles
import Repair
import Reports
import StoreFormats
import WALForensics

/// `storelens report INPUT --out report.html`: one self-contained HTML file for a support ticket.
struct ReportCommand: Command {
    static let configuration = CommandConfiguration(
        name: "report",
        abstract: "Write one self-contained HTML file for a support ticket: every store's summary, entities, findings, history timeline, WAL and hashes.",
        discussion: """
        The file opens in any browser without a network: CSS, script and charts are inline and a
        Content-Security-Policy forbids every request. It holds the input and its evidence hashes;
        per store the stack, metadata, WAL state and history span; entity tables with rows in the
        main file and with the WAL, and the writers persistent history saw; the findings of every
        check (and of the audit with --manifest) with a severity filter and a search box; charts of
        records per entity and of history transactions per writer; the WAL's transactions; and the
        repair plan. Long lists are capped with a note. Every string from the input is escaped.
        --out never replaces a file unless --force is given; the report is written to a temporary
        name beside it and renamed.

        Batch mode (--jsonl FILE --out-dir FOLDER; docs/report.md, docs/batch.md): every input
        (every entry of a folder with --each) is a case of its own, with its own report in FOLDER
        named after it: its last path component with every character but ASCII letters, digits,
        '.', '_' and '-' made '_' and leading dots and dashes dropped (at most 80 characters), '-',
        the first 10 hex digits of the SHA-256 of the input's path as given, and '.html'
        (tickets/4711.tar.gz -> 4711.tar.gz-6eab1f15aa.html). Each input appends one line to FILE
        naming its report and counting its findings; an input that cannot be read at all gets an
        error line and no report. A report already in FOLDER is refused unless --force; --resume
        skips the inputs that have a line (and rewrites the report of one that has none, left by
        a stopped run); --shard K/N runs a share.
        """,
        arguments: [ArgumentSpec(name: "input", help: "A store file, container, .xcappdata, archive or backup (several are read as one case, as audit does).", repeating: true, optional: false)],
        options: [.value("--out", "-o", valueName: "file", help: "The HTML file to write (- for stdout). In batch mode give --out-dir instead."),
                  .value("--out-dir", valueName: "folder", help: "With --jsonl: the folder to write one report per input in (made if missing; never an input's folder or inside one)."),
                  .value("--manifest", "-m", valueName: "file", help: "Also audit the input against this manifest (docs/manifest.md)."),
                  .flag("--force", help: "Replace --out (in batch mode, an input's report in --out-dir) if it exists."),
                  CommonOptions.failOn,
                  ModelOption.model,
                  .value("--migration-to", valueName: "model", help: "Also plan each store's migration to this model (.xcdatamodeld, .momd or a store; docs/migration.md)."),
                  .flag("--lint", help: "Also lint each store's model for CloudKit (docs/lint.md).")]
            + [CommonOptions.timeZone] + CommonOptions.input + BatchOptions.all,
        examples: ["storelens report Todo.xcappdata --out report.html",
                   "storelens report Todo.xcappdata --lint --migration-to MyApp.app/Model.momd --out release-check.html",
                   "storelens report container.tar.gz --manifest storelens.json --out ticket-4711.html",
                   "storelens report tickets/ --each --out-dir reports/ --jsonl report.jsonl --jobs 2 --resume"])

    let paths: [String]
    /// The one report's file; empty in batch mode.
    let out: String
    /// Batch mode: the folder of reports, one per input.
    let outDir: String?
    let batch: BatchSettings?
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
        batch = try BatchSettings.parse(parsed)
        if batch != nil {
            if parsed.value("--out") != nil {
                throw .invalid("--out names one report, and a batch writes one per input: give --out-dir FOLDER for the reports instead.")
            }
            guard let dir = parsed.value("--out-dir") else {
                throw .invalid("Missing '--out-dir <folder>': a report batch writes one HTML file per input into this folder.")
            }
            guard !dir.isEmpty, dir != "-" else {
                throw .invalid("--out-dir needs a folder for the reports (each is a file of its own, so not - for stdout).")
            }
            out = ""
            outDir = dir
        } else {
            if parsed.value("--out-dir") != nil {
                throw .invalid("--out-dir is for a batch (one report per input); add --jsonl FILE for the results, or give --out FILE for one report.")
            }
            guard let out = parsed.value("--out"), !out.isEmpty else {
                throw .invalid("Missing '--out <file>': report writes one HTML file; name it (or give - for stdout).")
            }
            self.out = out
            outDir = nil
        }
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
        if let batch, let outDir { return try runBatch(batch, outDir: outDir, output: output) }
        if out != "-" { try OutputFile.checkWritable(out, force: force) }
        let manifest = try manifestPath.map { try Manifest.load(path: $0) }
        return try input.makeSession().reading { session in
            let built = try build(paths, manifest: manifest, session: session)
            if out == "-" {
                output.write(built.html)
            } else {
                try OutputFile.write(built.html, to: out, force: force, originals: session.ledger.entries.map(\.path))
                let counts = Finding.Severity.allCases.reversed().map { s in "\(built.findings.filter { $0.severity == s }.count) \(s.rawValue)" }
                output.write("wrote \(TextTable.sanitized(out)) (\(built.html.utf8.count) bytes): \(plural(built.stores.count, "store")), findings: \(counts.joined(separator: ", "))\n")
            }
            input.tellKeptScratch(of: session, to: output)
            // The report is written either way; a damaged input or a failed audit still ends as an input error.
            if let problem = built.problem {
                output.error("Error: \(problem)\n")
                return .usageOrInput
            }
            return built.findings.any(atOrAbove: failOn) ? .findings : .success
        }
    }

    /// Batch mode: every input a case of its own, its report in `outDir` under a name made from
    /// its path (`BatchReportName`), its line in the results file naming that report.
    func runBatch(_ batch: BatchSettings, outDir: String, output: Output) throws -> ExitCode {
        let manifest = try manifestPath.map { try Manifest.load(path: $0) }
        var isFolder: ObjCBool = false
        if FileManager.default.fileExists(atPath: outDir, isDirectory: &isFolder) {
            guard isFolder.boolValue else {
                throw InputError(message: "--out-dir \(outDir) is a file; give --out-dir the folder for the reports (one per input).")
            }
        } else {
            do {
                try FileManager.default.createDirectory(atPath: outDir, withIntermediateDirectories: true)
            } catch {
                throw InputError(message: "cannot make the folder \(outDir) for --out-dir (\(error.localizedDescription)); give a folder you can write in.")
            }
        }
        return try Batch.run(command: "report", inputs: paths, settings: batch, input: input, output: output) { path, evidence in
            let target = Self.reportPath(for: path, in: outDir)
            // Checked against this input (the batch's output check covered the folder): no
            // report lands on an input or its family under any name.
            try OutputGuard.check([OutputGuard.Output(option: "--out-dir", path: target)], inputs: [path] + readFiles)
            var st = stat()
            var replace = force
            if lstat(target, &st) == 0 {
                if (st.st_mode & S_IFMT) == S_IFDIR {
                    throw InputError(message: "\(target) is a folder where the report of \(path) goes; move it away.")
                }
                // An input without a line whose report is there: the run that wrote it was
                // stopped before its line (a killed pod). --resume finishes it; anything that
                // is not a storelens report is never replaced without --force.
                if !replace, batch.resume, (st.st_mode & S_IFMT) == S_IFREG, Self.isReport(target) { replace = true }
                if !replace {
                    throw InputError(message: "\(target), the report of \(path), already exists; add --force to replace it (or --resume to skip the inputs that have a line in the results).")
                }
            }
            // The manifest first, as without --jsonl: the evidence table lists the files in the same order.
            return try evidence.reading(recordingFirst: manifestPath.map { [URL(fileURLWithPath: $0)] } ?? []) { session in
                let built = try build([path], manifest: manifest, session: session)
                try OutputFile.write(built.html, to: target, force: replace, originals: session.ledger.entries.map(\.path))
                let summary = HTMLReport.batchSummary(report: target, bytes: built.html.utf8.count, stores: built.stores, findings: built.findings)
                if let problem = built.problem {
                    // Written with what could be read, as without --jsonl; the line says what is missing.
                    return BatchOutcome(exitCode: .usageOrInput, summary: summary, findings: built.findings, error: problem)
                }
                return BatchOutcome(exitCode: built.findings.any(atOrAbove: failOn) ? .findings : .success, summary: summary,
                                    findings: built.findings)
            }
        }
    }

    /// Whether `path` begins as the reports storelens writes do (their generator tag is in the
    /// first few hundred bytes).
    static func isReport(_ path: String) -> Bool {
        guard let handle = FileHandle(forReadingAtPath: path) else { return false }
        defer { try? handle.close() }
        let head = (try? handle.read(upToCount: 2048)) ?? Data()
        return String(decoding: head, as: UTF8.self).contains("<meta name=\"generator\" content=\"storelens ")
    }

    /// Where the batch writes `input`'s report.
    static func reportPath(for input: String, in folder: String) -> String {
        (folder.hasSuffix("/") ? folder : folder + "/") + BatchReportName.fileName(for: input)
    }

    /// One case read and rendered: the HTML, and what the exit code is made of.
    struct Built {
        var html: String
        var stores: [String]
        var findings: [Finding]
        /// Set when the report is written but the input was read only in part: the sentence after `Error: `.
        var problem: String?
    }

    /// Reads `paths` as one case (`Storelens.report`) and renders its report. Throws only when
    /// there is nothing to report on (an input that cannot be opened, a bad --migration-to):
    /// then no file is written.
    func build(_ paths: [String], manifest: Manifest?, session: EvidenceSession) throws -> Built {
        let stopwatch = Stopwatch()
        let timings = Timings.fromEnvironment
        let options = Storelens.ReportOptions(
            input: input.options, xcodeModel: modelPath.map { URL(fileURLWithPath: $0) }, lint: lint, migrationTarget: migrationTo,
            manifest: manifest, manifestPath: manifestPath, commandLine: Self.commandLine(),
            toolVersion: RootCommand.version,
            // STORELENS_REPORT_SEQUENTIAL=1 reads each store's parts one after another (to compare).
            parallel: ProcessInfo.processInfo.environment["STORELENS_REPORT_SEQUENTIAL"] == nil,
            describe: Self.message, timings: timings)
        let contents = try Storelens.report(paths, options, in: session)
        ProgressReporter.current.report("report: writing the HTML", done: 0, unit: .step)
        let html = HTMLReport.render(contents.document)
        timings?.record("report-stage=\"HTML written\" at-seconds=\(stopwatch.seconds)")
        return Built(html: html, stores: contents.stores, findings: contents.findings, problem: contents.problem)
    }

    /// The sentence `Diagnostics` would print for an error.
    static func message(_ error: Error) -> String { Diagnostics.outcome(error).message }

    static func commandLine() -> String {
        (["storelens"] + CommandLine.arguments.dropFirst()).map { arg in
            arg.isEmpty || arg.contains(where: { " \"'$\\`".contains($0) }) ? "'" + arg.replacingOccurrences(of: "'", with: "'\\''") + "'" : arg
        }.joined(separator: " ")
    }
}
