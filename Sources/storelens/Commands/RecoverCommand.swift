import Acquisition
import CoreDataStore
import Foundation
import Operations
import Reports
import StoreFormats
import WALForensics

/// `storelens recover INPUT`: every version of every record the WAL proves, with its state and source.
struct RecoverCommand: Command {
    static let configuration = CommandConfiguration(
        name: "recover",
        abstract: "List every version of every record the store family holds: live, superseded and deleted from the WAL's commits, uncommitted and carved from free space, with values and sources.",
        discussion: """
        The main file is commit 0 and each valid WAL commit a later state; a record's values at each
        of them are one version (identical values folded into one, with every run of commits they were
        seen in). live: the version the last commit holds; superseded: a later commit changed the
        record; deleted: the record's last version before a commit deleted it. Each version has its
        decoded values (as `rows` shows them), the file and frames that wrote it, the commits it was
        seen at, and the commit and persistent-history transaction that changed or deleted it.
        Then what no committed state shows: cells of frames after the last commit (uncommitted),
        and records carved from freeblocks and unallocated space of table pages (main file and every
        WAL page image), freelist pages, frames of an older WAL generation and a -journal (carved),
        each kept only when it passes the false-positive rules of docs/recover.md. A carved copy of
        a committed version is listed with that version (finds); a freed cell whose first 4 bytes
        were overwritten has confidence header-rebuilt and may carry Z_PK unknown (given back when
        a persistent-history delete's kept values name the record). Last, deletes whose values
        persistent history kept (ZTOMBSTONE0…n) that nothing else gives back: deleted, confidence
        tombstone, the kept values only. --no-carve lists the committed versions and history's.
        """,
        arguments: [ArgumentSpec(name: "input", help: "A store file, an app container or .xcappdata folder, a tar or zip archive of one, or a Finder/iTunes backup folder.", repeating: false, optional: false)],
        options: [OptionSpec.value("--format", "-f", valueName: "format", help: "Output format.",
                                   allowed: RecoveryWriter.Format.allCases.map(\.rawValue), default: "text"),
                  CommonOptions.rawCSV,
                  OptionSpec.value("--entity", valueName: "name", help: "Only versions of this entity (its name as Z_PRIMARYKEY has it; case-insensitive)."),
                  OptionSpec.value("--pk", valueName: "n", help: "Only versions of the record with this Z_PK."),
                  OptionSpec.value("--state", valueName: "state", help: "Only versions in this state: live, superseded, deleted, uncommitted or carved (repeatable, or comma-separated).", repeatable: true),
                  OptionSpec.flag("--no-carve", help: "Only the versions the committed states hold: no uncommitted frames, free space, freelist pages, older WAL generation or -journal."),
                  OptionSpec.value("--out", valueName: "file", help: "Write the versions to this new SQLite file (never overwritten): one table per entity with provenance columns; prints a summary.")]
            + [CommonOptions.timeZone] + CommonOptions.input,
        examples: ["storelens recover default.store",
                   "storelens recover default.store --state deleted,superseded",
                   "storelens recover default.store --state carved,uncommitted --format jsonl",
                   "storelens recover default.store --entity Item --pk 3 --format json",
                   "storelens recover App.xcappdata --format csv",
                   "storelens recover default.store --out /tmp/recovered.sqlite"])

    let path: String
    let format: RecoveryWriter.Format
    let rawCSV: Bool
    let filter: RecordRecovery.Filter
    let out: String?
    let carve: Bool
    let input: InputSettings

    init(_ parsed: ParsedArguments) throws(ParseError) {
        path = try parsed.onlyInput()
        format = RecoveryWriter.Format(rawValue: parsed.format) ?? .text
        rawCSV = try CommonOptions.rawCSV(parsed, csv: format == .csv)
        var filter = RecordRecovery.Filter(entity: parsed.value("--entity"))
        if let entity = filter.entity, entity.isEmpty { throw .invalid("--entity needs an entity name.") }
        if let text = parsed.value("--pk") {
            guard let pk = Int64(text), pk > 0 else { throw .invalid("The value '\(text)' is invalid for '--pk'; give a positive whole number (a Z_PK).") }
            filter.pk = pk
        }
        let states = parsed.values("--state").flatMap { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } }
        if !states.isEmpty {
            var set: Set<RecordVersion.State> = []
            for name in states {
                guard let state = RecordVersion.State(rawValue: name.lowercased()) else {
                    throw .invalid("The value '\(name)' is invalid for '--state'; use live, superseded, deleted, uncommitted or carved.")
                }
                set.insert(state)
            }
            filter.states = set
        }
        self.filter = filter
        carve = !parsed.flag("--no-carve")
        out = parsed.value("--out")
        if let out {
            guard !out.isEmpty, out != "-" else { throw .invalid("--out needs a file name (the versions go to stdout without it).") }
            guard format == .text || format == .json else {
                throw .invalid("--out writes the versions to a SQLite file and prints a summary; use --format text or json with it (or drop --out for \(format.rawValue)).")
            }
        }
        input = try InputSettings(parsed)
    }

    func run(_ output: Output) throws -> ExitCode {
        if let out, FileManager.default.fileExists(atPath: out) || (try? FileManager.default.destinationOfSymbolicLink(atPath: out)) != nil {
            throw WALForensicsError.outputExists(path: out)
        }
        return try input.makeSession().reading { session in
            let options = Storelens.RecoverOptions(input: input.options, filter: filter, carve: carve)
            if let out {
                let written = try Storelens.recover(path, options, into: out, in: session)
                output.write(format == .json ? RecoveryWriter.json(written).rendered() + "\n" : RecoveryWriter.text(written))
            } else {
                // Streamed: versions are printed as the library hands them out.
                let writer = RecoveryWriter(format: format, write: output.write, writeBytes: output.write(bytes:))
                writer.rawCSV = rawCSV
                // Begun with the first store: a run refused before it (an unknown --entity, a
                // foreign -wal) leaves stdout empty, not the head of a document.
                var begun = false
                do {
                    try Storelens.recover(path, options, in: session) { event in
                        if !begun { writer.begin(); begun = true }
                        writer.add(event)
                    }
                } catch {
                    // What was read before the error comes out before the error's sentence.
                    writer.flush()
                    throw error
                }
                if !begun { writer.begin() }
                writer.end()
            }
            try session.finish()
            input.tellKeptScratch(of: session, to: output)
            return .success
        }
    }
}
