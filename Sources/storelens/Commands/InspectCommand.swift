import Acquisition
import CoreDataStore
import Foundation
import Operations
import Reports
import WALForensics

/// `storelens inspect PATH`: what is in a store, in both views (WAL applied, main file only).
struct InspectCommand: Command {
    static let configuration = CommandConfiguration(
        name: "inspect",
        abstract: "Show what a store holds: metadata, entities, row counts with and without the WAL, history.",
        discussion: """
        The store's -wal, -shm and -journal are found beside it. storelens reads them in place through a
        read-only file layer of its own (nothing is written, no -shm is made; --copy reads a private
        copy instead); the originals are hashed before and after, and a change is an error.
        """,
        arguments: [ArgumentSpec(name: "input", help: "A store file, an app container or .xcappdata folder, a tar or zip archive of one, or a Finder/iTunes backup folder.", repeating: true, optional: false)],
        options: [CommonOptions.formatWithMarkdown,
                  .value("--as-of", valueName: "commit", help: "Show the store as it stood after WAL commit N (0: the main file alone).")]
            + [CommonOptions.timeZone] + CommonOptions.input + BatchOptions.all,
        examples: ["storelens inspect ~/Pulled/AppData/Library/Application\\ Support/default.store",
                   "storelens inspect Model.sqlite --format json",
                   "storelens inspect tickets/*.tar.gz --jsonl inspect.jsonl --jobs 2"])

    let paths: [String]
    let format: String
    let input: InputSettings
    let asOf: Int?
    let batch: BatchSettings?

    init(_ parsed: ParsedArguments) throws(ParseError) {
        paths = try parsed.inputs()
        format = parsed.format
        input = try InputSettings(parsed)
        if let text = parsed.value("--as-of") {
            guard let n = Int(text), n >= 0 else { throw .invalid("The value '\(text)' is invalid for '--as-of'; give a commit number (0 for the main file alone).") }
            asOf = n
        } else {
            asOf = nil
        }
        batch = try BatchSettings.parse(parsed)
    }

    func run(_ output: Output) throws -> ExitCode {
        let options = Storelens.InspectOptions(input: input.options, asOfCommit: asOf)
        if let batch {
            return try Batch.run(command: "inspect", inputs: paths, settings: batch, input: input, output: output) { path, evidence in
                try evidence.reading { session in
                    let result = try Storelens.inspect([path], options, in: session)
                    // Batch mode reads one input at a time: a refused store fails that input.
                    if let first = result.refused.first { throw first.error }
                    return result
                } then: { result, _ in
                    BatchOutcome(exitCode: .success, summary: InspectionReport.batchSummary(result.inspections, atomic: result.atomicStores))
                }
            }
        }
        return try Storelens.reading(input.options) { try Storelens.inspect(paths, options, in: $0) } then: { result, session in
            output.write(InspectionReport.rendered(result, as: format))
            input.tellKeptScratch(of: session, to: output)
            // The other stores were read; the refused ones are input errors all the same.
            for r in result.refused { output.error("Error: \(r.reason)\n") }
            return result.refused.isEmpty ? .success : .usageOrInput
        }
    }
}
