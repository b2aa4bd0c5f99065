import Acquisition
import CoreDataStore
import StoreFormats
import Foundation
import Reports

/// `storelens scan INPUT...`: every SQLite store in what came off the device.
struct ScanCommand: Command {
    static let configuration = CommandConfiguration(
        name: "scan",
        abstract: "List every SQLite store in a container, .xcappdata bundle, archive or backup, with its sidecars and hashes.",
        discussion: """
        Stores are found by their first bytes ("SQLite format 3"), whatever their names, and grouped
        with their -wal, -shm, -journal and .<name>_SUPPORT/ folder. Archives are read in one
        streaming pass; only store families are extracted, into the private working folder.
        """,
        arguments: [ArgumentSpec(name: "input", help: "A store file, a folder (app container, .xcappdata, App Group container, any tree), a tar/zip archive, or an unencrypted Finder/iTunes backup folder.", repeating: true, optional: false)],
        options: [CommonOptions.formatWithMarkdown,
                  .value("--evidence", valueName: "file", help: "Write an evidence manifest (input hashes, every extracted file and its hash) as JSON to this new file.")]
            + CommonOptions.input + BatchOptions.all,
        examples: ["storelens scan MyApp.xcappdata", "storelens scan container.tar.gz --format json --evidence evidence.json",
                   "storelens scan tickets/ --each --jsonl scan.jsonl --jobs 2 --resume"])

    let paths: [String]
    let format: String
    let evidencePath: String?
    let input: InputSettings
    let batch: BatchSettings?

    init(_ parsed: ParsedArguments) throws(ParseError) {
        guard !parsed.positionals.isEmpty else { throw .missingArgument("input") }
        paths = parsed.positionals
        format = parsed.value("--format") ?? "text"
        evidencePath = parsed.value("--evidence")
        input = try InputSettings(parsed)
        batch = try BatchSettings.parse(parsed)
        if batch != nil && evidencePath != nil {
            throw .invalid("--evidence writes one file for one scan; in batch mode (--jsonl) each line carries its input's SHA-256.")
        }
    }

    func run(_ output: Output) throws -> ExitCode {
        if let batch {
            return try Batch.run(command: "scan", inputs: paths, settings: batch, output: output) { path, context in
                let session = try input.makeSession()
                defer { session.scratch.remove() }
                context.hashInput(path, in: session)
                let (inventories, scanned) = try scan([path], session: session, hashArchives: true)
                try session.finish()
                let damaged = inventories.first { $0.damage != nil }
                return BatchOutcome(exitCode: damaged == nil ? .success : .usageOrInput,
                                    summary: ScanReport.batchSummary(inventories: inventories, stores: scanned),
                                    error: damaged.map { "\($0.input): \($0.damage ?? ""); copy the archive again — it was cut off or corrupted." })
            }
        }
        let session = try input.makeSession()
        defer { session.scratch.remove() }
        // Machine-readable output carries the archive's SHA-256 (docs/json-output.md); the text
        // view skips it, as hashing a large archive costs more than reading it.
        let (inventories, scanned) = try scan(paths, session: session, hashArchives: evidencePath != nil || format == "json")
        try session.finish()
        if let evidencePath {
            try EvidenceFile.create(ScanReport.evidence(inventories: inventories, ledger: session.ledger).rendered() + "\n", at: evidencePath)
        }
        switch format {
        case "json": output.write(ScanReport.json(inventories: inventories, stores: scanned).rendered() + "\n")
        case "markdown": output.write(ScanReport.markdown(inventories: inventories, stores: scanned))
        default: output.write(ScanReport.text(inventories: inventories, stores: scanned))
        }
        if let damaged = inventories.first(where: { $0.damage != nil }), let damage = damaged.damage {
            output.error("Error: \(damaged.input): \(damage); copy the archive again — it was cut off or corrupted.\n")
            return .usageOrInput
        }
        return .success
    }

    /// Finds the stores in `paths` and classifies each (one damaged store does not hide the others).
    func scan(_ paths: [String], session: EvidenceSession, hashArchives: Bool) throws -> ([Inventory], [ScannedStore]) {
        // Every store listed is opened to classify it: copied while it is hashed.
        let select = input.select
        let resolver = InputResolver(session: session, limits: input.limits, hashArchives: hashArchives,
                                     stagesCopies: { path in select.map { path.hasSuffix($0) } ?? true })
        var inventories: [Inventory] = []
        for path in InputResolver.distinct(paths) { inventories.append(try resolver.inventory(of: path)) }
        var scanned: [ScannedStore] = []
        let progress = ProgressReporter.current
        defer { progress.setContext(nil) }
        let total = ProgressReporter.Update.grouped(Int64(inventories.reduce(0) { $0 + $1.stores.count }))
        var number = 0
        for inventory in inventories {
            for found in inventory.stores where input.select.map({ found.path.hasSuffix($0) }) ?? true {
                number += 1
                progress.setContext("store \(number) of \(total)")
                progress.report("opening \(found.name)", done: Int64(number), unit: .step)
                do {
                    if found.format != .sqlite {
                        // Read whole from its copy: a file that only looks like one is listed with its problem.
                        let atomic = try session.atomicCopy(of: found)
                        _ = try AtomicStoreReader.read(atomic.copy, format: found.format, displayPath: found.path)
                        scanned.append(ScannedStore(found: found, format: nil, stack: nil, problem: nil))
                        continue
                    }
                    let copy = try session.workingCopy(of: found, options: input.open)
                    let (format, verdict) = try StoreInspector.classify(copy)
                    scanned.append(ScannedStore(found: found, format: format, stack: verdict.stack, problem: nil,
                                                externalData: format == .coreData ? try StoreInspector.externalData(copy) : nil))
                } catch {
                    // One damaged store does not hide the others: list it with its problem.
                    scanned.append(ScannedStore(found: found, format: nil, stack: nil, problem: "\(error)"))
                }
            }
        }
        return (inventories, scanned)
    }
}

/// Writes a file the user named, never replacing an existing one.
enum EvidenceFile {
    static func create(_ text: String, at path: String) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o644)
        guard fd >= 0 else {
            throw InputError(message: "cannot create \(path) (\(String(cString: strerror(errno)))); give a path that does not exist yet.")
        }
        let code = OutputFileFailure.writeAll(fd, Array(text.utf8))
        close(fd)
        // Nothing half-written is left under the name the user gave.
        if code != 0 {
            unlink(path)
            throw OutputFileFailure(path: path, code: code)
        }
    }
}
