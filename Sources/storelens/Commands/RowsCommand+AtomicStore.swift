import Acquisition
import CoreDataStore
import Foundation
import Operations
import Reports
import StoreFormats

extension RowsCommand {
    /// `rows` of a Core Data XML store: its objects of one entity through the same writer (and
    /// so the same formats and escaping) as a SQLite store's rows.
    func write(_ selected: AtomicStoreRows, of store: AcquiredAtomicStore, session: EvidenceSession, output: Output) throws -> ExitCode {
        let writer = RowsWriter(format: format, fields: selected.fields, header: RowsWriter.header(selected, of: store), rawCSV: rawCSV, write: output.write,
                                writeBytes: output.write(bytes:))
        if format == .table { output.write(RowsWriter.title(selected, of: store) + "\n") }
        writer.begin()
        for row in selected.rows.prefix(limit ?? Int.max) { try writer.add(row) }
        writer.end()
        if format == .table { output.write("\(plural(writer.count, "row"))\n") }
        try session.finish()
        // Values that are not their type are shown as stored text; say so where people look.
        for anomaly in selected.anomalies.prefix(10) { output.error("warning: \(anomaly).\n") }
        if selected.anomalies.count > 10 { output.error("warning: \(selected.anomalies.count - 10) more values are not their type.\n") }
        input.tellKeptScratch(of: session, to: output)
        return .success
    }
}
