import Acquisition
import CoreDataStore
import Foundation
import Reports
import StoreFormats
import WALForensics

/// `storelens wal INPUT`: what a store's -wal and -shm hold, point-in-time images, and what the WAL changed.
struct WALCommand: Command {
    static let configuration = CommandConfiguration(
        name: "wal",
        abstract: "Show what a store's -wal and -shm hold, write the store as of any commit, or list what the WAL changed.",
        discussion: """
        Without options: the WAL's frames and commits, the tables each transaction wrote, frames SQLite
        ignores (an unfinished transaction, damage, earlier WAL generations), the -shm state, and
        warnings. --as-of N --out FILE writes the database as it stood after commit N (0: the main
        file alone) as an ordinary SQLite file. --diff lists rows inserted, updated and deleted per
        entity between the main file and the WAL view, or between commits --from N and --to M, each
        record with its values decoded as `rows` shows them (deleted rows with their last values,
        updated rows with old → new). --diff --each gives every commit's changes in one pass (commit k
        against commit k-1) with the persistent-history transactions that commit wrote.
        """,
        arguments: [ArgumentSpec(name: "input", help: "A store file, an app container or .xcappdata folder, a tar or zip archive of one, or a Finder/iTunes backup folder.", repeating: true, optional: false)],
        options: [OptionSpec.value("--format", "-f", valueName: "format",
                                   help: "Output format: text, json, markdown (the report only), jsonl or csv (--diff only).",
                                   allowed: ["text", "json", "markdown", "jsonl", "csv"], default: "text"),
                  OptionSpec.value("--as-of", valueName: "commit", help: "With --out: the commit to write the database as of (0: the main file alone; default: the last commit)."),
                  OptionSpec.value("--out", valueName: "file", help: "Write the point-in-time database to this file (never overwritten unless --force)."),
                  OptionSpec.flag("--force", help: "With --out: replace the file if it exists (never an input), as report does."),
                  OptionSpec.flag("--diff", help: "List the rows the WAL inserted, updated and deleted, per entity."),
                  OptionSpec.value("--from", valueName: "commit", help: "With --diff: the earlier state (default 0, the main file alone)."),
                  OptionSpec.value("--to", valueName: "commit", help: "With --diff: the later state (default: the last commit)."),
                  OptionSpec.flag("--each", help: "With --diff: every commit's changes in one pass (commit k against k-1), with its history transactions."),
                  CommonOptions.rawCSV,
                  OptionSpec.flag("--no-integrity-check", help: "Skip SQLite's quick_check of the WAL view (faster on very large stores).")]
            + [CommonOptions.timeZone] + CommonOptions.input,
        examples: ["storelens wal default.store",
                   "storelens wal default.store --as-of 12 --out /tmp/default-commit12.sqlite",
                   "storelens wal default.store --diff",
                   "storelens wal default.store --diff --from 3 --to 7 --format json",
                   "storelens wal default.store --diff --each --format jsonl"])

    enum Mode {
        case report
        case write(commit: Int?, output: String, force: Bool)
        case diff(from: Int?, to: Int?)
        case each
    }

    let paths: [String]
    let format: String
    let rawCSV: Bool
    let mode: Mode
    let integrityCheck: Bool
    let input: InputSettings

    init(_ parsed: ParsedArguments) throws(ParseError) {
        guard !parsed.positionals.isEmpty else { throw .missingArgument("input") }
        paths = parsed.positionals
        format = parsed.value("--format") ?? "text"
        rawCSV = try CommonOptions.rawCSV(parsed, csv: format == "csv")
        integrityCheck = !parsed.flag("--no-integrity-check")
        input = try InputSettings(parsed)
        func commit(_ name: String) throws(ParseError) -> Int? {
            guard let text = parsed.value(name) else { return nil }
            guard let n = Int(text), n >= 0 else {
                throw .invalid("The value '\(text)' is invalid for '\(name)'; give a commit number (0 for the main file alone).")
            }
            return n
        }
        let asOf = try commit("--as-of")
        let from = try commit("--from")
        let to = try commit("--to")
        let out = parsed.value("--out")
        if parsed.flag("--diff") {
            guard asOf == nil, out == nil else {
                throw .invalid("--diff cannot be combined with --as-of or --out; use --from and --to to choose the commits to compare.")
            }
            if parsed.flag("--each") {
                guard from == nil, to == nil else {
                    throw .invalid("--each compares every commit with the one before it; leave out --from and --to (or drop --each to compare two commits).")
                }
                mode = .each
            } else {
                mode = .diff(from: from, to: to)
            }
        } else {
            guard from == nil, to == nil else { throw .invalid("--from and --to choose the commits for --diff; add --diff.") }
            guard !parsed.flag("--each") else { throw .invalid("--each lists every commit's changes; add --diff.") }
            if let out {
                guard !out.isEmpty else { throw .invalid("--out needs a file name.") }
                mode = .write(commit: asOf, output: out, force: parsed.flag("--force"))
            } else if asOf != nil {
                throw .invalid("--as-of needs --out FILE to write the database as of that commit (or use 'storelens rows … --as-of N' to read it).")
            } else {
                mode = .report
            }
        }
        if parsed.flag("--force"), out == nil { throw .invalid("--force replaces the file --out names; add --out FILE (or drop --force).") }
        if format == "markdown" {
            guard case .report = mode else { throw .invalid("--format markdown is for the WAL report; use text, json, jsonl or csv with --diff, and text or json with --out.") }
        }
        if format == "jsonl" || format == "csv" {
            switch mode {
            case .diff, .each: break
            default: throw .invalid("--format \(format) lists changed records; use it with --diff (the report and --out take text or json).")
            }
        }
    }

