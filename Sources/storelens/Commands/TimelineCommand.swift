import Acquisition
import CoreDataStore
import Foundation
import Operations
import Reports
import StoreFormats
import WALForensics

/// `storelens timeline INPUT`: every dated event of the input's stores, sorted, in Timesketch's columns.
struct TimelineCommand: Command {
    static let configuration = CommandConfiguration(
        name: "timeline",
        abstract: "List every dated event — history transactions, WAL commits, dated attributes — sorted, as CSV or JSON Lines for Timesketch.",
        discussion: """
        Events: each persistent-history transaction (its writer and changes), each WAL commit dated
        by the history transactions it wrote, and every value of every Date attribute the model
        names (creation and modification dates included), for every Core Data store of the input.
        Sorted by time; columns datetime, timestamp (microseconds since 1970), timestamp_desc and
        message, as Timesketch imports them, then source, store, entity, pk, attribute, transaction,
        commit, bundleID, processName, author, contextName. csv shows datetime in --tz (with its
        offset); jsonl keeps UTC (docs/timeline.md).
        """,
        arguments: [ArgumentSpec(name: "input", help: "A store file, an app container, an archive or a backup folder.", repeating: false, optional: false)],
        options: [OptionSpec.value("--format", "-f", valueName: "format", help: "Output format.",
                                   allowed: TimelineWriter.Format.allCases.map(\.rawValue), default: "csv"),
                  CommonOptions.rawCSV,
                  ModelOption.model, CommonOptions.timeZone] + CommonOptions.input,
        examples: ["storelens timeline default.store > timeline.csv",
                   "storelens timeline App.xcappdata --tz Europe/Berlin",
                   "storelens timeline default.store --format jsonl | sqlite-utils insert timeline.db events - --nl"])

    let path: String
    let format: TimelineWriter.Format
    let rawCSV: Bool
    let modelPath: String?
    let input: InputSettings

    init(_ parsed: ParsedArguments) throws(ParseError) {
        path = try parsed.onlyInput()
        format = TimelineWriter.Format(rawValue: parsed.format) ?? .csv
        rawCSV = try CommonOptions.rawCSV(parsed, csv: format == .csv)
        modelPath = parsed.value("--model")
        input = try InputSettings(parsed)
    }

    func run(_ output: Output) throws -> ExitCode {
        let options = Storelens.TimelineOptions(input: input.options, xcodeModel: modelPath.map { URL(fileURLWithPath: $0) })
        return try Storelens.reading(input.options) { session in
            // Every store is read before anything is printed: the events of all of them are sorted together.
            try Storelens.sortedTimeline(path, options, in: session) { store, event in TimelineWriter.lines(format, store: store, [event], rawCSV: rawCSV) }
        } then: { timeline, session in
            output.write(TimelineWriter.header(format, rawCSV: rawCSV))
            try timeline.forEachSorted { output.write($0) }
            let leftOut = timeline.leftOut, undated = leftOut.undated
            if !leftOut.notCoreData.isEmpty { output.error("Not Core Data, no timeline: \(leftOut.notCoreData.map(TextTable.sanitized).joined(separator: ", "))\n") }
            if undated > 0 { output.error("\(plural(undated, "transaction")), commit\(undated == 1 ? "" : "s") or value\(undated == 1 ? "" : "s") without a usable date left out.\n") }
            input.tellKeptScratch(of: session, to: output)
            return .success
        }
    }
}
