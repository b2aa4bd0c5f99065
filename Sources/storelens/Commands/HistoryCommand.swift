import Acquisition
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
    let entityName: String?
    let author: String?
    let bundle: String?
    let since: Double?
    let summary: Bool
    let modelPath: String?
    let input: InputSettings

    init(_ parsed: ParsedArguments) throws(ParseError) {
        path = try parsed.onlyInput()
        format = HistoryWriter.Format(rawValue: parsed.format) ?? .text
        rawCSV = try CommonOptions.rawCSV(parsed, csv: format == .csv)
        entityName = parsed.value("--entity")
        author = parsed.value("--author")
        bundle = parsed.value("--bundle")
        if let text = parsed.value("--since") {
            guard let seconds = ValueDecoder.parseDate(text) else {
                throw .invalid("The value '\(text)' is invalid for '--since'; give an ISO 8601 date such as 2024-07-29 or 2024-07-29T10:00:00Z.")
            }
            since = seconds
        } else {
            since = nil
        }
        summary = parsed.flag("--summary")
        if summary, format == .jsonl || format == .csv { throw .invalid("--summary is a table per entity; use --format text or json with it (jsonl and csv list every change).") }
        modelPath = parsed.value("--model")
        input = try InputSettings(parsed)
    }

    func run(_ output: Output) throws -> ExitCode {
        return try input.makeSession().reading { session in
            let options = Storelens.HistoryOptions(input: input.options, xcodeModel: modelPath.map { URL(fileURLWithPath: $0) },
                                                   entity: entityName, author: author, bundleID: bundle, since: since)
            var history = try Storelens.history(path, options, in: session)
            let header = HistoryWriter.header(history)
            if summary {
                let result = try history.summary()
                output.write(format == .json ? HistorySummaryReport.json(result, header: header).rendered() + "\n"
                                              : HistorySummaryReport.text(result, title: HistoryWriter.title(history)))
            } else {
                let writer = HistoryWriter(format: format, header: header, path: history.path, write: output.write)
                writer.rawCSV = rawCSV
                writer.begin(title: HistoryWriter.title(history))
                try history.forEachTransaction { writer.add($0) }
                writer.end()
            }
            try session.finish()
            input.tellKeptScratch(of: session, to: output)
            return .success
        }
    }
}
