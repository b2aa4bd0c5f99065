import Acquisition
import Coexistence
import Findings
import Foundation
import Operations
import Reports

/// `storelens audit INPUT --manifest FILE`: one writer per entity, and records across stacks.
struct AuditCommand: Command {
    static let configuration = CommandConfiguration(
        name: "audit",
        abstract: "Check a migration against its manifest: who wrote each entity, and whether records match across the legacy and new stores.",
        discussion: """
        The manifest (docs/manifest.md) names the stacks, where each keeps its store, who writes as
        each stack, and for every entity its legacy and current names and its one allowed writer.
        History transactions are attributed to stacks by author, context name, process name and
        bundle id; records are matched across stores by the entity's identity attributes.
        """,
        arguments: [ArgumentSpec(name: "input", help: "An app container, .xcappdata, archive or backup holding the stores the manifest names.", repeating: true, optional: false)],
        options: [.value("--manifest", "-m", valueName: "file", help: "The manifest (storelens.json)."),
                  CommonOptions.formatWithSARIF,
                  CommonOptions.failOn]
            + CommonOptions.input + BatchOptions.all,
        examples: ["storelens audit Todo.xcappdata --manifest storelens.json",
                   "storelens audit container.tar.gz -m storelens.json --format markdown --fail-on warning",
                   "storelens audit tickets/ --each -m storelens.json --jsonl audit.jsonl --jobs 2 --resume"])

    let paths: [String]
    let manifestPath: String
    let format: String
    let failOn: Finding.Severity
    let input: InputSettings
    let batch: BatchSettings?

    init(_ parsed: ParsedArguments) throws(ParseError) {
        paths = try parsed.inputs()
        batch = try BatchSettings.parse(parsed)
        guard let manifest = parsed.value("--manifest") else { throw .invalid("Missing '--manifest <file>': audit needs the manifest that says which stack writes which entity.") }
        manifestPath = manifest
        format = parsed.format
        failOn = CommonOptions.failOn(parsed)
        input = try InputSettings(parsed)
    }

    func run(_ output: Output) throws -> ExitCode {
        let manifest = try Manifest.load(path: manifestPath)
        let options = Storelens.AuditOptions(input: input.options, manifestFile: URL(fileURLWithPath: manifestPath))
        if let batch {
            // Each input is one container audited on its own against the same manifest.
            return try Batch.run(command: "audit", inputs: paths, settings: batch, input: input, output: output) { path, evidence in
                try evidence.reading { try Storelens.audit([path], manifest: manifest, options, in: $0) } then: { result, _ in
                    BatchOutcome(exitCode: result.findings.any(atOrAbove: failOn) ? .findings : .success,
                                 summary: AuditReport.batchSummary(result), findings: result.findings)
                }
            }
        }
        return try Storelens.reading(input.options) { try Storelens.audit(paths, manifest: manifest, options, in: $0) } then: { result, _ in
            output.write(AuditReport.rendered(.init(result, manifest: manifestPath, input: paths.joined(separator: ", ")), as: format, command: "audit",
                                              toolVersion: RootCommand.version, places: SARIFPlaces(inputs: paths)))
            return result.findings.any(atOrAbove: failOn) ? .findings : .success
        }
    }
}
