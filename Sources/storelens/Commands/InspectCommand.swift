import Acquisition
import CoreDataStore
import Foundation
import Reports
import WALForensics

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
        options: [CommonOptions.formatWithMarkdown,
                  .value("--as-of", valueName: "commit", help: "Show the store as it stood after WAL commit N (0: the main file alone).")]
            + [CommonOptions.timeZone] + CommonOptions.input + BatchOptions.all,
        examples: ["storelens inspect ~/Pulled/AppData/Library/Application\\ Support/default.store",
                   "storelens inspect Model.sqlite --format json",
                   "storelens inspect tickets/*.tar.gz --jsonl inspect.jsonl --jobs 2"])

    let paths: [String]
    let format: String
    let input: InputSettings
    let asOf: Int?
    let batch: BatchSettings?

    init(_ parsed: ParsedArguments) throws(ParseError) {
        guard !parsed.positionals.isEmpty else { throw .missingArgument("input") }
        paths = parsed.positionals
        format = parsed.value("--format") ?? "text"
        input = try InputSettings(parsed)
        if let text = parsed.value("--as-of") {
            guard let n = Int(text), n >= 0 else { throw .invalid("The value '\(text)' is invalid for '--as-of'; give a commit number (0 for the main file alone).") }
            asOf = n
        } else {
            asOf = nil
        }
        batch = try BatchSettings.parse(parsed)
    }

    func run(_ output: Output) throws -> ExitCode {
        if let batch {
            return try Batch.run(command: "inspect", inputs: paths, settings: batch, output: output) { path, context in
                let session = try input.makeSession()
                defer { session.scratch.remove() }
                context.hashInput(path, in: session)
                // Batch mode reads one input at a time: a refused store fails that input, as before.
                var refused: [RefusedStore] = []
                var atomic: [AtomicStoreInspection] = []
                let inspections = try inspect([path], session: session, refused: &refused, atomic: &atomic)
                if let first = refused.first { throw first.error }
                try session.finish()
                return BatchOutcome(exitCode: .success, summary: InspectionReport.batchSummary(inspections, atomic: atomic))
            }
        }
        let session = try input.makeSession()
        defer { session.scratch.remove() }
        var refused: [RefusedStore] = []
        var atomic: [AtomicStoreInspection] = []
        let inspections = try inspect(paths, session: session, refused: &refused, atomic: &atomic)
        try session.finish()
        switch format {
        case "json":
            var json = InspectionReport.json(inspections)
            if case .object(var members) = json {
                if !atomic.isEmpty { members.append(("atomicStores", .array(atomic.map(AtomicStoreReport.json)))) }
                if !refused.isEmpty {
                    members.append(("refused", .array(refused.map { .object([("path", .string($0.path)), ("reason", .string($0.reason))]) })))
                }
                json = .object(members)
            }
            output.write(json.rendered() + "\n")
        case "markdown":
            output.write(InspectionReport.markdown(inspections))
            for a in atomic { output.write("\n```\n" + AtomicStoreReport.text(a) + "```\n") }
        default:
            output.write(([InspectionReport.text(inspections)].filter { !$0.isEmpty } + atomic.map(AtomicStoreReport.text)).joined(separator: "\n"))
        }
        if input.keepScratch { output.error("Working copies kept in \(session.scratch.url.path)\n") }
        // The other stores were read; the refused ones are input errors all the same.
        for r in refused { output.error("Error: \(r.reason)\n") }
        return refused.isEmpty ? .success : .usageOrInput
    }

    /// The SQLite stores' inspections; the Core Data XML and binary stores among the inputs go to `atomic`.
    func inspect(_ paths: [String], session: EvidenceSession, refused: inout [RefusedStore],
                 atomic: inout [AtomicStoreInspection]) throws -> [StoreInspection] {
        var atomicStores: [AcquiredAtomicStore] = []
        let stores = try session.stores(from: paths, select: input.select, options: input.open, limits: input.limits,
                                        refused: &refused, atomic: &atomicStores)
        if asOf != nil, let first = atomicStores.first {
            throw InputError(message: "\(first.displayPath) is a \(first.format.title), which has no WAL commits; drop --as-of to inspect it.")
        }
        atomic = try atomicStores.map { try AtomicStoreInspection.inspect($0) }
        return try stores.map { store in
            let view = try asOf.map { n in try store.copy.open(asOfCommit: n, displayPath: store.displayPath) }
            return try StoreInspector.inspect(store.copy, displayPath: store.displayPath, view: view, asOfCommit: asOf)
        }
    }
}
