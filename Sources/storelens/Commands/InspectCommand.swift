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
        options: [CommonOptions.format] + CommonOptions.input,
        examples: ["storelens inspect ~/Pulled/AppData/Library/Application\\ Support/default.store",
                   "storelens inspect Model.sqlite --format json"])

    let paths: [String]
    let format: String
    let input: InputSettings

    init(_ parsed: ParsedArguments) throws(ParseError) {
        guard !parsed.positionals.isEmpty else { throw .missingArgument("input") }
        paths = parsed.positionals
        format = parsed.value("--format") ?? "text"
        input = try InputSettings(parsed)
    }

    func run(_ output: Output) throws -> ExitCode {
        let session = try EvidenceSession(keepScratch: input.keepScratch)
        defer { session.scratch.remove() }
        var inspections: [StoreInspection] = []
        for store in try session.stores(from: paths, select: input.select, options: input.open, limits: input.limits) {
            inspections.append(try StoreInspector.inspect(store.copy, displayPath: store.displayPath))
        }
        try session.finish()
        switch format {
        case "json": output.write(InspectionReport.json(inspections).rendered() + "\n")
        default: output.write(InspectionReport.text(inspections))
        }
        if input.keepScratch { output.error("Working copies kept in \(session.scratch.url.path)\n") }
        return .success
    }
}
