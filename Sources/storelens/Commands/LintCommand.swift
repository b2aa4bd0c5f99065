import Acquisition
import CoreDataStore
import Findings
import Foundation
import ModelReview
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
                  CommonOptions.formatWithMarkdown,
                  .value("--fail-on", valueName: "severity", help: "Exit with 1 when a finding is at least this severe.", allowed: ["error", "warning", "info"], default: "error")]
            + CommonOptions.input,
        examples: ["storelens lint default.store", "storelens lint --model MyApp.xcdatamodeld --fail-on warning",
                   "storelens lint Todo.xcappdata --format markdown"])

    let paths: [String]
    let model: String?
    let format: String
    let failOn: Finding.Severity
    let input: InputSettings

    init(_ parsed: ParsedArguments) throws(ParseError) {
        paths = parsed.positionals
        model = parsed.value("--model")
        guard !paths.isEmpty || model != nil else { throw .missingArgument("input") }
        format = parsed.value("--format") ?? "text"
        failOn = Finding.Severity(rawValue: parsed.value("--fail-on") ?? "error") ?? .error
        input = try InputSettings(parsed)
    }

    func run(_ output: Output) throws -> ExitCode {
        var subjects: [(String, StoreModel)] = []
        var findings: [[Finding]] = []
        if paths.isEmpty, let model {
            let url = URL(fileURLWithPath: model)
            let read = ["momd", "mom"].contains(url.pathExtension) ? try CompiledModelReader.read(url) : try XcodeModelReader.read(url)
            subjects.append((model, read))
            findings.append(CloudKitLint.lint(model: read, name: model))
        } else {
            let session = try input.makeSession()
            defer { session.scratch.remove() }
            for store in try session.stores(from: paths, select: input.select, options: input.open, limits: input.limits) {
                let found = try ModelOption.reading(store.displayPath) { () throws -> [Finding]? in
                    do {
                        let opened = try OpenedStore.open(store.copy, displayPath: store.displayPath, xcodeModel: model.map { URL(fileURLWithPath: $0) })
                        subjects.append((store.displayPath, opened.model))
                        return try CloudKitLint.lint(opened)
                    } catch ModelError.notCoreData {
                        // A plain SQLite database beside the stores (a backup's Manifest.db) has no model to lint.
                        output.error("Note: \(store.displayPath) is plain SQLite, not a Core Data store; it has no model to lint.\n")
                        return nil
                    }
                }
                if let found { findings.append(found) }
            }
            try session.finish()
            if input.keepScratch { output.error("Working copies kept in \(session.scratch.url.path)\n") }
        }
        let all = findings.flatMap { $0 }
        switch format {
        case "json": output.write(LintReport.json(subjects: subjects, findings: all).rendered() + "\n")
        case "markdown": output.write(LintReport.markdown(subjects: subjects.map(\.0), findings: all))
        default:
            output.write(zip(subjects, findings).map { LintReport.text(subject: $0.0.0, model: $0.0.1, findings: $0.1) }.joined(separator: "\n"))
        }
        return all.any(atOrAbove: failOn) ? .findings : .success
    }
}
