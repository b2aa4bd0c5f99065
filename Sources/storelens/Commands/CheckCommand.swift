import Acquisition
import Checks
import Findings
import Foundation
import Operations
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
        options: [CommonOptions.formatWithSARIF,
                  .flag("--full", help: "Run PRAGMA integrity_check instead of the faster quick_check."),
                  .value("--only", valueName: "ids", help: "Run only these checks (comma-separated finding ids)."),
                  CommonOptions.failOn,
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
        paths = try parsed.inputs()
        format = parsed.format
        full = parsed.flag("--full")
        failOn = CommonOptions.failOn(parsed)
        model = parsed.value("--model")
        input = try InputSettings(parsed)
        batch = try BatchSettings.parse(parsed)
        let ids = parsed.list("--only")
        for id in ids ?? [] where StoreChecker.Check(rawValue: id) == nil {
            throw .invalidValue(option: "--only", value: id, allowed: StoreChecker.Check.allCases.map(\.rawValue))
        }
        only = ids.map { Set($0.compactMap(StoreChecker.Check.init(rawValue:))) }
    }

    func run(_ output: Output) throws -> ExitCode {
        let options = Storelens.CheckOptions(input: input.options, full: full, only: only,
                                             xcodeModel: model.map { URL(fileURLWithPath: $0) }, timings: Timings.fromEnvironment)
        if let batch {
            return try Batch.run(command: "check", inputs: paths, settings: batch, input: input, output: output) { path, evidence in
                try evidence.reading { session in
                    let result = try Storelens.check([path], options, in: session)
                    // Batch mode reads one input at a time: a refused store fails that input.
                    if let first = result.refused.first { throw first.error }
                    return result
                } then: { result, _ in
                    BatchOutcome(exitCode: result.findings.any(atOrAbove: failOn) ? .findings : .success,
                                 summary: CheckReport.batchSummary(result), findings: result.findings)
                }
            }
        }
        return try Storelens.reading(input.options) { try Storelens.check(paths, options, in: $0) } then: { result, _ in
            output.write(CheckReport.rendered(result, as: format, command: "check", toolVersion: RootCommand.version, places: SARIFPlaces(inputs: paths)))
            // The other stores were checked; the refused ones are input errors all the same.
            for r in result.refused { output.error("Error: \(r.reason)\n") }
            if !result.refused.isEmpty { return .usageOrInput }
            return result.findings.any(atOrAbove: failOn) ? .findings : .success
        }
    }
}
