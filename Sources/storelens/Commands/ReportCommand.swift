import Acquisition
import Checks
import Coexistence
import CoreDataStore
import Findings
import Foundation
import ModelReview
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
                  .value("--fail-on", valueName: "severity", help: "Exit with 1 when a finding is at least this severe.", allowed: ["error", "warning", "info"], default: "error"),
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
        guard !parsed.positionals.isEmpty else { throw .missingArgument("input") }
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
        paths = parsed.positionals
        manifestPath = parsed.value("--manifest")
        force = parsed.flag("--force")
        failOn = Finding.Severity(rawValue: parsed.value("--fail-on") ?? "error") ?? .error
        modelPath = parsed.value("--model")
        migrationTo = parsed.value("--migration-to")
        lint = parsed.flag("--lint")
        input = try InputSettings(parsed)
        readFiles = OutputPaths.readOptions.flatMap { parsed.values($0) }
    }

    func run(_ output: Output) throws -> ExitCode {
        if let batch, let outDir { return try runBatch(batch, outDir: outDir, output: output) }
        if out != "-" { try ReportFile.checkWritable(out, force: force) }
        let manifest = try manifestPath.map { try Manifest.load(path: $0) }
        let session = try input.makeSession()
        defer { session.scratch.remove() }
        let built = try build(paths, manifest: manifest, session: session)
        if out == "-" {
            output.write(built.html)
        } else {
            try ReportFile.write(built.html, to: out, force: force, originals: session.ledger.entries.map(\.path))
            let counts = Finding.Severity.allCases.reversed().map { s in "\(built.findings.filter { $0.severity == s }.count) \(s.rawValue)" }
            output.write("wrote \(TextTable.sanitized(out)) (\(built.html.utf8.count) bytes): \(plural(built.storeCount, "store")), findings: \(counts.joined(separator: ", "))\n")
        }
        if input.keepScratch { output.error("Working copies kept in \(session.scratch.url.path)\n") }
        // The report is written either way; a damaged input or a failed audit still ends as an input error.
        if let problem = built.problem {
            output.error("Error: \(problem)\n")
            return .usageOrInput
        }
        return built.findings.any(atOrAbove: failOn) ? .findings : .success
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
        return try Batch.run(command: "report", inputs: paths, settings: batch, output: output) { path, context in
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
            let session = try input.makeSession()
            defer { session.scratch.remove() }
            // The manifest first, as without --jsonl: the evidence table lists the files in the same order.
            if let manifestPath { try session.record([URL(fileURLWithPath: manifestPath)]) }
            context.hashInput(path, in: session)
            let built = try build([path], manifest: manifest, session: session)
            try ReportFile.write(built.html, to: target, force: replace, originals: session.ledger.entries.map(\.path))
            let summary = HTMLReport.batchSummary(report: target, bytes: built.html.utf8.count, stores: built.stores, findings: built.findings)
            if let problem = built.problem {
                // Written with what could be read, as without --jsonl; the line says what is missing.
                return BatchOutcome(exitCode: .usageOrInput, summary: summary, findings: built.findings, error: problem)
            }
            return BatchOutcome(exitCode: built.findings.any(atOrAbove: failOn) ? .findings : .success, summary: summary,
                                findings: built.findings)
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
        var storeCount: Int
        var stores: [String]
        var findings: [Finding]
        /// Set when the report is written but the input was read only in part (a damaged archive,
        /// a failed audit, no stores, checks that could not run): the sentence after `Error: `.
        var problem: String?
    }

    /// Reads `paths` as one case and renders its report. Throws only when there is nothing to
    /// report on (an input that cannot be opened, a bad --migration-to): then no file is written.
    func build(_ paths: [String], manifest: Manifest?, session: EvidenceSession) throws -> Built {
        let progress = ProgressReporter.current
        // STORELENS_TIMINGS: when each stage starts, from here (after the output checks).
        let timings = ProcessInfo.processInfo.environment["STORELENS_TIMINGS"] != nil
        let stopwatch = Stopwatch()
        func mark(_ what: String) {
            if timings { FileHandle.standardError.write(Data("timing report-stage=\"\(what)\" at-seconds=\(stopwatch.seconds)\n".utf8)) }
        }
        var document = ReportDocument(inputs: paths, commandLine: Self.commandLine(), toolVersion: Storelens.version)
        document.manifestPath = manifestPath
        if let manifestPath { try session.record([URL(fileURLWithPath: manifestPath)]) }

        let select = input.select
        // With a manifest, the audit reads the same inventories and working copies: the files its
        // JSON stacks need are found here too.
        let auditor = manifest.map { manifest in
            var auditor = Auditor(manifest: manifest, session: session)
            auditor.openOptions = input.open
            auditor.limits = input.limits
            return auditor
        }
        let resolver = InputResolver(session: session, limits: input.limits, hashArchives: true, wanted: auditor?.wantedFiles ?? [],
                                     stagesCopies: { [mayBind = auditor?.mayBind] path in
                                         (select.map { path.hasSuffix($0) } ?? true) || mayBind?(path) == true
                                     })
        document.inventories = try InputResolver.distinct(paths).map { try resolver.inventory(of: $0) }
        mark("inputs hashed and copied")
        var found = document.inventories.flatMap(\.stores)
        if let select = input.select {
            let matches = found.filter { $0.path.hasSuffix(select) }
            guard matches.count == 1 else {
                throw AcquisitionError.storeSelection(select: select, candidates: found.map(\.path), matched: matches.count)
            }
            found = matches
        }

        var plan = ReportDocument.RepairPlan(steps: [])
        var planNotes: [String] = []
        // The target is read before the stores, through the same evidence path; a bad one stops here.
        let target = try migrationTo.map { try MigrationTarget.load($0, session: session, options: input.open, limits: input.limits) }
        var reader = StoreReportReader(describe: Self.message)
        reader.xcodeModel = modelPath.map { URL(fileURLWithPath: $0) }
        reader.lint = lint
        reader.migrationTarget = target
        // STORELENS_REPORT_SEQUENTIAL=1 reads each store's parts one after another (to compare).
        reader.parallel = ProcessInfo.processInfo.environment["STORELENS_REPORT_SEQUENTIAL"] == nil
        func stage(_ i: Int, _ store: FoundStore) -> (String) -> Void {
            { what in
                progress.report("report: store \(i + 1) of \(found.count) (\(store.name)): \(what)", done: Int64(i), unit: .step)
                if timings { FileHandle.standardError.write(Data("timing report-stage=\"\(what)\" store=\(i + 1) at-seconds=\(stopwatch.seconds)\n".utf8)) }
            }
        }
        // Every store's working copy first: the originals are not read again after that, so
        // their after-hash runs beside the reading (`finish()` waits for it, and compares every
        // file's size, times and inode at the end, as `check` does).
        let copies = found.enumerated().map { i, store in
            stage(i, store)("copying")
            return Result { try session.workingCopy(of: store, options: input.open) }
        }
        session.verifyInBackground()
        for (i, store) in found.enumerated() {
            var section = ReportDocument.StoreSection(path: store.path, found: store)
            reader.read(copies[i], displayPath: store.path, into: &section, plan: &plan, planNotes: &planNotes, stage: stage(i, store))
            document.stores.append(section)
        }
        mark("stores read")
        var auditProblem: String?
        if var auditor {
            progress.report("report: auditing against the manifest", done: 0, unit: .step)
            var made: [String: WorkingCopy] = [:]
            for (i, store) in found.enumerated() { if case .success(let copy) = copies[i] { made[store.path] = copy } }
            auditor.acquired = (document.inventories, made)
            do {
                document.audit = try auditor.run(inputs: paths)
            } catch {
                auditProblem = Self.message(error)
            }
        }
        mark("verifying the evidence")
        try session.finish()
        mark("evidence verified")
        document.evidenceVerified = true
        document.originals = session.ledger.entries
        document.repairPlan = plan.steps.isEmpty ? nil : plan
        document.repairPlanNote = planNotes.isEmpty ? nil : planNotes.joined(separator: " ")
        document.auditProblem = auditProblem

        progress.report("report: writing the HTML", done: 0, unit: .step)
        var built = Built(html: HTMLReport.render(document), storeCount: found.count, stores: found.map(\.path),
                          findings: document.allFindings)
        mark("HTML written")
        if let damaged = document.inventories.first(where: { $0.damage != nil }), let damage = damaged.damage {
            built.problem = "\(damaged.input): \(damage); the report shows what could be read."
        } else if let auditProblem {
            built.problem = auditProblem
        } else if found.isEmpty {
            built.problem = AcquisitionError.noStores(inputs: paths).description
        } else if !document.stores.isEmpty, document.stores.allSatisfy({ $0.inspection == nil }),
                  let first = document.stores.first?.problems.first {
            // A report in which no store could be read at all is written, but it is an input error.
            built.problem = "\(paths.joined(separator: ", ")): no store could be read (\(first)); the report says why."
        } else if let section = document.stores.first(where: { !$0.problems.isEmpty }), let first = section.problems.first {
            // Checks that could not run are not a clean bill of health: the report says which, and
            // so does the exit code.
            built.problem = "\(section.path): \(first) The report lists what could not run."
        }
        return built
    }

    /// The sentence `Diagnostics` would print for an error.
    static func message(_ error: Error) -> String { Diagnostics.outcome(error).message }

    static func commandLine() -> String {
        (["storelens"] + CommandLine.arguments.dropFirst()).map { arg in
            arg.isEmpty || arg.contains(where: { " \"'$\\`".contains($0) }) ? "'" + arg.replacingOccurrences(of: "'", with: "'\\''") + "'" : arg
        }.joined(separator: " ")
    }
}

