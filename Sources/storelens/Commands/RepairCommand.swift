import Acquisition
import Checks
import Coexistence
import Findings
import Foundation
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
        guard let first = parsed.positionals.first else { throw .missingArgument("input") }
        guard parsed.positionals.count == 1 else { throw .unexpectedArgument(parsed.positionals[1]) }
        path = first
        out = parsed.value("--out")
        planOnly = parsed.flag("--plan")
        keep = KeepRule(rawValue: parsed.value("--keep") ?? "highest-opt") ?? .highestOpt
        format = parsed.value("--format") ?? "text"
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
        let session = try input.makeSession()
        defer { session.scratch.remove() }
        let store: AcquiredStore
        var migrationPlan: RepairPlan?
        if let manifest {
            try session.record([URL(fileURLWithPath: manifest)])
            var auditor = Auditor(manifest: try Manifest.load(path: manifest), session: session)
            auditor.openOptions = input.open
            auditor.limits = input.limits
            let migration = try auditor.migrationRepair(inputs: [path], select: input.select, recordHistory: recordHistory)
            store = migration.store
            migrationPlan = migration.plan
        } else {
            store = try input.singleStore(path, in: session)
        }
        var repairer = Repairer(session: session, store: store)
        repairer.givenPlan = migrationPlan
        repairer.keep = keep
        repairer.only = only
        repairer.xcodeModel = model.map { URL(fileURLWithPath: $0) }

        let outcome: RepairOutcome
        if planOnly {
            let (plan, findings) = try repairer.plan()
            outcome = RepairOutcome(input: store.displayPath, plan: plan, findings: findings, written: false, output: nil, outputSHA256: nil,
                                    changes: [], tablesBefore: [:], tablesAfter: [:], remaining: findings)
        } else if inPlace, let backup {
            outcome = try InPlace.repair(repairer, store: store, backup: URL(fileURLWithPath: backup), session: session)
        } else {
            outcome = try repairer.run(output: URL(fileURLWithPath: out ?? ""))
        }
        // In place, the input was proven unchanged up to the swap, which changed it on purpose.
        if !(inPlace && outcome.written) { try session.finish() }
        let hashes = session.ledger.entries.map { ($0.path, $0.sha256) }
        let logText = RepairReport.json(outcome, inputHashes: hashes).rendered() + "\n"
        if let log { try EvidenceFile.create(logText, at: log) }
        output.write(format == "json" ? logText : RepairReport.text(outcome, planOnly: planOnly))
        return .success
    }
}

/// `--in-place --backup DIR`: the family is copied to DIR and verified, the repaired store is
/// made beside the original, then swapped in; the original's -wal is kept under another name
/// until the swap is done, so no moment pairs the new main file with the old WAL.
enum InPlace {
    static func repair(_ repairer: Repairer, store: AcquiredStore, backup: URL, session: EvidenceSession) throws -> RepairOutcome {
        let family = store.found.family
        var isDir: ObjCBool = false
        guard FileManager.default.fileExists(atPath: backup.path, isDirectory: &isDir), isDir.boolValue else {
            throw RepairError.backupFailed(path: backup.path, detail: "no such folder")
        }
        guard family.main.path == store.displayPath || FileManager.default.fileExists(atPath: store.displayPath) else {
            throw InputError(message: "--in-place works only on a store file on disk, not on a store inside an archive or backup.")
        }
        for file in [family.main, family.wal, family.shm, family.journal].compactMap({ $0 }) {
            let target = backup.appendingPathComponent(file.lastPathComponent)
            do {
                try FileManager.default.copyItem(at: file, to: target)
            } catch {
                throw RepairError.backupFailed(path: target.path, detail: error.localizedDescription)
            }
            guard try SHA256.hexOfFile(at: file) == SHA256.hexOfFile(at: target) else {
                throw RepairError.backupFailed(path: target.path, detail: "the copy does not hash like the original")
            }
        }
        let staged = family.main.deletingLastPathComponent().appendingPathComponent(".\(family.main.lastPathComponent).storelens-repaired")
        try? FileManager.default.removeItem(at: staged)
        // The staged store lies beside the evidence: until it is renamed over the store, an error
        // or Ctrl-C removes it, as the temporary file of an --out repair.
        guard ScratchRegistry.shared.track(file: staged.path) else {
            throw RepairError.failed(path: store.displayPath, detail: "interrupted")
        }
        var swapped = false
        defer {
            if !swapped { unlink(staged.path) }
            ScratchRegistry.shared.untrack(file: staged.path)
        }
        var repairer = repairer
        repairer.copySupportFolder = false
        let outcome = try repairer.run(output: staged)
        guard outcome.written else { return outcome }
        try session.ledger.verifyUnchanged()
        // The window (docs/repair.md): from hiding the -wal until the rename below, a reader of
        // the store sees the old main file without the -wal's commits. Two files cannot be swapped
        // in one step; the verified backup is the recovery path if the process dies here.
        if let wal = family.wal { _ = rename(wal.path, wal.path + ".storelens-old") }
        if let shm = family.shm { unlink(shm.path) }
        TestPause.reach("in-place-swap")
        guard rename(staged.path, family.main.path) == 0 else {
            let code = errno
            // Not swapped: the store gets its -wal back (SQLite rebuilds the -shm).
            if let wal = family.wal { _ = rename(wal.path + ".storelens-old", wal.path) }
            throw RepairError.failed(path: family.main.path, detail: String(cString: strerror(code)))
        }
        swapped = true
        ScratchRegistry.shared.untrack(file: staged.path)
        if let wal = family.wal { unlink(wal.path + ".storelens-old") }
        return RepairOutcome(input: outcome.input, plan: outcome.plan, findings: outcome.findings, written: true, output: family.main.path,
                             outputSHA256: outcome.outputSHA256, changes: outcome.changes, tablesBefore: outcome.tablesBefore,
                             tablesAfter: outcome.tablesAfter, remaining: outcome.remaining)
    }
}
