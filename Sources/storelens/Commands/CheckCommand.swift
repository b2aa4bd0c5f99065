import Acquisition
import Checks
import CoreDataStore
import Findings
import Foundation
import Reports
import StoreFormats

/// `storelens check INPUT`: SQLite's own check, then Core Data's invariants.
struct CheckCommand: Command {
    static let configuration = CommandConfiguration(
        name: "check",
        abstract: "Check a store's integrity: SQLite's quick_check, then Core Data's own invariants (Z_MAX, relationships, uniqueness, history …).",
        discussion: """
        PRAGMA integrity_check says "ok" on a store whose Z_MAX lags behind its largest primary key or
        whose relationships point at rows that no longer exist: Core Data declares no foreign keys.
        Each invariant is a named check with its own finding id (docs/check.md).
        """,
        arguments: [ArgumentSpec(name: "input", help: "A store file, container, .xcappdata, archive or backup.", repeating: true, optional: false)],
        options: [.value("--format", "-f", valueName: "format", help: "Output format.", allowed: ["text", "json", "markdown"], default: "text"),
                  .flag("--full", help: "Run PRAGMA integrity_check instead of the faster quick_check."),
                  .value("--only", valueName: "ids", help: "Run only these checks (comma-separated finding ids)."),
                  .value("--fail-on", valueName: "severity", help: "Exit with 1 when a finding is at least this severe.", allowed: ["error", "warning", "info"], default: "error"),
                  .value("--model", valueName: "path", help: "An Xcode model (.xcdatamodeld or .xcdatamodel) for stores without a cached model.")]
            + CommonOptions.input + BatchOptions.all,
        examples: ["storelens check default.store", "storelens check Todo.xcappdata --format json --fail-on warning",
                   "storelens check tickets/ --each --jsonl check.jsonl --jobs 2 --resume"])

    let paths: [String]
    let format: String
    let full: Bool
    let only: Set<StoreChecker.Check>?
    let failOn: Finding.Severity
    let model: String?
    let input: InputSettings
    let batch: BatchSettings?

