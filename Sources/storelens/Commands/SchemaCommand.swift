import Acquisition
import CoreDataStore
import Foundation
import Operations
import Reports
import SQLiteAccess

/// `storelens schema INPUT`: the model (cached, --model or inferred) and where it lives in SQL.
struct SchemaCommand: Command {
    static let configuration = CommandConfiguration(
        name: "schema",
        abstract: "Show the store's model and its SQL map: entities, legacy and class names, attributes, relationships, constraints.",
        discussion: """
        The model comes from the store's own Z_MODELCACHE when it has one; otherwise from the Xcode
        model given with --model (.xcdatamodeld or .xcdatamodel); otherwise it is inferred from the
        SQL schema and marked as such. Given both a cache and --model, the cache is used and every
        difference is listed. Every column of every entity table is mapped or reported as unknown.
        """,
        arguments: [ArgumentSpec(name: "input", help: "A store file, an app container or .xcappdata folder, a tar or zip archive of one, or a backup folder.", repeating: false, optional: false)],
        options: [CommonOptions.format, ModelOption.model] + CommonOptions.input,
        examples: ["storelens schema default.store",
                   "storelens schema Model.sqlite --model Model.xcdatamodeld --format json"])

    let path: String
    let format: String
    let modelPath: String?
    let input: InputSettings

    init(_ parsed: ParsedArguments) throws(ParseError) {
        path = try parsed.onlyInput()
        format = parsed.format
        modelPath = parsed.value("--model")
        input = try InputSettings(parsed)
    }

    func run(_ output: Output) throws -> ExitCode {
        let options = Storelens.SchemaOptions(input: input.options, xcodeModel: modelPath.map { URL(fileURLWithPath: $0) })
        return try Storelens.reading(input.options) { try Storelens.schema(path, options, in: $0) } then: { schema, session in
            output.write(SchemaReport.rendered(schema, as: format))
            input.tellKeptScratch(of: session, to: output)
            return .success
        }
    }
}

/// `--model`, shared by schema, rows and history.
enum ModelOption {
    static let model = OptionSpec.value("--model", valueName: "path",
                                        help: "An Xcode model (.xcdatamodeld, .xcdatamodel or its contents file), used when the store has no cached model and compared with the cache when it has one.")
}
