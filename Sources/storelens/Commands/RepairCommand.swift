import Checks
import Foundation
import Operations
import OutputFiles
import Repair
import Reports

/// `storelens repair INPUT --out FILE`: plan, apply to a copy, verify, then write.
struct RepairCommand: Command {
    static let configuration = CommandConfiguration(
        name: "repair",
        abstract: "Repair what check finds, on a copy: a plan first, one transaction, every check again on the output, then the output is written.",
        discussion: """
        Repairs: raise Z_MAX; set dangling to-one relationships to nil (with their entity keys);
        correct entity keys; make one-to-one pairs agree; delete orphan join rows; resolve
        uniqueness duplicates (--keep); set missing Z_OPT. Every changed row's Z_OPT is bumped;
        Z_ENT is never renumbered; history, Z_METADATA and Z_MODELCACHE are kept. The input is
        never changed unless --in-place --backup DIR is given.
        """,
        arguments: [ArgumentSpec(name: "input", help: "A store file, container, .xcappdata, archive or backup (use --store to pick one store).", repeating: false, optional: false)],
        options: [.value("--out", "-o", valueName: "file", help: "Where to write the repaired store (a new file)."),
                  .flag("--plan", help: "Print the plan and stop; nothing is written."),
                  .value("--only", valueName: "ids", help: "Repair only these findings (comma-separated finding ids)."),
                  .value("--keep", valueName: "rule", help: "Which row of a uniqueness duplicate to keep.", allowed: KeepRule.allCases.map(\.rawValue), default: "highest-opt"),
                  .value("--format", "-f", valueName: "format", help: "Output format (json is the repair log).", allowed: PlainFormats.names, default: TextFormat.name),
                  .value("--log", valueName: "file", help: "Also write the JSON repair log to this new file."),
                  .flag("--in-place", help: "Replace the input store itself (needs --backup)."),
                  .value("--backup", valueName: "dir", help: "With --in-place: copy the whole store family here first and verify the copy."),
                  .value("--model", valueName: "path", help: "An Xcode model for stores without a cached model."),
                  .value("--manifest", "-m", valueName: "file", help: "Repair the migration instead: import legacy records that were never migrated and remove double imports, as the manifest maps them."),
                  .flag("--record-history", help: "With --manifest: record the repair as a history transaction by author storelens-repair.")]
            + CommonOptions.input,
        examples: ["storelens repair default.store --plan", "storelens repair default.store --out fixed.store --log repair.json"])

    let path: String
    let options: Storelens.RepairOptions
    let planOnly: Bool
    let format: String
    let log: String?
    /// `--out` and `--backup` when this run writes them: checked with `--log` before any work.
    let writes: (out: String?, backup: String?)
    let input: InputSettings

    init(_ parsed: ParsedArguments) throws(ParseError) {
        path = try parsed.onlyInput()
        let out = parsed.value("--out"), inPlace = parsed.flag("--in-place"), backup = parsed.value("--backup")
        planOnly = parsed.flag("--plan")
        format = parsed.format
        log = parsed.value("--log")
        input = try InputSettings(parsed)
        let only = parsed.list("--only")
        for id in only ?? [] where StoreChecker.Check(rawValue: id) == nil {
            throw .invalidValue(option: "--only", value: id, allowed: StoreChecker.Check.allCases.map(\.rawValue))
        }
        if inPlace && backup == nil { throw .invalid("--in-place needs --backup DIR: the whole store family is copied there and verified first.") }
        if inPlace && out != nil { throw .invalid("Give either --out or --in-place, not both.") }
        if !planOnly && !inPlace && out == nil { throw .invalid("Missing '--out <file>': repair writes a new file (or use --plan to see the plan).") }
        writes = (planOnly || inPlace ? nil : out, inPlace ? backup : nil)
        let mode: Storelens.RepairOptions.Mode = planOnly ? .plan : inPlace ? .inPlace(backup: URL(fileURLWithPath: backup ?? "")) : .newFile(URL(fileURLWithPath: out ?? ""))
        options = Storelens.RepairOptions(mode: mode, input: input.options, keep: KeepRule(rawValue: parsed.value("--keep") ?? "highest-opt") ?? .highestOpt,
                                          only: only.map { Set($0) }, xcodeModel: parsed.value("--model").map { URL(fileURLWithPath: $0) },
                                          manifestPath: parsed.value("--manifest"), recordHistory: parsed.flag("--record-history"))
    }

    func run(_ output: Output) throws -> ExitCode {
        try Storelens.checkRepairOutputs(out: writes.out, log: log, backup: writes.backup)
        // In place, the originals are checked up to the swap, which changes them on purpose: not after it.
        return try Storelens.reading(input.options) { try Storelens.repair(path, options, in: $0) } then: { outcome, session in
            let logText = RepairReport.json(outcome, inputHashes: session.ledger.entries.map { ($0.path, $0.sha256) }).rendered() + "\n"
            if let log { try OutputFile.create(logText, at: log) }
            output.write(format == "json" ? logText : RepairReport.text(outcome, planOnly: planOnly))
            return .success
        }
    }
}
