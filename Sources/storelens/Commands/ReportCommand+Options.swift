import Coexistence
import Foundation
import Operations
import Reports
import StoreFormats

/// Where `report` writes: one file (`--out`, `-` for stdout), or in batch mode one report per
/// input in a folder (`--out-dir`, with `--jsonl`).
enum ReportDestination: Sendable {
    case file(String)
    case folder(String, batch: BatchSettings)
}

/// Where `report` writes, and what the library's report is given.
extension ReportCommand {
    /// `--out`, or in batch mode `--out-dir` and the batch's settings; each refused without the other mode.
    static func destination(_ parsed: ParsedArguments) throws(ParseError) -> ReportDestination {
        if let batch = try BatchSettings.parse(parsed) {
            if parsed.value("--out") != nil {
                throw .invalid("--out names one report, and a batch writes one per input: give --out-dir FOLDER for the reports instead.")
            }
            guard let dir = parsed.value("--out-dir") else {
                throw .invalid("Missing '--out-dir <folder>': a report batch writes one HTML file per input into this folder.")
            }
            guard !dir.isEmpty, dir != "-" else {
                throw .invalid("--out-dir needs a folder for the reports (each is a file of its own, so not - for stdout).")
            }
            return .folder(dir, batch: batch)
        }
        if parsed.value("--out-dir") != nil {
            throw .invalid("--out-dir is for a batch (one report per input); add --jsonl FILE for the results, or give --out FILE for one report.")
        }
        guard let out = parsed.value("--out"), !out.isEmpty else {
            throw .invalid("Missing '--out <file>': report writes one HTML file; name it (or give - for stdout).")
        }
        return .file(out)
    }

    /// The command line as the report shows it, quoted for a shell where needed.
    static func commandLine() -> String {
        (["storelens"] + CommandLine.arguments.dropFirst()).map { arg in
            arg.isEmpty || arg.contains(where: { " \"'$\\`".contains($0) }) ? "'" + arg.replacingOccurrences(of: "'", with: "'\\''") + "'" : arg
        }.joined(separator: " ")
    }

    /// What the library's report takes; the manifest is read here, before any input.
    func reportOptions() throws -> Storelens.ReportOptions {
        Storelens.ReportOptions(
            input: input.options, xcodeModel: modelPath.map { URL(fileURLWithPath: $0) }, lint: lint, migrationTarget: migrationTo,
            manifest: try manifestPath.map { try Manifest.load(path: $0) }, manifestPath: manifestPath, commandLine: Self.commandLine(),
            toolVersion: RootCommand.version,
            // STORELENS_REPORT_SEQUENTIAL=1 reads each store's parts one after another (to compare).
            parallel: ProcessInfo.processInfo.environment["STORELENS_REPORT_SEQUENTIAL"] == nil, timings: Timings.fromEnvironment)
    }
}
