import Foundation
import Reports

/// What the hostile corpus runs on an item: every command, in every output format and mode it
/// has, on the whole input and (for an input that holds several stores) on each store chosen with
/// `--store`. Outputs go to `outputs`, never beside the input; each run names the files it may
/// leave there, and any other file there is an escape.
enum CommandPlan {
    /// One way of running a command.
    struct Run {
        /// e.g. "wal --diff", for messages.
        let label: String
        let arguments: [String]
        /// Names of the files in `outputs` this run may create.
        let outputs: [String]
    }

    /// A command and its runs: `main` first (the default format); `more` are its other formats and
    /// modes, run when `main` gave a result (exit 0 or 1). When `main` is refused (exit 2) the
    /// refusal came before any output was chosen, so only the first of `more` (JSON) runs, to show
    /// the machine format is refused the same way.
    struct Command {
        let name: String
        /// Reads one store: on an input with several it needs `--store`.
        let singleStore: Bool
        let main: Run
        let more: [Run]
    }

    /// Every subcommand of storelens the corpus runs; `report` included, it is not optional. A test
    /// holds this list, with `coveredElsewhere`, against `storelens --help`.
    static let commands: Set<String> = ["scan", "inspect", "schema", "rows", "history", "wal", "recover", "export", "timeline", "audit", "check", "repair", "report", "merge"]

    /// Commands that another suite runs on every corpus item with the same expectations (no crash,
    /// no hang, exit 2 as one line naming the input, TMPDIR empty, the input unchanged), and why
    /// they are not run twice.
    static let coveredElsewhere: [String: String] = [
        "lint": "ModelReviewHostileTests runs lint on every item",
        "migration": "ModelReviewHostileTests runs migration on every item, as the old store and as the target",
    ]

    /// A family's formats but the default one (which `main` runs): a format added to the family
    /// is run on every item without a line here.
    static func otherFormats(_ names: [String]) -> [String] { names.filter { $0 != TextFormat.name } }

    /// The commands that read the whole input (several stores at once).
    static func wholeInput(input: String, manifest: URL, outputs: URL) -> [Command] {
        let out = { (name: String) in outputs.appendingPathComponent(name).path }
        return [
            Command(name: "scan", singleStore: false, main: Run(label: "scan", arguments: ["scan", input], outputs: []),
                    more: otherFormats(DocumentFormats.names).map { Run(label: "scan --format \($0)", arguments: ["scan", input, "--format", $0], outputs: []) }
                        + [Run(label: "scan --evidence", arguments: ["scan", input, "--evidence", out("evidence.json")], outputs: ["evidence.json"])]),
            Command(name: "audit", singleStore: false,
                    main: Run(label: "audit", arguments: ["audit", input, "--manifest", manifest.path], outputs: []),
                    more: otherFormats(FindingsFormats.names).map {
                        Run(label: "audit --format \($0)", arguments: ["audit", input, "--manifest", manifest.path, "--format", $0], outputs: [])
                    }),
            Command(name: "report", singleStore: false,
                    main: Run(label: "report --out", arguments: ["report", input, "--out", out("report.html")], outputs: ["report.html"]),
                    more: [Run(label: "report --manifest --out -", arguments: ["report", input, "--manifest", manifest.path, "--out", "-"], outputs: [])]),
            // merge reads batch results, not stores: on a store, an archive or a folder it must refuse, in one line.
            Command(name: "merge", singleStore: false, main: Run(label: "merge", arguments: ["merge", input], outputs: []),
                    more: [Run(label: "merge --format json --out", arguments: ["merge", input, "--format", "json", "--out", out("merged.jsonl")], outputs: ["merged.jsonl"])]),
        ]
    }

