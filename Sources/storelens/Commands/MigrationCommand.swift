import Acquisition
import CoreDataStore
import Findings
import Foundation
import ModelReview
import Operations
import Reports

/// `storelens migration OLD… --to NEW`: each model version among the old stores, migrated to
/// the new model, change by change, checked against the old stores' rows.
struct MigrationCommand: Command {
    static let configuration = CommandConfiguration(
        name: "migration",
        abstract: "Before a release: will the migration from the stores users have to the new model work? Every change classified, checked against the stores' data.",
        discussion: """
        One hop per model version found among the old stores (by their version hashes and
        identifiers). Each change between a hop's model and the target is classified as
        lightweight, needing a custom stage, or losing data, by the rules of docs/migration.md,
        and checked against the old stores' rows: rows a new non-optional property would leave
        empty, duplicates a new unique constraint would reject (with their keys), values a type
        change cannot convert. Exits 1 when a hop would fail or lose data.
        """,
        arguments: [ArgumentSpec(name: "old", help: "Stores as users have them: store files, containers, .xcappdata, archives or backups.", repeating: true, optional: false)],
        options: [.value("--to", valueName: "model", help: "The target: an Xcode model (.xcdatamodeld), a compiled model (.momd/.mom from an app bundle), or a store whose cached model is the target."),
                  .value("--model", valueName: "path", help: "The Xcode model the old stores were written with, for stores without a cached model."),
                  CommonOptions.formatWithSARIF]
            + CommonOptions.input,
        examples: ["storelens migration v1/default.store v2/default.store --to MyApp.app/MyModel.momd",
                   "storelens migration users/ --to new.store --format markdown"])

    let paths: [String]
    let target: String
    let oldModel: String?
    let format: String
    let input: InputSettings

    init(_ parsed: ParsedArguments) throws(ParseError) {
        guard !parsed.positionals.isEmpty else { throw .missingArgument("old") }
        guard let to = parsed.value("--to") else { throw .invalid("Missing '--to <model>': migration needs the model the stores migrate to (an .xcdatamodeld, a .momd, or a newer store).") }
        paths = parsed.positionals
        target = to
        oldModel = parsed.value("--model")
        format = parsed.format
        input = try InputSettings(parsed)
    }

    func run(_ output: Output) throws -> ExitCode {
        let options = Storelens.MigrationOptions(input: input.options, oldModel: oldModel.map { URL(fileURLWithPath: $0) })
        return try Storelens.reading(input.options) { session in
            let result = try Storelens.migration(paths, to: target, options, in: session)
            for note in result.notes { output.error("Note: \(note)\n") }
            return result
        } then: { result, session in
            output.write(MigrationReport.rendered(result.plan, as: format, command: "migration", toolVersion: RootCommand.version, places: SARIFPlaces(inputs: paths)))
            input.tellKeptScratch(of: session, to: output)
            return result.plan.failsOrLosesData ? .findings : .success
        }
    }
}
