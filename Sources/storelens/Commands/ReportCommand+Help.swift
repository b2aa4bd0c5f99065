/// `report`'s help: what it writes, its options and examples.
extension ReportCommand {
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
}