    func run(_ output: Output) throws -> ExitCode {
        if case .write(_, let out, let force) = mode { try ReportFile.checkWritable(out, force: force) }
        let session = try input.makeSession()
        defer { session.scratch.remove() }
        let stores = try session.stores(from: paths, select: input.select, options: input.open, limits: input.limits)
        switch mode {
        case .report:
            var analyses: [WALAnalysis] = []
            for store in stores {
                let evidence = try WALEvidence(copy: store.copy, displayPath: store.displayPath)
                let clock = ContinuousClock()
                var analysis: WALAnalysis?
                let analyzing = try clock.measure {
                    analysis = try WALAnalyzer.analyze(evidence, options: .init(integrityCheck: integrityCheck))
                }
                if let analysis { analyses.append(analysis) }
                if ProcessInfo.processInfo.environment["STORELENS_TIMINGS"] != nil, let walData = evidence.walData {
                    // For `make bench`: the frame walk alone (header, salts, cumulative checksums), run again.
                    var frames = 0
                    let scanning = clock.measure { frames = WAL(data: walData).validFrameCount }
                    output.error("timing wal-bytes=\(walData.count) valid-frames=\(frames) wal-scan-seconds=\(Self.seconds(scanning)) analyze-seconds=\(Self.seconds(analyzing))\n")
                }
            }
            try session.finish()
            switch format {
            case "json": output.write(WALReport.json(analyses).rendered() + "\n")
            case "markdown": output.write(WALReport.markdown(analyses))
            default: output.write(WALReport.text(analyses))
            }

        case .diff(let from, let to):
            // Every store is read before anything is printed, so a failure leaves no half document.
            var diffs: [(String, RecordDiffWriter.Position, RecordDiff)] = []
            for store in stores {
                let evidence = try WALEvidence(copy: store.copy, displayPath: store.displayPath)
                let diff = try RecordDiff.compute(evidence, from: from, to: to, decoder: Self.decoder(store.copy))
                diffs.append((store.displayPath, .init(from: diff.diff.from, to: diff.diff.to), diff))
            }
            try session.finish()
            let writer = RecordDiffWriter(format: RecordDiffWriter.Format(rawValue: format) ?? .text, each: false, write: output.write)
            writer.rawCSV = rawCSV
            writer.begin()
            for (path, position, diff) in diffs {
                writer.beginStore(path: path)
                writer.add(path: path, position: position, diff: diff)
                writer.endStore()
            }
            writer.end()

        case .each:
            // Streamed: one commit's diff is printed and dropped before the next is built.
            let writer = RecordDiffWriter(format: RecordDiffWriter.Format(rawValue: format) ?? .text, each: true, write: output.write)
            writer.rawCSV = rawCSV
            writer.begin()
            for store in stores {
                let evidence = try WALEvidence(copy: store.copy, displayPath: store.displayPath)
                writer.beginStore(path: store.displayPath)
                try RecordDiff.forEachCommit(evidence, decoder: Self.decoder(store.copy)) { commit, diff in
                    let transaction = evidence.wal?.transactions[commit - 1]
                    writer.add(path: store.displayPath,
                               position: .init(from: commit - 1, to: commit, firstFrame: transaction?.firstFrame,
                                               commitFrame: transaction?.commitFrame),
                               diff: diff)
                }
                writer.endStore()
            }
            writer.end()
            try session.finish()

        case .write(let commit, let out, let force):
            guard stores.count == 1, let store = stores.first else {
                throw InputError(message: "--out writes one file, but the input holds \(stores.count) stores (\(stores.prefix(5).map(\.displayPath).joined(separator: ", "))); choose one with --store.")
            }
            let evidence = try WALEvidence(copy: store.copy, displayPath: store.displayPath)
            let image = try PointInTime.image(evidence, commit: commit)
            // Prove SQLite reads the image before writing it anywhere.
            _ = try PointInTime.open(image: image, name: store.displayPath, commit: commit)
            try session.finish()
            try ReportFile.write(image, to: out, force: force, originals: session.ledger.entries.map(\.path))
            let chosen = commit ?? evidence.commitCount
            let written = WALReport.WrittenImage(
                path: store.displayPath, commit: chosen,
                commitFrame: chosen == 0 ? nil : evidence.wal?.commitFrame(ofCommit: chosen),
                output: out, bytes: image.count, pageSize: evidence.header?.pageSize ?? evidence.wal?.pageSize ?? 0)
            output.write(format == "json" ? WALReport.json(written: written).rendered() + "\n" : WALReport.text(written: written))
        }
        if input.keepScratch { output.error("Working copies kept in \(session.scratch.url.path)\n") }
        return .success
    }

    /// Values decode as `rows` decodes them: external data read through the working copy's.
    static func decoder(_ copy: WorkingCopy) -> ValueDecoder {
        ValueDecoder(copy)
    }

    static func seconds(_ duration: Duration) -> String {
        String(format: "%.6f", Stopwatch.seconds(of: duration))
    }
}
