import Acquisition
import CoreDataStore
import Foundation
import Operations
import OutputFiles
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
        paths = try parsed.inputs()
        format = parsed.format
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
        if case .write(_, let out, let force) = mode { try OutputFile.checkWritable(out, force: force) }
        return try input.makeSession().reading { session in
            switch mode {
            case .report:
                let analyses = try Storelens.wal(paths, .init(input: input.options, integrityCheck: integrityCheck, timings: Timings.fromEnvironment), in: session)
                try session.finish()
                output.write(WALReport.rendered(analyses, as: format))

            case .diff(let from, let to):
                // Every store is read before anything is printed, so a failure leaves no half document.
                let changes = try Storelens.walDiff(paths, .init(input: input.options, from: from, to: to), in: session)
                try session.finish()
                diffWriter(each: false, output).write(changes)

            case .each:
                // Streamed: one commit's diff is printed and dropped before the next is built.
                let writer = diffWriter(each: true, output)
                writer.begin()
                try Storelens.walEachCommit(paths, input.options, in: session) { writer.add($0) }
                writer.end()
                try session.finish()

            case .write(let commit, let out, let force):
                let image = try Storelens.walImage(paths, commit: commit, input.options, in: session)
                try session.finish()
                try OutputFile.write(image.bytes, to: out, force: force, originals: session.ledger.entries.map(\.path))
                let written = WALReport.WrittenImage(path: image.store, commit: image.commit, commitFrame: image.commitFrame,
                                                     output: out, bytes: image.bytes.count, pageSize: image.pageSize)
                output.write(format == "json" ? WALReport.json(written: written).rendered() + "\n" : WALReport.text(written: written))
            }
            input.tellKeptScratch(of: session, to: output)
            return .success
        }
    }

    func diffWriter(each: Bool, _ output: Output) -> RecordDiffWriter {
        let writer = RecordDiffWriter(format: RecordDiffWriter.Format(rawValue: format) ?? .text, each: each, write: output.write)
        writer.rawCSV = rawCSV
        return writer
    }
}
