import Acquisition
import CoreDataStore
import Foundation
import Reports
import StoreFormats

extension RowsCommand {
    /// `rows` of a Core Data XML store: its objects of one entity through the same writer (and
    /// so the same formats and escaping) as a SQLite store's rows.
    func rows(of store: AcquiredAtomicStore, session: EvidenceSession, output: Output) throws -> ExitCode {
        let title = store.format.title
        if asOf != nil { throw InputError(message: "\(store.displayPath) is a \(title), which has no WAL commits; drop --as-of.") }
        if !filters.isEmpty {
            throw InputError(message: "--where is not available for a \(title) (\(store.displayPath)); filter the --format jsonl output instead (with jq, say).")
        }
        if modelPath != nil { throw InputError(message: "--model is not used for a \(title) (\(store.displayPath)): its values carry their own types; drop --model.") }
        let contents = try AtomicStoreReader.read(store.copy, format: store.format, displayPath: store.displayPath)
        if store.format == .coreDataBinary {
            throw InputError(message: "\(store.displayPath) is a \(title), whose objects storelens does not decode (their archived layout is not documented); `storelens inspect` shows its metadata and model.")
        }
        let selected = try AtomicStoreRows(contents, entity: entityName, displayPath: store.displayPath)
        let header: [(String, JSONValue)] = [
            ("schemaVersion", .int(RowsWriter.schemaVersion)),
            ("path", .string(store.displayPath)),
            ("entity", .string(selected.entity)),
            ("modelSource", .string(store.format.rawValue)),
            ("asOfCommit", .null),
            ("fields", .array(selected.fields.map(JSONValue.string))),
        ]
        let writer = RowsWriter(format: format, fields: selected.fields, header: header, rawCSV: rawCSV, write: output.write,
                                writeBytes: output.write(bytes:))
        if format == .table { output.write(TextTable.sanitized("\(store.displayPath): \(selected.entity) (\(title))") + "\n") }
        writer.begin()
        for row in selected.rows.prefix(limit ?? Int.max) { try writer.add(row) }
        writer.end()
        if format == .table { output.write("\(plural(writer.count, "row"))\n") }
        try session.finish()
        // Values that are not their type are shown as stored text; say so where people look.
        for anomaly in selected.anomalies.prefix(10) { output.error("warning: \(anomaly).\n") }
        if selected.anomalies.count > 10 { output.error("warning: \(selected.anomalies.count - 10) more values are not their type.\n") }
        if input.keepScratch { output.error("Working copies kept in \(session.scratch.url.path)\n") }
        return .success
    }
}
