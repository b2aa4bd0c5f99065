import Acquisition
import CoreDataStore
import Foundation
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
        format = RowsWriter.Format(rawValue: parsed.value("--format") ?? "table") ?? .table
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
        let session = try input.makeSession()
        defer { session.scratch.remove() }
        let acquired: AcquiredStore
        switch try input.singleStoreOrAtomic(path, in: session) {
        case .atomic(let store): return try rows(of: store, session: session, output: output)
        case .sqlite(let store): acquired = store
        }
        let copy = acquired.copy
        let xcodeModel = modelPath.map { URL(fileURLWithPath: $0) }
        let opened: OpenedStore
        if let asOf {
            let connection = try copy.open(asOfCommit: asOf, displayPath: acquired.displayPath)
            opened = try OpenedStore.open(connection: connection, displayPath: acquired.displayPath,
                                          decoder: ValueDecoder(copy),
                                          xcodeModel: xcodeModel)
        } else {
            opened = try OpenedStore.open(copy, displayPath: acquired.displayPath, xcodeModel: xcodeModel)
        }
        let entity = try opened.entity(entityName)
        let reader = RowReader(map: opened.map, entity: entity, decoder: opened.decoder)
        let resolved = try filters.map { try reader.filter($0) }
        var header: [(String, JSONValue)] = [
            ("schemaVersion", .int(RowsWriter.schemaVersion)),
            ("path", .string(acquired.displayPath)),
            ("entity", .string(entity.entity.name)),
            ("modelSource", .string(opened.model.source.rawValue)),
            ("asOfCommit", .optional(asOf)),
            ("fields", .array(reader.fields.map { .string($0.label) })),
        ]
        if opened.model.source == .inferred { header.append(("modelNotes", .array(opened.model.notes.map(JSONValue.string)))) }
        let writer = RowsWriter(format: format, fields: reader.fields.map(\.label), header: header, rawCSV: rawCSV, write: output.write,
                                writeBytes: output.write(bytes:))
        if format == .table {
            var title = TextTable.sanitized("\(acquired.displayPath): \(entity.entity.name)")
            if asOf != nil { title += " as of commit \(asOf!)" }
            if opened.model.source == .inferred { title += " (model INFERRED from the SQL schema)" }
            output.write(title + "\n")
        }
        writer.begin()
        do {
            try ModelOption.reading(acquired.displayPath) {
                if writer.takesScanRows {
                    // jsonl, array, csv, tsv: straight from the statement into output bytes.
                    try reader.scan(opened.connection, filters: resolved, limit: limit)?.forEach { try writer.add($0) }
                } else {
                    try reader.forEach(opened.connection, filters: resolved, limit: limit) { try writer.add($0) }
                }
            }
        } catch {
            writer.flush()
            throw error
        }
        writer.end()
        if format == .table { output.write("\(plural(writer.count, "row"))\n") }
        try session.finish()
        if input.keepScratch { output.error("Working copies kept in \(session.scratch.url.path)\n") }
        return .success
    }
}
