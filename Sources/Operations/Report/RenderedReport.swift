import Acquisition
import StoreFormats

extension Storelens {
    /// A report read and rendered: the file's text, and what its exit code is made of.
    public struct RenderedReport: Sendable {
        public var contents: ReportContents
        /// The document as `render` made it (the command's HTML).
        public var html: String
    }

    /// `report(_:_:in:)`, then the document rendered by `render` (`HTMLReport.render`: Reports
    /// renders, this target cannot), the stage timed and shown like the others. One report and
    /// each report of a batch are made by this one call.
    public static func report(_ inputs: [String], _ options: ReportOptions, in session: EvidenceSession,
                              render: (ReportDocument) -> String) throws -> RenderedReport {
        let stopwatch = Stopwatch()
        let contents = try report(inputs, options, in: session)
        ProgressReporter.current.report("report: writing the HTML", done: 0, unit: .step)
        let html = render(contents.document)
        options.timings?.record("report-stage=\"HTML written\" at-seconds=\(stopwatch.seconds)")
        return RenderedReport(contents: contents, html: html)
    }
}