/// Writes the report: never over an existing file unless forced, never over an input, and never
/// half-written (a temporary file beside the target, then a link or rename).
enum ReportFile {
    static func checkWritable(_ path: String, force: Bool) throws {
        var st = stat()
        if lstat(path, &st) == 0 {
            if (st.st_mode & S_IFMT) == S_IFDIR {
                throw InputError(message: "\(path) is a folder; give --out the name of the HTML file to write.")
            }
            if !force {
                throw InputError(message: "\(path) already exists; give a new file name, or add --force to replace it.")
            }
        }
    }

    static func write(_ text: String, to path: String, force: Bool, originals: [String]) throws {
        try write(Data(text.utf8), to: path, force: force, originals: originals)
    }

    static func write(_ data: Data, to path: String, force: Bool, originals: [String]) throws {
        try place(at: path, force: force, originals: originals) { fd, _ in
            let code = OutputFileFailure.writeAll(fd, [UInt8](data))
            if code != 0 { throw OutputFileFailure(path: path, code: code) }
        }
    }

    /// Creates a temporary file beside `path`, lets `fill` write it (through the descriptor, or by
    /// opening the temporary path itself, e.g. with SQLite), then links it into place — or, when
    /// forced, renames it over an existing file. The target is never half-written.
    static func place(at path: String, force: Bool, originals: [String], fill: (Int32, String) throws -> Void) throws {
        try checkWritable(path, force: force)
        let url = URL(fileURLWithPath: path)
        let resolvedTarget = url.resolvingSymlinksInPath().path
        if originals.contains(where: { URL(fileURLWithPath: $0).resolvingSymlinksInPath().path == resolvedTarget }) {
            throw InputError(message: "\(path) is one of the inputs; give --out another file, the evidence is never overwritten.")
        }
        let folder = url.deletingLastPathComponent().path
        var template = Array((folder + "/." + url.lastPathComponent + ".storelens-XXXXXX").utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard fd >= 0 else {
            throw InputError(message: "cannot write in \(folder) (\(String(cString: strerror(errno)))); give --out a path in a writable folder.")
        }
        let temp = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        var linked = false
        defer { if !linked { unlink(temp) } }
        let mask = umask(0)
        umask(mask)
        fchmod(fd, 0o666 & ~mask)
        do {
            try fill(fd, temp)
        } catch {
            close(fd)
            throw error
        }
        let synced = fsync(fd) == 0
        close(fd)
        guard synced else { throw OutputFileFailure(path: path, code: errno) }
        if force {
            guard rename(temp, path) == 0 else {
                throw InputError(message: "cannot write \(path) (\(String(cString: strerror(errno)))).")
            }
            linked = true
            return
        }
        // link() never replaces: if someone created the file meanwhile, this fails with EEXIST.
        if link(temp, path) == 0 {
            unlink(temp)
            linked = true
            return
        }
        let linkError = errno
        if linkError == EEXIST {
            throw InputError(message: "\(path) already exists; give a new file name, or add --force to replace it.")
        }
        // File systems without hard links: create the target exclusively, then rename over it.
        let placeholder = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o644)
        guard placeholder >= 0 else {
            throw InputError(message: errno == EEXIST ? "\(path) already exists; give a new file name, or add --force to replace it."
                                                       : "cannot create \(path) (\(String(cString: strerror(errno)))).")
        }
        close(placeholder)
        guard rename(temp, path) == 0 else {
            unlink(path)
            throw InputError(message: "cannot write \(path) (\(String(cString: strerror(errno)))).")
        }
        linked = true
    }
}
