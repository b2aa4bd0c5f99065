import Acquisition
import CoreDataStore
import Findings
import Foundation
import Operations
import OutputFiles
import Reports
import StoreFormats

/// What every subcommand declares about itself, for parsing and for help.
struct CommandConfiguration {
    let name: String
    let abstract: String
    let discussion: String
    let arguments: [ArgumentSpec]
    let options: [OptionSpec]
    let examples: [String]
}

/// A subcommand: parses its own arguments, validates them, then runs.
protocol Command: Sendable {
    static var configuration: CommandConfiguration { get }
    init(_ parsed: ParsedArguments) throws(ParseError)
    func run(_ output: Output) throws -> ExitCode
}

/// Where a command writes. stdout is for results, stderr for diagnostics. A progress line on
/// stderr is cleared before anything else is written.
///
/// When whoever reads stdout goes away (`storelens rows … | head -1`), the next write fails with
/// EPIPE (SIGPIPE is ignored, `Interrupts.install`): that is a clean stop, not an error. The
/// scratch folders are removed and the process exits quietly with 141, the status a shell
/// reports for any filter its reader stopped (128 + SIGPIPE), so `set -o pipefail` treats
/// storelens like `cat` (docs/exit-codes.md).
///
/// Any other failure to write the results (stdout on a full disk: ENOSPC, EIO) is storelens' own
/// failure, never a partial answer given as whole: one sentence on stderr, the scratch folders
/// removed, exit 3.
final class Output: Sendable {
    static let readerGoneStatus: Int32 = 128 + SIGPIPE
    static let writeFailedStatus: Int32 = 3

    func write(_ text: String) {
        write(bytes: Array(text.utf8))
    }

    /// Results as UTF-8 bytes (the rows writers hand over blocks of many rows).
    func write(bytes: [UInt8]) {
        ProgressReporter.current.clear()
        guard !Self.writeAll(STDOUT_FILENO, bytes) else { return }
        let code = errno
        if code == EPIPE { Self.stop(Self.readerGoneStatus) }
        Self.stop(Self.writeFailedStatus, saying: "the results could not be written to standard output (\(String(cString: strerror(code)))), "
            + "so what was written is incomplete; make room where standard output goes, or send it elsewhere, and run the command again")
    }

    /// Ends the process at once when the results cannot go on: the sentence (if any) on stderr as
    /// storelens' own failure, the working folders removed, then `_exit`, as on a signal (other
    /// threads may still be working, and atexit must not race them).
    static func stop(_ status: Int32, saying sentence: String? = nil) -> Never {
        if let sentence {
            _ = writeAll(STDERR_FILENO, terminalLine("Error: \(sentence) (this is storelens' own failure, not a finding about the evidence).\n"))
        }
        ScratchRegistry.shared.removeAll()
        _exit(status)
    }

    /// Diagnostics, one line per call: a closed stderr loses them but stops nothing. Every
    /// diagnostic passes here, so here its bytes are made safe for a terminal (`terminalLine`):
    /// paths, option values and store names in it come from the command line or the evidence.
    func error(_ line: String) {
        ProgressReporter.current.clear()
        _ = Self.writeAll(STDERR_FILENO, Self.terminalLine(line))
    }

    /// `line` with every control character (ESC, BEL, CR, a newline inside it …) and every
    /// invisible reordering character shown as U+FFFD (`TextTable.sanitized`); only the newline
    /// that ends it is kept, so a value cannot split one sentence over two lines or fake another.
    static func terminalLine(_ line: String) -> String {
        let ended = line.unicodeScalars.last == "\n"
        let body = ended ? String(String.UnicodeScalarView(line.unicodeScalars.dropLast())) : line
        return TextTable.sanitized(body) + (ended ? "\n" : "")
    }

    /// Writes every byte, retrying short and interrupted writes. False (with errno) on failure.
    static func writeAll(_ fd: Int32, _ text: String) -> Bool {
        writeAll(fd, Array(text.utf8))
    }

    static func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        let code = OutputFileFailure.writeAll(fd, bytes)
        if code != 0 { errno = code }
        return code == 0
    }
}

