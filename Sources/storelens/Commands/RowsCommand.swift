import Foundation
import Operations
import Reports

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
    let format: RowsWriter.Format
    let rawCSV: Bool
    let options: Storelens.RowsOptions
    let input: InputSettings

    init(_ parsed: ParsedArguments) throws(ParseError) {
        guard parsed.positionals.count >= 1 else { throw .missingArgument("input") }
        guard parsed.positionals.count >= 2 else { throw .missingArgument("entity") }
        guard parsed.positionals.count == 2 else { throw .unexpectedArgument(parsed.positionals[2]) }
        path = parsed.positionals[0]
        format = RowsWriter.Format(rawValue: parsed.format) ?? .table
        var limit: Int?
        if let text = parsed.value("--limit") {
            guard let n = Int(text), n >= 0 else { throw .invalid("The value '\(text)' is invalid for '--limit'; give a whole number of rows.") }
            limit = n
        }
        let asOf = try parsed.commit("--as-of")
        rawCSV = parsed.flag("--raw-csv")
        if rawCSV && format != .csv && format != .tsv { throw .invalid("--raw-csv is for --format csv or tsv; the other formats escape by their own rules (JSON's) or are for a terminal.") }
        input = try InputSettings(parsed)
        options = Storelens.RowsOptions(entity: parsed.positionals[1], input: input.options, xcodeModel: parsed.value("--model").map { URL(fileURLWithPath: $0) },
                                        asOfCommit: asOf, filters: parsed.values("--where"), limit: limit)
    }

    func run(_ output: Output) throws -> ExitCode {
        try Storelens.reading(input.options) { session -> [String] in
            switch try Storelens.rows(path, options, in: session) {
            case .sqlite(let rows):
                try RowsWriter.write(rows, as: format, rawCSV: rawCSV, write: output.write, writeBytes: output.write(bytes:))
                return []
            case .atomic(let store, let selected):
                try RowsWriter.write(selected, of: store, limit: options.limit, as: format, rawCSV: rawCSV, write: output.write, writeBytes: output.write(bytes:))
                return selected.anomalies
            }
        } then: { anomalies, session in
            // Values that are not their type are shown as stored text; say so where people look.
            for anomaly in anomalies.prefix(10) { output.error("warning: \(anomaly).\n") }
            if anomalies.count > 10 { output.error("warning: \(anomalies.count - 10) more values are not their type.\n") }
            input.tellKeptScratch(of: session, to: output)
            return .success
        }
    }
}
