import Acquisition
import CoreDataStore
import Foundation
import Operations
import Reports
import StoreFormats
import WALForensics

/// `storelens rows INPUT ENTITY`: an entity's rows with values decoded through the model.
struct RowsCommand: Command {
    static let configuration = CommandConfiguration(
        name: "rows",
        abstract: "List an entity's rows with decoded values: dates, UUIDs, relationships as Entity#pk, external data.",
        discussion: """
        ENTITY may be the entity's current name, its legacy name (renaming identifier) or its class
        name. Rows of subentities are included and carry their own entity name. --where filters by
        an attribute or to-one relationship (ATTR=VALUE, repeatable, all must hold); values are bound
        as parameters and typed by the model. Rows are streamed in primary-key order.
        jsonl writes one flat object per row (_entity, _pk, then every field); array the same
        objects as one JSON array; tsv is csv with tabs (docs/rows.md).
        """,
        arguments: [ArgumentSpec(name: "input", help: "A store file, an app container, an archive or a backup folder.", repeating: false, optional: false),
                    ArgumentSpec(name: "entity", help: "Entity name, legacy name or class name.", repeating: false, optional: false)],
        options: [OptionSpec.value("--format", "-f", valueName: "format", help: "Output format.",
                                   allowed: RowsWriter.Format.allCases.map(\.rawValue), default: "table"),
                  OptionSpec.value("--where", valueName: "attr=value", help: "Keep rows whose attribute or to-one relationship equals the value (Entity#pk or pk for relationships, null for NULL).", repeatable: true),
                  OptionSpec.value("--limit", valueName: "n", help: "Print at most this many rows."),
                  OptionSpec.value("--as-of", valueName: "commit", help: "Read the store as it stood after WAL commit N (0: the main file alone)."),
                  OptionSpec.flag("--raw-csv", help: "With --format csv or tsv: write cells exactly as stored; by default control characters are written as \\u001b-style escapes (a backslash as \\\\) and a cell a spreadsheet would run as a formula (=, +, -, @) gets a leading ' (docs/rows.md)."),
                  ModelOption.model] + [CommonOptions.timeZone] + CommonOptions.input,
        examples: ["storelens rows default.store Item",
                   "storelens rows default.store Component --where item=Item#7 --format json",
                   "storelens rows default.store Item --as-of 3 --format csv",
                   "storelens rows default.store Item --format jsonl | sqlite-utils insert items.db items - --nl"])

    let path: String
    let entityName: String
    let format: RowsWriter.Format
    let filters: [String]
    let limit: Int?
    let asOf: Int?
    let modelPath: String?
    let rawCSV: Bool
    let input: InputSettings

    init(_ parsed: ParsedArguments) throws(ParseError) {
        guard parsed.positionals.count >= 1 else { throw .missingArgument("input") }
        guard parsed.positionals.count >= 2 else { throw .missingArgument("entity") }
        guard parsed.positionals.count == 2 else { throw .unexpectedArgument(parsed.positionals[2]) }
        path = parsed.positionals[0]
        entityName = parsed.positionals[1]
        format = RowsWriter.Format(rawValue: parsed.format) ?? .table
        filters = parsed.values("--where")
        if let text = parsed.value("--limit") {
            guard let n = Int(text), n >= 0 else { throw .invalid("The value '\(text)' is invalid for '--limit'; give a whole number of rows.") }
            limit = n
        } else {
            limit = nil
        }
        if let text = parsed.value("--as-of") {
            guard let n = Int(text), n >= 0 else { throw .invalid("The value '\(text)' is invalid for '--as-of'; give a commit number (0 for the main file alone).") }
            asOf = n
        } else {
            asOf = nil
        }
        modelPath = parsed.value("--model")
        rawCSV = parsed.flag("--raw-csv")
        if rawCSV && format != .csv && format != .tsv { throw .invalid("--raw-csv is for --format csv or tsv; the other formats escape by their own rules (JSON's) or are for a terminal.") }
        input = try InputSettings(parsed)
    }

    func run(_ output: Output) throws -> ExitCode {
        return try input.makeSession().reading { session in
            let options = Storelens.RowsOptions(entity: entityName, input: input.options, xcodeModel: modelPath.map { URL(fileURLWithPath: $0) },
                                                asOfCommit: asOf, filters: filters, limit: limit)
            let rows: Storelens.EntityRows
            switch try Storelens.rows(path, options, in: session) {
            case .atomic(let store, let selected): return try write(selected, of: store, session: session, output: output)
            case .sqlite(let opened): rows = opened
            }
            let writer = RowsWriter(format: format, fields: rows.fields, header: RowsWriter.header(rows), rawCSV: rawCSV, write: output.write,
                                    writeBytes: output.write(bytes:))
            if format == .table { output.write(RowsWriter.title(rows) + "\n") }
            writer.begin()
            do {
                if writer.takesScanRows {
                    // jsonl, array, csv, tsv: straight from the statement into output bytes.
                    try rows.forEachStored { try writer.add($0) }
                } else {
                    try rows.forEach { try writer.add($0) }
                }
            } catch {
                writer.flush()
                throw error
            }
            writer.end()
            if format == .table { output.write("\(plural(writer.count, "row"))\n") }
            try session.finish()
            input.tellKeptScratch(of: session, to: output)
            return .success
        }
    }
}
