import Acquisition
import Findings
import Foundation
import OutputFiles
import StoreFormats

extension Storelens {
    /// What a report batch takes besides the batch's own options (`report --jsonl FILE --out-dir
    /// FOLDER`, docs/report.md "Many cases").
    public struct ReportBatchOptions: Sendable {
        /// Each input's report: its manifest is recorded in each input's session before the input.
        public var report: ReportOptions
        /// The folder of reports, one per input (made if missing).
        public var outDir: String
        /// Replace an input's report that is already in the folder.
        public var force: Bool
        /// A finding at least this severe makes an input's exit code 1.
        public var failOn: Finding.Severity
        /// The files read besides the inputs (a manifest, models, a password file): no report lands on one.
        public var readFiles: [String]

        public init(report: ReportOptions, outDir: String, force: Bool = false, failOn: Finding.Severity = .error, readFiles: [String] = []) {
            self.report = report
            self.outDir = outDir
            self.force = force
            self.failOn = failOn
            self.readFiles = readFiles
        }
    }

    /// `storelens report --jsonl FILE --out-dir FOLDER`: every input a case of its own (`batch`),
    /// its report, rendered by `render` (`HTMLReport.render`), in `outDir` under a name made from
    /// its path (`BatchReportName`), its line naming that report and counting its findings. An
    /// input that cannot be read at all gets an error line and no report; a damaged one its report
    /// of what could be read and an error line. A report already in the folder fails its input
    /// unless `force`; with `batch.resume` a storelens report of an input without a line (its run
    /// stopped before the line) is written again. Throws before any job when `outDir` is a file or
    /// cannot be made.
    public static func reportBatch(_ inputs: [String], _ batch: BatchOptions, _ options: ReportBatchOptions,
                                   events: @escaping @Sendable (BatchEvent) -> Void = { _ in },
                                   render: @escaping @Sendable (ReportDocument) -> String) throws -> BatchRun {
        try makeReportFolder(options.outDir)
        let resume = batch.resume
        return try self.batch(inputs, batch, events: events) { input, evidence in
            try writeReport(of: input, evidence, options, resume: resume, render: render)
        }
    }

    /// Where a report batch writes `input`'s report in `folder`.
    public static func reportPath(for input: String, in folder: String) -> String {
        (folder.hasSuffix("/") ? folder : folder + "/") + BatchReportName.fileName(for: input)
    }

    static func makeReportFolder(_ outDir: String) throws {
        var isFolder: ObjCBool = false
        if FileManager.default.fileExists(atPath: outDir, isDirectory: &isFolder) {
            guard isFolder.boolValue else {
                throw InputError(message: "--out-dir \(outDir) is a file; give --out-dir the folder for the reports (one per input).")
            }
            return
        }
        do {
            try FileManager.default.createDirectory(atPath: outDir, withIntermediateDirectories: true)
        } catch {
            throw InputError(message: "cannot make the folder \(outDir) for --out-dir (\(error.localizedDescription)); give a folder you can write in.")
        }
    }

    /// One input of a report batch: its target checked, then read, rendered and written.
    static func writeReport(of input: String, _ evidence: BatchEvidence, _ options: ReportBatchOptions, resume: Bool,
                            render: (ReportDocument) -> String) throws -> BatchOutcome {
        let target = reportPath(for: input, in: options.outDir)
        // Checked against this input (the batch's output check covered the folder): no report
        // lands on an input or its family under any name.
        try OutputGuard.check([OutputGuard.Output(option: "--out-dir", path: target)], inputs: [input] + options.readFiles)
        let replace = try mayReplace(target, of: input, force: options.force, resume: resume)
        // The manifest first, as without a batch: the evidence table lists the files in the same order.
        let first = options.report.manifestPath.map { [URL(fileURLWithPath: $0)] } ?? []
        return try evidence.reading(recordingFirst: first) { session in
            let built = try report([input], options.report, in: session, render: render)
            try OutputFile.write(built.html, to: target, force: replace, originals: session.ledger.entries.map(\.path))
            let contents = built.contents
            let summary = reportSummary(report: target, bytes: built.html.utf8.count, stores: contents.stores, findings: contents.findings)
            if let problem = contents.problem {
                // Written with what could be read, as without a batch; the line says what is missing.
                return BatchOutcome(exitCode: ErrorClass.input.exitCode, summary: summary, findings: contents.findings, error: problem)
            }
            return BatchOutcome(exitCode: contents.findings.any(atOrAbove: options.failOn) ? 1 : 0, summary: summary, findings: contents.findings)
        }
    }

    /// Whether the report at `target` may be replaced: nothing there, or `force`, or (with
    /// `resume`) a storelens report of an input without a line. Throws when something else is in the way.
    static func mayReplace(_ target: String, of input: String, force: Bool, resume: Bool) throws -> Bool {
        var st = stat()
        guard lstat(target, &st) == 0 else { return force }
        if (st.st_mode & S_IFMT) == S_IFDIR {
            throw InputError(message: "\(target) is a folder where the report of \(input) goes; move it away.")
        }
        // An input without a line whose report is there: the run that wrote it was stopped before
        // its line (a killed pod). --resume finishes it; anything that is not a storelens report
        // is never replaced without --force.
        if force || (resume && (st.st_mode & S_IFMT) == S_IFREG && isReport(target)) { return true }
        throw InputError(message: "\(target), the report of \(input), already exists; add --force to replace it (or --resume to skip the inputs that have a line in the results).")
    }

    /// Whether `path` begins as the reports storelens writes do (their generator tag is in the
    /// first few hundred bytes).
    public static func isReport(_ path: String) -> Bool {
        guard let handle = FileHandle(forReadingAtPath: path) else { return false }
        defer { try? handle.close() }
        let head = (try? handle.read(upToCount: 2048)) ?? Data()
        return String(decoding: head, as: UTF8.self).contains("<meta name=\"generator\" content=\"storelens ")
    }

    /// A report batch line's summary: the finding counts (as `check` and `audit` give them), the
    /// report file written for the input, its size, and the stores it covers.
    static func reportSummary(report: String, bytes: Int, stores: [String], findings: [Finding]) -> JSONValue {
        var members: [(String, JSONValue)] = Finding.Severity.allCases.reversed().map { s in
            (s.rawValue, .int(findings.filter { $0.severity == s }.count))
        }
        members.append(("report", .string(report)))
        members.append(("bytes", .int(bytes)))
        members.append(("storeCount", .int(stores.count)))
        members.append(("stores", .array(stores.prefix(BatchLine.summaryStoreLimit).map(JSONValue.string))))
        return .object(members)
    }
}
