import Operations
import Reports
import WALForensics

/// `storelens recover INPUT`: every version of every record the WAL proves, with its state and source.
struct RecoverCommand: Command {
    static let configuration = CommandConfiguration(
        name: "recover",
        abstract: "List every version of every record the store family holds: live, superseded and deleted from the WAL's commits, uncommitted and carved from free space, with values and sources.",
        discussion: """
        The main file is commit 0 and each valid WAL commit a later state; a record's values at each
        of them are one version (identical values folded into one, with every run of commits they were
        seen in). live: the version the last commit holds; superseded: a later commit changed the
        record; deleted: the record's last version before a commit deleted it. Each version has its
        decoded values (as `rows` shows them), the file and frames that wrote it, the commits it was
        seen at, and the commit and persistent-history transaction that changed or deleted it.
        Then what no committed state shows: cells of frames after the last commit (uncommitted),
        and records carved from freeblocks and unallocated space of table pages (main file and every
        WAL page image), freelist pages, frames of an older WAL generation and a -journal (carved),
        each kept only when it passes the false-positive rules of docs/recover.md. A carved copy of
        a committed version is listed with that version (finds); a freed cell whose first 4 bytes
        were overwritten has confidence header-rebuilt and may carry Z_PK unknown (given back when
        a persistent-history delete's kept values name the record). Last, deletes whose values
        persistent history kept (ZTOMBSTONE0…n) that nothing else gives back: deleted, confidence
        tombstone, the kept values only. --no-carve lists the committed versions and history's.
        """,
        arguments: [ArgumentSpec(name: "input", help: "A store file, an app container or .xcappdata folder, a tar or zip archive of one, or a Finder/iTunes backup folder.", repeating: false, optional: false)],
        options: [OptionSpec.value("--format", "-f", valueName: "format", help: "Output format.",
                                   allowed: RecoveryWriter.Format.allCases.map(\.rawValue), default: "text"),
                  CommonOptions.rawCSV,
                  OptionSpec.value("--entity", valueName: "name", help: "Only versions of this entity (its name as Z_PRIMARYKEY has it; case-insensitive)."),
                  OptionSpec.value("--pk", valueName: "n", help: "Only versions of the record with this Z_PK."),
                  OptionSpec.value("--state", valueName: "state", help: "Only versions in this state: live, superseded, deleted, uncommitted or carved (repeatable, or comma-separated).", repeatable: true),
                  OptionSpec.flag("--no-carve", help: "Only the versions the committed states hold: no uncommitted frames, free space, freelist pages, older WAL generation or -journal."),
                  OptionSpec.value("--out", valueName: "file", help: "Write the versions to this new SQLite file (never overwritten): one table per entity with provenance columns; prints a summary.")]
            + [CommonOptions.timeZone] + CommonOptions.input,
        examples: ["storelens recover default.store",
                   "storelens recover default.store --state deleted,superseded",
                   "storelens recover default.store --state carved,uncommitted --format jsonl",
                   "storelens recover default.store --entity Item --pk 3 --format json",
                   "storelens recover App.xcappdata --format csv",
                   "storelens recover default.store --out /tmp/recovered.sqlite"])

    let path: String
    let format: RecoveryWriter.Format
    let rawCSV: Bool
    let out: String?
    let options: Storelens.RecoverOptions
    let input: InputSettings

    init(_ parsed: ParsedArguments) throws(ParseError) {
        path = try parsed.onlyInput()
        format = RecoveryWriter.Format(rawValue: parsed.format) ?? .text
        rawCSV = try CommonOptions.rawCSV(parsed, csv: format == .csv)
        let filter = try RecordRecovery.Filter(parsed)
        out = parsed.value("--out")
        if let out, out.isEmpty || out == "-" { throw .invalid("--out needs a file name (the versions go to stdout without it).") }
        if out != nil, format != .text, format != .json {
            throw .invalid("--out writes the versions to a SQLite file and prints a summary; use --format text or json with it (or drop --out for \(format.rawValue)).")
        }
        input = try InputSettings(parsed)
        options = Storelens.RecoverOptions(input: input.options, filter: filter, carve: !parsed.flag("--no-carve"))
    }

    func run(_ output: Output) throws -> ExitCode {
        try Storelens.reading(input.options) { session in
            if let out {
                let written = try Storelens.recover(path, options, into: out, in: session)
                output.write(format == .json ? RecoveryWriter.json(written).rendered() + "\n" : RecoveryWriter.text(written))
            } else {
                // Streamed: versions are printed as the library hands them out.
                let writer = RecoveryWriter(format: format, rawCSV: rawCSV, write: output.write, writeBytes: output.write(bytes:))
                try writer.write { try Storelens.recover(path, options, in: session, visit: $0) }
            }
        } then: { _, session in
            input.tellKeptScratch(of: session, to: output)
            return .success
        }
    }
}