    /// The commands that read one store (`store`: the `--store` value, when the input holds several).
    /// inspect, wal and check read every store of an input, so they run on the whole input too.
    static func perStore(input: String, store: String?, outputs: URL, entity: String = "TodoItem") -> [Command] {
        let out = { (name: String) in outputs.appendingPathComponent(name).path }
        let select = store.map { ["--store", $0] } ?? []
        func formats(_ command: String, _ base: [String], _ names: [String], singleStore: Bool) -> Command {
            Command(name: command, singleStore: singleStore, main: Run(label: command, arguments: base + select, outputs: []),
                    more: names.map { Run(label: "\(command) --format \($0)", arguments: base + ["--format", $0] + select, outputs: []) })
        }
        return [
            formats("inspect", ["inspect", input], otherFormats(DocumentFormats.names), singleStore: false),
            formats("schema", ["schema", input], otherFormats(PlainFormats.names), singleStore: true),
            formats("rows", ["rows", input, entity, "--limit", "50"], ["json", "jsonl", "csv"], singleStore: true),
            Command(name: "history", singleStore: true, main: Run(label: "history", arguments: ["history", input] + select, outputs: []),
                    more: [Run(label: "history --format json", arguments: ["history", input, "--format", "json"] + select, outputs: []),
                           Run(label: "history --summary", arguments: ["history", input, "--summary"] + select, outputs: []),
                           Run(label: "history --format jsonl", arguments: ["history", input, "--format", "jsonl"] + select, outputs: []),
                           Run(label: "history --format csv --tz", arguments: ["history", input, "--format", "csv", "--tz", "Asia/Kolkata"] + select, outputs: [])]),
            Command(name: "wal", singleStore: false, main: Run(label: "wal", arguments: ["wal", input] + select, outputs: []),
                    more: [Run(label: "wal --format json", arguments: ["wal", input, "--format", "json"] + select, outputs: []),
                           Run(label: "wal --format markdown", arguments: ["wal", input, "--format", "markdown"] + select, outputs: []),
                           Run(label: "wal --diff", arguments: ["wal", input, "--diff"] + select, outputs: []),
                           Run(label: "wal --diff --each --format jsonl", arguments: ["wal", input, "--diff", "--each", "--format", "jsonl"] + select, outputs: []),
                           // The first commit: a point in time before the last one, so the cut is real.
                           Run(label: "wal --as-of 1 --out", arguments: ["wal", input, "--as-of", "1", "--out", out("as-of.sqlite")] + select,
                               outputs: ["as-of.sqlite"])]),
            formats("check", ["check", input], otherFormats(FindingsFormats.names), singleStore: false),
            Command(name: "recover", singleStore: false, main: Run(label: "recover", arguments: ["recover", input] + select, outputs: []),
                    more: [Run(label: "recover --format json", arguments: ["recover", input, "--format", "json"] + select, outputs: []),
                           Run(label: "recover --format csv", arguments: ["recover", input, "--format", "csv"] + select, outputs: []),
                           Run(label: "recover --format jsonl", arguments: ["recover", input, "--format", "jsonl"] + select, outputs: []),
                           Run(label: "recover --out", arguments: ["recover", input, "--out", out("recovered.sqlite")] + select,
                               outputs: ["recovered.sqlite"])]),
            Command(name: "export", singleStore: true,
                    main: Run(label: "export --out", arguments: ["export", input, "--out", out("export.sqlite")] + select, outputs: ["export.sqlite"]),
                    more: [Run(label: "export --format json --out", arguments: ["export", input, "--format", "json", "--out", out("export-2.sqlite")] + select,
                               outputs: ["export-2.sqlite"])]),
            Command(name: "timeline", singleStore: false, main: Run(label: "timeline", arguments: ["timeline", input] + select, outputs: []),
                    more: [Run(label: "timeline --format jsonl", arguments: ["timeline", input, "--format", "jsonl"] + select, outputs: []),
                           Run(label: "timeline --tz", arguments: ["timeline", input, "--tz", "America/St_Johns"] + select, outputs: [])]),
            Command(name: "repair", singleStore: true,
                    main: Run(label: "repair --out", arguments: ["repair", input, "--out", out("repaired.store")] + select, outputs: ["repaired.store"]),
                    // The plan in JSON (the repair log's shape) without a second full repair.
                    more: [Run(label: "repair --plan --format json", arguments: ["repair", input, "--plan", "--format", "json"] + select, outputs: [])]),
        ]
    }
}