/// Options every read command shares.
enum CommonOptions {
    static let format = OptionSpec.value("--format", "-f", valueName: "format", help: "Output format.",
                                         allowed: PlainFormats.names, default: TextFormat.name)
    /// `--format` of the commands whose answer is findings: also SARIF 2.1.0, for code review and CI.
    static let formatWithSARIF = OptionSpec.value("--format", "-f", valueName: "format",
                                                  help: "Output format (sarif: SARIF 2.1.0 for code scanning, docs/sarif.md).",
                                                  allowed: FindingsFormats.names, default: TextFormat.name)
    /// `--format` for commands that also have a Markdown view (sized for a support ticket).
    static let formatWithMarkdown = OptionSpec.value("--format", "-f", valueName: "format", help: "Output format.",
                                                     allowed: DocumentFormats.names, default: TextFormat.name)
    static let keepScratch = OptionSpec.flag("--keep-scratch",
                                             help: "Keep the private working folder with the copies storelens read, and print where it is.")
    static let rollBackJournal = OptionSpec.flag("--roll-back-journal",
                                                 help: "Read a store with a hot -journal by rolling it back in the working copy (the original is never changed).")
    static let copy = OptionSpec.flag("--copy",
                                      help: "Copy each store into the private working folder and read the copy, instead of reading it where it lies through storelens's read-only SQLite VFS (needs free space for the stores' size; docs/safety.md).")
    static let store = OptionSpec.value("--store", valueName: "path",
                                        help: "When the input holds several stores, use the one whose path ends with this.")
    static let maxExtractBytes = OptionSpec.value("--max-extract-bytes", valueName: "bytes",
                                                  help: "Stop if more than this would be extracted from an archive in total.", default: "17179869184")
    static let maxEntryBytes = OptionSpec.value("--max-entry-bytes", valueName: "bytes",
                                                help: "Stop at an archive entry larger than this.", default: "8589934592")
    static let maxRatio = OptionSpec.value("--max-ratio", valueName: "ratio",
                                           help: "Stop when archive data expands more than this many times (a decompression bomb).", default: "1000")
    static let readDamaged = OptionSpec.flag("--read-damaged",
                                             help: "Read what a damaged archive (cut off, failing its checksum, bytes after its end) still holds instead of stopping; the damage is printed as a warning and check lists it as archive-damaged.")
    static let maxEntries = OptionSpec.value("--max-entries", valueName: "count",
                                             help: "Stop after this many archive entries.", default: "2000000")

    static let passwordFile = OptionSpec.value("--password-file", valueName: "file",
                                               help: "An encrypted backup's password, read from this file, named pipe or <(pass show backup) (one trailing newline is dropped; a pipe is waited for at most 30 s). Without it: the STORELENS_BACKUP_PASSWORD variable, else a prompt when stdin is a terminal; never a plain command-line value.")

    /// `--tz`: the zone people read dates in; JSON stays UTC (docs/json-output.md).
    static let timeZone = OptionSpec.value("--tz", valueName: "zone",
                                           help: "Show dates in this IANA time zone (Europe/Berlin, America/New_York) in text, CSV, Markdown and HTML, with their offset; JSON stays ISO 8601 UTC.",
                                           default: "UTC")

    /// The zone `--tz` names (UTC when the command has no --tz).
    static func displayZone(_ parsed: ParsedArguments) throws(ParseError) -> DisplayZone {
        guard let name = parsed.valueIfOffered("--tz") else { return .utc }
        guard let zone = DisplayZone(identifier: name) else {
            throw .invalid("The value '\(name)' is invalid for '--tz'; give an IANA time zone name such as Europe/Berlin or America/New_York (default UTC).")
        }
        return zone
    }

    /// `--raw-csv` for the commands whose only spreadsheet format is csv (rows has its own, with tsv).
    static let rawCSV = OptionSpec.flag("--raw-csv", help: "With --format csv: write cells exactly as stored; by default control characters are written as \\u001b-style escapes (a backslash as \\\\) and a cell a spreadsheet would run as a formula gets a leading ' (docs/rows.md).")

    /// `--raw-csv`, refused with any format but csv.
    static func rawCSV(_ parsed: ParsedArguments, csv: Bool) throws(ParseError) -> Bool {
        let raw = parsed.flagIfOffered("--raw-csv")
        if raw && !csv { throw .invalid("--raw-csv is for --format csv; the other formats escape by their own rules (JSON's) or are for a terminal.") }
        return raw
    }

