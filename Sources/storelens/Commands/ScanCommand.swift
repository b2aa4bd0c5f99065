import Acquisition
import CoreDataStore
import Foundation
import Operations
import OutputFiles
import Reports
import StoreFormats

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
        paths = try parsed.inputs()
        format = parsed.format
        evidencePath = parsed.value("--evidence")
        input = try InputSettings(parsed)
        batch = try BatchSettings.parse(parsed)
        if batch != nil && evidencePath != nil {
            throw .invalid("--evidence writes one file for one scan; in batch mode (--jsonl) each line carries its input's SHA-256.")
        }
    }

    func run(_ output: Output) throws -> ExitCode {
        if let batch {
            return try Batch.run(command: "scan", inputs: paths, settings: batch, input: input, output: output) { path, evidence in
                try evidence.reading { try Storelens.scan([path], .init(input: input.options, hashArchives: true), in: $0) } then: { result, _ in
                    let damaged = result.damaged
                    return BatchOutcome(exitCode: damaged == nil ? .success : .usageOrInput,
                                        summary: ScanReport.batchSummary(inventories: result.inventories, stores: result.stores),
                                        error: damaged.map { "\($0.input): \($0.damage ?? ""); copy the archive again — it was cut off or corrupted." })
                }
            }
        }
        // Machine-readable output carries the archive's SHA-256 (docs/json-output.md); the text
        // view skips it, as hashing a large archive costs more than reading it.
        let options = Storelens.ScanOptions(input: input.options, hashArchives: evidencePath != nil || format == "json")
        return try Storelens.reading(input.options) { try Storelens.scan(paths, options, in: $0) } then: { result, session in
            if let evidencePath {
                try OutputFile.create(ScanReport.evidence(inventories: result.inventories, ledger: session.ledger).rendered() + "\n", at: evidencePath)
            }
            output.write(ScanReport.rendered(result, as: format))
            if let damaged = result.damaged, let damage = damaged.damage {
                output.error("Error: \(damaged.input): \(damage); copy the archive again — it was cut off or corrupted.\n")
                return .usageOrInput
            }
            return .success
        }
    }
}
