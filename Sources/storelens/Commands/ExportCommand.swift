import Acquisition
import CoreDataStore
import Foundation
import Operations
import OutputFiles
import Reports
import StoreFormats

/// `storelens export INPUT --out FILE`: the store's records decoded into a plain SQLite file.
struct ExportCommand: Command {
    static let configuration = CommandConfiguration(
        name: "export",
        abstract: "Write a store's records, decoded, to a plain SQLite file: a table per entity, link tables, provenance.",
        discussion: """
        One table per entity, named by the entity, with _pk and a column per property (as `rows`
        names them); values decoded: dates as ISO 8601 UTC, UUIDs as text, Booleans 0/1, to-one
        relationships as the target's Z_PK. Many-to-many relationships become link tables. The
        _storelens table says what was exported, from which files (SHA-256 of each as read) and by
        which version. The file opens in sqlite3, datasette or DB Browser without Core Data.
        --out never replaces a file unless --force is given, and never names an input (docs/export.md).
        """,
        arguments: [ArgumentSpec(name: "input", help: "A store file, an app container, an archive or a backup folder.", repeating: false, optional: false)],
        options: [CommonOptions.format,
                  OptionSpec.value("--out", valueName: "file", help: "The SQLite file to write (required)."),
                  OptionSpec.flag("--force", help: "Replace --out if it exists (never an input)."),
                  OptionSpec.flag("--with-external-data", help: "Copy each _EXTERNAL_DATA file's bytes into _storelens_external_data (listed there with size and SHA-256 either way)."),
                  ModelOption.model] + CommonOptions.input,
        examples: ["storelens export default.store --out decoded.sqlite",
                   "storelens export App.xcappdata --store default.store --out decoded.sqlite --force",
                   "datasette decoded.sqlite"])

    let path: String
    let out: String
    let force: Bool
    let withExternalData: Bool
    let format: String
    let modelPath: String?
    let input: InputSettings

    init(_ parsed: ParsedArguments) throws(ParseError) {
        path = try parsed.onlyInput()
        guard let out = parsed.value("--out") else { throw .invalid("export writes a SQLite file; name it with --out FILE.") }
        guard !out.isEmpty, out != "-" else { throw .invalid("--out needs a file name (a SQLite file cannot go to stdout).") }
        self.out = out
        force = parsed.flag("--force")
        withExternalData = parsed.flag("--with-external-data")
        format = parsed.format
        modelPath = parsed.value("--model")
        input = try InputSettings(parsed)
    }

    func run(_ output: Output) throws -> ExitCode {
        let options = Storelens.ExportOptions(output: out, input: input.options, force: force, withExternalData: withExternalData,
                                              xcodeModel: modelPath.map { URL(fileURLWithPath: $0) }, toolVersion: RootCommand.version)
        // The export checks the originals itself, before it writes.
        return try Storelens.reading(input.options) { try Storelens.export(path, options, in: $0) } then: { result, session in
            output.write(ExportReport.rendered(result, as: format))
            input.tellKeptScratch(of: session, to: output)
            return .success
        }
    }
}
