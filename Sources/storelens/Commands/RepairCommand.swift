import Acquisition
import Checks
import Coexistence
import Findings
import Foundation
import Operations
import OutputFiles
import Repair
import Reports
import StoreFormats

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
                  .value("--format", "-f", valueName: "format", help: "Output format (json is the repair log).", allowed: ["text", "json"], default: "text"),
                  .value("--log", valueName: "file", help: "Also write the JSON repair log to this new file."),
                  .flag("--in-place", help: "Replace the input store itself (needs --backup)."),
                  .value("--backup", valueName: "dir", help: "With --in-place: copy the whole store family here first and verify the copy."),
                  .value("--model", valueName: "path", help: "An Xcode model for stores without a cached model."),
                  .value("--manifest", "-m", valueName: "file", help: "Repair the migration instead: import legacy records that were never migrated and remove double imports, as the manifest maps them."),
                  .flag("--record-history", help: "With --manifest: record the repair as a history transaction by author storelens-repair.")]
            + CommonOptions.input,
        examples: ["storelens repair default.store --plan", "storelens repair default.store --out fixed.store --log repair.json"])

    let path: String
    let out: String?
    let planOnly: Bool
    let only: Set<String>?
    let keep: KeepRule
    let format: String
    let log: String?
    let inPlace: Bool
    let backup: String?
    let model: String?
    let manifest: String?
    let recordHistory: Bool
    let input: InputSettings

    init(_ parsed: ParsedArguments) throws(ParseError) {
        path = try parsed.onlyInput()
        out = parsed.value("--out")
        planOnly = parsed.flag("--plan")
        keep = KeepRule(rawValue: parsed.value("--keep") ?? "highest-opt") ?? .highestOpt
        format = parsed.format
        log = parsed.value("--log")
        inPlace = parsed.flag("--in-place")
        backup = parsed.value("--backup")
        model = parsed.value("--model")
        manifest = parsed.value("--manifest")
        recordHistory = parsed.flag("--record-history")
        input = try InputSettings(parsed)
        if let list = parsed.value("--only") {
            let ids = Set(list.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
            for id in ids where StoreChecker.Check(rawValue: id) == nil {
                throw .invalidValue(option: "--only", value: id, allowed: StoreChecker.Check.allCases.map(\.rawValue))
            }
            only = ids
        } else {
            only = nil
        }
        if inPlace && backup == nil { throw .invalid("--in-place needs --backup DIR: the whole store family is copied there and verified first.") }
        if inPlace && out != nil { throw .invalid("Give either --out or --in-place, not both.") }
        if !planOnly && !inPlace && out == nil { throw .invalid("Missing '--out <file>': repair writes a new file (or use --plan to see the plan).") }
    }

    /// Every file this run will write is checked before any work starts, so a run that would fail
    /// to write its log fails before it makes anything (and never after the store was written).
    func validateOutputs() throws {
        var named: [(option: String, path: String)] = []
        if !planOnly, !inPlace, let out { named.append(("--out", out)) }
        if let log { named.append(("--log", log)) }
        for (option, path) in named {
            let url = URL(fileURLWithPath: path)
            var st = stat()
            if lstat(url.path, &st) == 0 {
                if option == "--out" { throw RepairError.outputExists(path: url.path) }
                throw InputError(message: "\(path) already exists; give \(option) a new file name (repair never overwrites).")
            }
            var isDir: ObjCBool = false
            guard FileManager.default.fileExists(atPath: url.deletingLastPathComponent().path, isDirectory: &isDir), isDir.boolValue else {
                throw InputError(message: "the folder for \(path) does not exist; create it or choose another \(option).")
            }
        }
        if inPlace, let backup {
            var isDir: ObjCBool = false
            guard FileManager.default.fileExists(atPath: backup, isDirectory: &isDir), isDir.boolValue else {
                throw RepairError.backupFailed(path: backup, detail: "no such folder")
            }
        }
        if named.count == 2, URL(fileURLWithPath: named[0].path).standardizedFileURL == URL(fileURLWithPath: named[1].path).standardizedFileURL {
            throw InputError(message: "--out and --log name the same file; give each its own.")
        }
    }

    func run(_ output: Output) throws -> ExitCode {
        try validateOutputs()
        return try input.makeSession().reading { session in
            let mode: Storelens.RepairOptions.Mode = planOnly ? .plan : inPlace ? .inPlace(backup: URL(fileURLWithPath: backup ?? ""))
                                                                                 : .newFile(URL(fileURLWithPath: out ?? ""))
            let options = Storelens.RepairOptions(mode: mode, input: input.options, keep: keep, only: only,
                                                  xcodeModel: model.map { URL(fileURLWithPath: $0) },
                                                  manifestPath: manifest, recordHistory: recordHistory)
            let outcome = try Storelens.repair(path, options, in: session)
            // In place, the input was proven unchanged up to the swap, which changed it on purpose.
            if !(inPlace && outcome.written) { try session.finish() }
            let hashes = session.ledger.entries.map { ($0.path, $0.sha256) }
            let logText = RepairReport.json(outcome, inputHashes: hashes).rendered() + "\n"
            if let log { try OutputFile.create(logText, at: log) }
            output.write(format == "json" ? logText : RepairReport.text(outcome, planOnly: planOnly))
            return .success
        }
    }
}