    init(_ parsed: ParsedArguments) throws(ParseError) {
        guard !parsed.positionals.isEmpty else { throw .missingArgument("input") }
        paths = parsed.positionals
        format = parsed.value("--format") ?? "text"
        full = parsed.flag("--full")
        failOn = Finding.Severity(rawValue: parsed.value("--fail-on") ?? "error") ?? .error
        model = parsed.value("--model")
        input = try InputSettings(parsed)
        batch = try BatchSettings.parse(parsed)
        if let list = parsed.value("--only") {
            var checks = Set<StoreChecker.Check>()
            for id in list.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) {
                guard let check = StoreChecker.Check(rawValue: id) else {
                    throw .invalidValue(option: "--only", value: id, allowed: StoreChecker.Check.allCases.map(\.rawValue))
                }
                checks.insert(check)
            }
            only = checks
        } else {
            only = nil
        }
    }

    func run(_ output: Output) throws -> ExitCode {
        if let batch {
            return try Batch.run(command: "check", inputs: paths, settings: batch, output: output) { path, context in
                let session = try input.makeSession()
                defer { session.scratch.remove() }
                context.hashInput(path, in: session)
                let (findings, stores) = try check([path], session: session, output: output)
                try session.finish()
                let summary = JSONValue.object(Finding.Severity.allCases.reversed().map { severity in
                    (severity.rawValue, JSONValue.int(findings.filter { $0.severity == severity }.count))
                } + [("stores", .array(stores.map(JSONValue.string)))])
                return BatchOutcome(exitCode: findings.any(atOrAbove: failOn) ? .findings : .success, summary: summary,
                                    findings: findings.bySeverity)
            }
        }
        let session = try input.makeSession()
        defer { session.scratch.remove() }
        var refused: [RefusedStore] = []
        let (unsorted, stores) = try check(paths, session: session, output: output, refused: &refused)
        try session.finish()
        let findings = unsorted.bySeverity
        switch format {
        case "json":
            output.write(JSONValue.object([
                ("schemaVersion", .int(InspectionReport.schemaVersion)),
                ("stores", .array(stores.map(JSONValue.string))),
                // check-not-run is what a check that could not finish reports, not a check of its own.
                ("checks", .array((only.map { Array($0) } ?? StoreChecker.Check.allCases).filter { $0 != .checkNotRun }
                    .map { .string($0.rawValue) }.sorted { $0.rendered() < $1.rendered() })),
                ("findings", .array(findings.map(FindingsReport.json))),
            ] + (refused.isEmpty ? [] : [("refused", .array(refused.map { .object([("path", .string($0.path)), ("reason", .string($0.reason))]) }))]))
                .rendered() + "\n")
        case "markdown":
            output.write("## storelens check of \(stores.map { "`\(Markdown.code($0))`" }.joined(separator: ", "))\n\n" + FindingsReport.markdown(findings))
        default:
            for s in stores { output.write("\(TextTable.sanitized(s))\n") }
            output.write(FindingsReport.text(findings))
        }
        // The other stores were checked; the refused ones are input errors all the same.
        for r in refused { output.error("Error: \(r.reason)\n") }
        if !refused.isEmpty { return .usageOrInput }
        return findings.any(atOrAbove: failOn) ? .findings : .success
    }

    /// Every check on every store of `paths`: the findings and the stores' display paths.
    func check(_ paths: [String], session: EvidenceSession, output: Output) throws -> ([Finding], [String]) {
        // Batch mode reads one input at a time: a refused store fails that input, as before.
        var refused: [RefusedStore] = []
        let result = try check(paths, session: session, output: output, refused: &refused)
        if let first = refused.first { throw first.error }
        return result
    }

    func check(_ paths: [String], session: EvidenceSession, output: Output, refused: inout [RefusedStore]) throws -> ([Finding], [String]) {
        var open = input.open
        open.ignoreMismatchedWAL = true
        var findings: [Finding] = []
        var stores: [String] = []
        let acquired = try session.stores(from: paths, select: input.select, options: open, limits: input.limits, refused: &refused)
        // Every original has been read into its working copy; `stores(from:)` has started hashing
        // them again beside the checks.
        findings += session.damagedInputs.map { damaged in
            Finding(id: "archive-damaged", severity: .error, store: damaged.input,
                    message: "The archive is damaged and was read as asked (--read-damaged).",
                    evidence: ["damage": .string(damaged.detail)],
                    explanation: "A damaged archive can hold an older state (a -wal cut short shows fewer commits) or corrupt bytes; every result below is about what it still holds.",
                    suggestion: "Copy the archive off the device again.")
        }
        for store in acquired {
            let opened: OpenedStore
            do {
                opened = try OpenedStore.open(store.copy, displayPath: store.displayPath, xcodeModel: model.map { URL(fileURLWithPath: $0) })
            } catch ModelError.notCoreData {
                // A plain SQLite database (an iOS backup's Manifest.db): SQLite's own check applies,
                // Core Data's invariants do not. Saying so is information, not a failure.
                findings += try StoreChecker.plainSQLite(store.copy, displayPath: store.displayPath, full: full)
                stores.append(store.displayPath)
                continue
            }
            var checker = StoreChecker(opened: opened, copy: store.copy)
            checker.full = full
            let clock = ContinuousClock()
            var found: [Finding] = []
            let took = try clock.measure { found = try checker.run(only: only) }
            findings += found
            if ProcessInfo.processInfo.environment["STORELENS_TIMINGS"] != nil {
                // For `make bench`: the checks alone, without acquisition and hashing.
                output.error("timing checks-seconds=\(Stopwatch.seconds(of: took))\n")
            }
            stores.append(store.displayPath)
        }
        return (findings, stores)
    }
}
