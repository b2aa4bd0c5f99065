import Acquisition
import CoreDataStore
import Foundation
import Reports

/// `storelens inspect PATH`: what is in a store, in both views (WAL applied, main file only).
struct InspectCommand: Command {
    static let configuration = CommandConfiguration(
        name: "inspect",
        abstract: "Show what a store holds: metadata, entities, row counts with and without the WAL, history.",
        discussion: """
        The store's -wal, -shm and -journal are found beside it. storelens copies the store into a
        private working folder and reads the copy; the originals are hashed before and after and
        never opened by SQLite.
        """,
        arguments: [ArgumentSpec(name: "input", help: "A store file, an app container or .xcappdata folder, a tar or zip archive of one, or a Finder/iTunes backup folder.", repeating: true, optional: false)],
        options: [CommonOptions.formatWithMarkdown] + CommonOptions.input + BatchOptions.all,
        examples: ["storelens inspect ~/Pulled/AppData/Library/Application\\ Support/default.store",
                   "storelens inspect Model.sqlite --format json",
                   "storelens inspect tickets/*.tar.gz --jsonl inspect.jsonl --jobs 2"])

    let paths: [String]
    let format: String
    let input: InputSettings
    let batch: BatchSettings?

    init(_ parsed: ParsedArguments) throws(ParseError) {
        guard !parsed.positionals.isEmpty else { throw .missingArgument("input") }
        paths = parsed.positionals
        format = parsed.value("--format") ?? "text"
        input = try InputSettings(parsed)
        batch = try BatchSettings.parse(parsed)
    }

    func run(_ output: Output) throws -> ExitCode {
        if let batch {
            return try Batch.run(command: "inspect", inputs: paths, settings: batch, output: output) { path, context in
                let session = try EvidenceSession(keepScratch: input.keepScratch)
                defer { session.scratch.remove() }
                context.hashInput(path, in: session)
                let inspections = try inspect([path], session: session)
                try session.finish()
                return BatchOutcome(exitCode: .success, summary: InspectionReport.batchSummary(inspections))
            }
        }
        let session = try EvidenceSession(keepScratch: input.keepScratch)
        defer { session.scratch.remove() }
        let inspections = try inspect(paths, session: session)
        try session.finish()
        switch format {
        case "json": output.write(InspectionReport.json(inspections).rendered() + "\n")
        case "markdown": output.write(InspectionReport.markdown(inspections))
        default: output.write(InspectionReport.text(inspections))
        }
        if input.keepScratch { output.error("Working copies kept in \(session.scratch.url.path)\n") }
        return .success
    }

    func inspect(_ paths: [String], session: EvidenceSession) throws -> [StoreInspection] {
        try session.stores(from: paths, select: input.select, options: input.open, limits: input.limits).map {
            try StoreInspector.inspect($0.copy, displayPath: $0.displayPath)
        }
    }
}
