import CoreDataStore
import Foundation
import Operations
import Reports

/// `storelens history INPUT`: persistent history with writers resolved and update masks decoded.
struct HistoryCommand: Command {
    static let configuration = CommandConfiguration(
        name: "history",
        abstract: "Show persistent history: who wrote each transaction and which rows and properties it changed.",
        discussion: """
        Transactions come from ATRANSACTION with their author, bundle id, process name and context
        name resolved through ATRANSACTIONSTRING, and their ACHANGE rows. For an update, the
        properties marked in ZCOLUMNS are decoded by the model's bit order; when the bitmap's
        length does not fit the model, that is said instead of guessing. --summary gives, per
        entity, which writers inserted, updated and deleted it and when first and last. jsonl and
        csv write one flat record per change with its transaction's columns (path, transaction,
        timestamp, author, bundleID, processName, contextName, change, entity, pk, …).
        """,
        arguments: [ArgumentSpec(name: "input", help: "A store file, an app container, an archive or a backup folder.", repeating: false, optional: false)],
        options: [OptionSpec.value("--format", "-f", valueName: "format", help: "Output format: text, json, or one flat record per change as jsonl or csv (docs/history.md).",
                                   allowed: HistoryWriter.Format.allCases.map(\.rawValue), default: "text"),
                  CommonOptions.rawCSV,
                  OptionSpec.value("--entity", valueName: "name", help: "Only changes to this entity (and its subentities): entity, legacy or class name."),
                  OptionSpec.value("--author", valueName: "author", help: "Only transactions with this author."),
                  OptionSpec.value("--bundle", valueName: "bundle-id", help: "Only transactions from this bundle identifier."),
                  OptionSpec.value("--since", valueName: "date", help: "Only transactions at or after this time (ISO 8601, e.g. 2024-07-29 or 2024-07-29T10:00:00Z)."),
                  OptionSpec.flag("--summary", help: "Per entity: writers with insert, update and delete counts, first and last."),
                  ModelOption.model] + [CommonOptions.timeZone] + CommonOptions.input,
        examples: ["storelens history default.store --summary",
                   "storelens history default.store --entity Item --since 2024-07-29 --format json",
                   "storelens history default.store --format jsonl | sqlite-utils insert history.db changes - --nl"])

    let path: String
    let format: HistoryWriter.Format
    let rawCSV: Bool
    let summary: Bool
    let options: Storelens.HistoryOptions
    let input: InputSettings

    init(_ parsed: ParsedArguments) throws(ParseError) {
        path = try parsed.onlyInput()
        format = HistoryWriter.Format(rawValue: parsed.format) ?? .text
        rawCSV = try CommonOptions.rawCSV(parsed, csv: format == .csv)
        let since = try parsed.value("--since").map { text throws(ParseError) in
            guard let seconds = ValueDecoder.parseDate(text) else {
                throw .invalid("The value '\(text)' is invalid for '--since'; give an ISO 8601 date such as 2024-07-29 or 2024-07-29T10:00:00Z.")
            }
            return seconds
        }
        summary = parsed.flag("--summary")
        if summary, format == .jsonl || format == .csv { throw .invalid("--summary is a table per entity; use --format text or json with it (jsonl and csv list every change).") }
        input = try InputSettings(parsed)
        options = Storelens.HistoryOptions(input: input.options, xcodeModel: parsed.value("--model").map { URL(fileURLWithPath: $0) }, entity: parsed.value("--entity"),
                                           author: parsed.value("--author"), bundleID: parsed.value("--bundle"), since: since)
    }

    func run(_ output: Output) throws -> ExitCode {
        try Storelens.reading(input.options) { session in
            // Written as it is read, before the originals are checked.
            var history = try Storelens.history(path, options, in: session)
            if summary {
                output.write(HistorySummaryReport.rendered(try history.summary(), of: history, json: format == .json))
            } else {
                let writer = HistoryWriter.begun(history, format: format, rawCSV: rawCSV, write: output.write)
                try history.forEachTransaction { writer.add($0) }
                writer.end()
            }
        } then: { _, session in
            input.tellKeptScratch(of: session, to: output)
            return .success
        }
    }
}
