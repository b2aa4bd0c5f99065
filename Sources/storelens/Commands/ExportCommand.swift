import Acquisition
import CoreDataStore
import Foundation
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
    let json: Bool
    let modelPath: String?
    let input: InputSettings

    init(_ parsed: ParsedArguments) throws(ParseError) {
        guard let first = parsed.positionals.first else { throw .missingArgument("input") }
        guard parsed.positionals.count == 1 else { throw .unexpectedArgument(parsed.positionals[1]) }
        path = first
        guard let out = parsed.value("--out") else { throw .invalid("export writes a SQLite file; name it with --out FILE.") }
        guard !out.isEmpty, out != "-" else { throw .invalid("--out needs a file name (a SQLite file cannot go to stdout).") }
        self.out = out
        force = parsed.flag("--force")
        withExternalData = parsed.flag("--with-external-data")
        json = parsed.value("--format") == "json"
        modelPath = parsed.value("--model")
        input = try InputSettings(parsed)
    }

    func run(_ output: Output) throws -> ExitCode {
        // Before any work: an existing --out without --force is refused at once.
        try ReportFile.checkWritable(out, force: force)
        let session = try input.makeSession()
        defer { session.scratch.remove() }
        let displayPath: String
        let modelSource: String
        let writeExport: (String, [(String, String)]) throws -> DecodedExport.Summary
        switch try input.singleStoreOrAtomic(path, in: session) {
        case .sqlite(let acquired):
            let opened = try OpenedStore.open(acquired.copy, displayPath: acquired.displayPath,
                                              xcodeModel: modelPath.map { URL(fileURLWithPath: $0) })
            (displayPath, modelSource) = (acquired.displayPath, opened.model.source.rawValue)
            writeExport = { try DecodedExport.write(opened, to: $0, provenance: $1, withExternalData: withExternalData) }
        case .atomic(let store):
            if modelPath != nil { throw InputError(message: "--model is not used for a \(store.format.title) (\(store.displayPath)): its values carry their own types; drop --model.") }
            let contents = try AtomicStoreReader.read(store.copy, format: store.format, displayPath: store.displayPath)
            if store.format == .coreDataBinary {
                throw InputError(message: "\(store.displayPath) is a \(store.format.title), whose objects storelens does not decode (their archived layout is not documented); `storelens inspect` shows its metadata and model.")
            }
            (displayPath, modelSource) = (store.displayPath, store.format.rawValue)
            writeExport = { try AtomicStoreExport.write(contents, displayPath: store.displayPath, to: $0, provenance: $1) }
        }
        var provenance: [(String, String)] = [
            ("storelensVersion", Storelens.version),
            ("input", path),
            ("store", displayPath),
            ("exportedAt", ValueDecoder.iso8601(referenceSeconds: Date().timeIntervalSinceReferenceDate)),
        ]
        for file in session.ledger.entries {
            provenance.append(("sha256 " + file.path, file.sha256 ?? "(not hashed)"))
            provenance.append(("size " + file.path, String(file.size)))
        }
        // The originals are checked against their copies before anything is written.
        try session.finish(keepingScratch: withExternalData)
        var summary: DecodedExport.Summary?
        try ReportFile.place(at: out, force: force, originals: session.ledger.entries.map(\.path)) { _, temporary in
            do {
                summary = try writeExport(temporary, provenance)
            } catch DecodedExportError.outputFailed(_, let reason) {
                // Named as the user named it: the temporary file beside it is gone with the failure.
                throw DecodedExportError.outputFailed(path: out, reason: reason)
            }
        }
        guard let summary else { return .success }
        if json {
            let document = JSONValue.object([
                ("schemaVersion", .int(1)),
                ("path", .string(displayPath)),
                ("output", .string(out)),
                ("modelSource", .string(modelSource)),
                ("tables", .array(summary.tables.map { t in
                    .object([("name", .string(t.name)), ("entity", .optional(t.entity)), ("relationship", .optional(t.relationship)), ("rows", .int(t.rows))])
                })),
                ("rows", .int(summary.rows)),
            ])
            output.write(document.rendered() + "\n")
        } else {
            var text = TextTable.sanitized(displayPath) + "\n"
            text += "  exported \(plural(summary.tables.count, "table")), \(plural(summary.rows, "row")) to \(TextTable.sanitized(out))\n"
            var rows: [[String]] = [["TABLE", "ENTITY", "ROWS"]]
            for t in summary.tables { rows.append([t.name, t.entity ?? "link: " + (t.relationship ?? "?"), String(t.rows)]) }
            text += TextTable.render(rows, rightAligned: [2], indent: 2)
            output.write(text)
        }
        if input.keepScratch { output.error("Working copies kept in \(session.scratch.url.path)\n") }
        return .success
    }
}
