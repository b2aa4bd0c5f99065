import Acquisition
import CoreDataStore
import Findings
import Foundation
import ModelReview
import Operations
import Reports

/// `storelens lint INPUT|--model M`: is this model ready for CloudKit, and what else the store shows.
struct LintCommand: Command {
    static let configuration = CommandConfiguration(
        name: "lint",
        abstract: "Review a model for CloudKit: unique constraints, non-optional or inverse-less relationships, Deny rules, inline binary data, required attributes without defaults.",
        discussion: """
        Lints each store's model (its cached model, else --model) and what its rows and history
        show, or, with --model and no input, the Xcode or compiled model alone. Each rule is one
        finding id with a severity and the reason (docs/lint.md). Exits 1 when a finding is at
        least as severe as --fail-on.
        """,
        arguments: [ArgumentSpec(name: "input", help: "A store file, container, .xcappdata, archive or backup (optional with --model).", repeating: true, optional: true)],
        options: [.value("--model", valueName: "path", help: "An Xcode model (.xcdatamodeld) or compiled model (.momd/.mom): linted alone, or used for stores without a cached model."),
                  CommonOptions.formatWithSARIF,
                  CommonOptions.failOn]
            + CommonOptions.input,
        examples: ["storelens lint default.store", "storelens lint --model MyApp.xcdatamodeld --fail-on warning",
                   "storelens lint Todo.xcappdata --format markdown", "storelens lint --model MyApp.xcdatamodeld --format sarif > lint.sarif"])

    let paths: [String]
    let model: String?
    let format: String
    let failOn: Finding.Severity
    let input: InputSettings

    init(_ parsed: ParsedArguments) throws(ParseError) {
        paths = parsed.positionals
        model = parsed.value("--model")
        guard !paths.isEmpty || model != nil else { throw .missingArgument("input") }
        format = parsed.format
        failOn = CommonOptions.failOn(parsed)
        input = try InputSettings(parsed)
    }

    func run(_ output: Output) throws -> ExitCode {
        let options = Storelens.LintOptions(input: input.options, model: model)
        let result: Storelens.LintResult
        if paths.isEmpty, let model {
            result = try Storelens.lint(model: model)
        } else {
            result = try Storelens.reading(input.options) { session in
                let linted = try Storelens.lint(paths, options, in: session)
                for note in linted.notes { output.error("Note: \(note)\n") }
                return linted
            } then: { linted, session in
                input.tellKeptScratch(of: session, to: output)
                return linted
            }
        }
        output.write(LintReport.rendered(result, as: format, command: "lint", toolVersion: RootCommand.version, places: SARIFPlaces(inputs: paths)))
        return result.findings.any(atOrAbove: failOn) ? .findings : .success
    }
}
