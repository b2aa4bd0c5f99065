import Operations
import Reports
import StoreFormats

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
                                   allowed: WALCommand.formats, default: TextFormat.name),
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
        mode = try Mode(parsed, format: format)
    }

    func run(_ output: Output) throws -> ExitCode {
        try Storelens.reading(input.options) { session -> () -> Void in
            switch mode {
            case .report:
                let analyses = try Storelens.wal(paths, .init(input: input.options, integrityCheck: integrityCheck, timings: Timings.fromEnvironment), in: session)
                return { output.write(WALReport.rendered(analyses, as: format)) }
            case .diff(let from, let to):
                // Every store is read before anything is printed, so a failure leaves no half document.
                let changes = try Storelens.walDiff(paths, .init(input: input.options, from: from, to: to), in: session)
                return { RecordDiffWriter(format: format, each: false, rawCSV: rawCSV, write: output.write).write(changes) }
            case .each:
                // Streamed: one commit's diff is printed and dropped before the next is built.
                try RecordDiffWriter(format: format, each: true, rawCSV: rawCSV, write: output.write).write { try Storelens.walEachCommit(paths, input.options, in: session, visit: $0) }
                return {}
            case .write(let commit, let out, let force):
                let image = try Storelens.walImage(paths, commit: commit, into: out, force: force, input.options, in: session)
                return { output.write(WALReport.rendered(written: WALReport.WrittenImage(image, output: out), json: format == "json")) }
            }
        } then: { show, session in  // what was read is printed once the originals are checked unchanged
            show()
            input.tellKeptScratch(of: session, to: output)
            return .success
        }
    }
}