    /// `--fail-on` of the commands that report findings: the exit decision.
    static let failOn = OptionSpec.value("--fail-on", valueName: "severity", help: "Exit with 1 when a finding is at least this severe.",
                                         allowed: Finding.Severity.allCases.reversed().map(\.rawValue), default: Finding.Severity.error.rawValue)

    /// The severity `--fail-on` names (its values are checked while parsing).
    static func failOn(_ parsed: ParsedArguments) -> Finding.Severity {
        parsed.valueIfOffered("--fail-on").flatMap(Finding.Severity.init(rawValue:)) ?? .error
    }

    static let quiet = OptionSpec.flag("--quiet", "-q", help: "Show no progress line (one is shown on stderr only when stderr is a terminal).")

    /// The options every command that reads stores accepts, in help order.
    static let input: [OptionSpec] = [store, keepScratch, copy, rollBackJournal, passwordFile, maxExtractBytes, maxEntryBytes, maxRatio, maxEntries,
                                      readDamaged, quiet]
}

/// What every reading command takes from the input options.
struct InputSettings {
    /// The one store of `path` for commands that read a single store (`EvidenceSession.singleStore`).
    func singleStore(_ path: String, in session: EvidenceSession) throws -> AcquiredStore {
        try session.singleStore(path, options)
    }

    /// The one store of `path`, which may be a Core Data XML or binary store (`rows`, `export`).
    func singleStoreOrAtomic(_ path: String, in session: EvidenceSession) throws -> SingleStore {
        try session.singleStoreOrAtomic(path, options)
    }

    let select: String?
    let keepScratch: Bool
    /// What the operations take of these settings, and what the session `Storelens.reading` opens
    /// for a command is made with: the password source, `--keep-scratch`, warnings on stderr (a
    /// damaged archive read on request, a store another process has open, are never read silently).
    var options: Storelens.InputOptions {
        Storelens.InputOptions(store: select, open: open, limits: limits, backupPassword: BackupPasswordSource.implied(passwordFile: passwordFile),
                               keepScratch: keepScratch, warn: { Output().error("warning: \($0).\n") })
    }
    let open: OpenOptions
    let limits: ArchiveLimits
    /// `--password-file`, when given (the password itself is read only if an encrypted backup is met).
    let passwordFile: String?

    /// With `--keep-scratch`, says where the private working folder was kept, or that nothing
    /// needed one (every store was read in place).
    func tellKeptScratch(of session: EvidenceSession, to output: Output) {
        guard keepScratch else { return }
        output.error(session.scratch.exists ? "Working copies kept in \(session.scratch.url.path)\n"
                                            : "No working folder was needed: every store was read where it lies (--copy makes copies to keep)\n")
    }

    /// A session made as `Storelens.reading` makes it: each input's of a batch (which
    /// `BatchEvidence.reading` ends), and `report`'s, which `Storelens.report` finishes; every
    /// other command reads through `Storelens.reading`.
    func makeSession() throws -> EvidenceSession {
        try Storelens.session(options)
    }

    init(_ parsed: ParsedArguments) throws(ParseError) {
        select = parsed.valueIfOffered("--store")
        passwordFile = parsed.valueIfOffered("--password-file")
        keepScratch = parsed.flagIfOffered("--keep-scratch")
        open = OpenOptions(rollBackJournal: parsed.flagIfOffered("--roll-back-journal"),
                           copyEvidence: parsed.flagIfOffered("--copy") || OpenOptions.copyByDefault)
        var limits = ArchiveLimits()
        func number(_ name: String) throws(ParseError) -> Int64? {
            guard let text = parsed.valueIfOffered(name) else { return nil }
            guard let value = Int64(text), value > 0 else { throw .invalid("The value '\(text)' is invalid for '\(name)'; give a positive whole number.") }
            return value
        }
        if let v = try number("--max-extract-bytes") { limits.maxExtractedBytes = v }
        if let v = try number("--max-entry-bytes") { limits.maxEntryBytes = v }
        if let v = try number("--max-ratio") { limits.maxCompressionRatio = Double(v) }
        if let v = try number("--max-entries") { limits.maxEntries = Int(v) }
        limits.readDamaged = parsed.flagIfOffered("--read-damaged")
        self.limits = limits
    }
}
