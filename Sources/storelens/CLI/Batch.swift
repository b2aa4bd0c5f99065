import Findings
import Foundation
import Operations
import Reports
import StoreFormats

/// Batch mode's options, shared by every read command that has it (scan, inspect, check, audit,
/// report): each input is an independent job with its own evidence session, jobs run `--jobs N`
/// at a time, and each finished job appends one JSON line to `--jsonl FILE` (docs/batch.md). The
/// batch itself is the library's (`Storelens.batch`); here are its options, its closing line on
/// stderr and its exit code.
enum BatchOptions {
    static let jsonl = OptionSpec.value("--jsonl", valueName: "file",
                                        help: "Batch mode: run every input on its own and append one JSON line per input to this file (- for stdout); see docs/batch.md.")
    static let jobs = OptionSpec.value("--jobs", "-j", valueName: "n", help: "With --jsonl: how many inputs to read at once.", default: "1")
    static let resume = OptionSpec.flag("--resume", help: "With --jsonl: skip inputs that already have a line in the file.")
    static let each = OptionSpec.flag("--each", help: "With --jsonl: every entry of a folder given is a separate input (a folder of tickets' archives and containers).")
    static let shard = OptionSpec.value("--shard", valueName: "k/n",
                                        help: "With --jsonl: run only shard K of N (counted from 1), split by a hash of each input's path; auto reads a Kubernetes Indexed Job's or Slurm array's index (docs/scale-out.md).")

    static let all: [OptionSpec] = [jsonl, jobs, resume, each, shard]
}

/// What `--jsonl`, `--jobs`, `--resume` and `--each` asked for.
struct BatchSettings: Sendable {
    let file: String
    let jobs: Int
    let resume: Bool
    let each: Bool
    /// `--shard`: this process's share of the inputs; nil runs them all.
    var shard: BatchShard? = nil

    /// nil when `--jsonl` is not given (then `--jobs`, `--resume`, `--each` and `--shard` are usage errors).
    static func parse(_ parsed: ParsedArguments) throws(ParseError) -> BatchSettings? {
        let jobsText = parsed.valueIfOffered("--jobs") ?? "1"
        guard let jobs = Int(jobsText), jobs >= 1, jobs <= 256 else {
            throw .invalid("The value '\(jobsText)' is invalid for '--jobs'; give a whole number from 1 to 256.")
        }
        guard let file = parsed.valueIfOffered("--jsonl") else {
            if jobs != 1 { throw .invalid("--jobs runs a batch; add --jsonl FILE for the results (one JSON line per input).") }
            if parsed.flagIfOffered("--resume") { throw .invalid("--resume continues a batch; add --jsonl FILE, the results file to continue.") }
            if parsed.flagIfOffered("--each") { throw .invalid("--each runs a batch over a folder's entries; add --jsonl FILE for the results.") }
            if parsed.valueIfOffered("--shard") != nil { throw .invalid("--shard runs a share of a batch; add --jsonl FILE for the results (one JSON line per input).") }
            return nil
        }
        guard !file.isEmpty else { throw .invalid("--jsonl needs a file name (or - for stdout).") }
        if file == "-" && parsed.flagIfOffered("--resume") { throw .invalid("--resume reads the results file; give --jsonl a file, not -.") }
        var settings = BatchSettings(file: file, jobs: jobs, resume: parsed.flagIfOffered("--resume"), each: parsed.flagIfOffered("--each"))
        if let text = parsed.valueIfOffered("--shard") {
            do { settings.shard = try BatchShard.parse(text, environment: ProcessInfo.processInfo.environment) } catch { throw .invalid(error.description) }
        }
        return settings
    }
}

/// What a job returns, its exit code the command's (the library's line takes its number).
typealias BatchOutcome = Storelens.BatchOutcome

extension Storelens.BatchOutcome {
    init(exitCode: ExitCode, summary: JSONValue, findings: [Finding] = [], error: String? = nil) {
        self.init(exitCode: exitCode.rawValue, summary: summary, findings: findings, error: error)
    }
}

enum Batch {
    /// The library's options for `command`'s batch: each input's session made as the command
    /// makes its own (its password source and warnings).
    static func options(_ command: String, _ settings: BatchSettings, input: InputSettings) -> Storelens.BatchOptions {
        Storelens.BatchOptions(command: command, results: settings.file, jobs: settings.jobs, resume: settings.resume, each: settings.each,
                               shard: settings.shard, toolVersion: RootCommand.version, makeSession: { try input.makeSession() })
    }

    /// Runs `job` for every input (`Storelens.batch`), then says how the batch went.
    static func run(command: String, inputs: [String], settings: BatchSettings, input: InputSettings, output: Output,
                    job: @escaping Storelens.BatchJob) throws -> ExitCode {
        try finish(command, settings, output) { events in
            try Storelens.batch(inputs, options(command, settings, input: input), events: events, job: job)
        }
    }

    /// What the command makes of a batch `body` runs: a warning for a cut-off line set aside, one
    /// line on stderr summing the batch up, and the worst exit code of every input, skipped ones
    /// included. Results that stop taking lines end the process as any results that cannot be
    /// written do (`Output.stop`): exit 3 with the sentence, or quietly 141 when the reader of
    /// standard output went away.
    static func finish(_ command: String, _ settings: BatchSettings, _ output: Output,
                       _ body: (_ events: @escaping @Sendable (Storelens.BatchEvent) -> Void) throws -> Storelens.BatchRun) throws -> ExitCode {
        let events: @Sendable (Storelens.BatchEvent) -> Void = { event in
            guard case .partialLineSetAside(let path, let bytes) = event else { return }
            output.error("warning: the last line of \(TextTable.sanitized(settings.file)) was cut off (\(bytes) bytes, from a run stopped mid-write); it was moved to \(TextTable.sanitized(path)) so the results stay one JSON object per line, and its input runs again.\n")
        }
        let run: Storelens.BatchRun
        do {
            run = try body(events)
        } catch let failure as BatchResultsFailure {
            if failure.readerGone { Output.stop(Output.readerGoneStatus) }
            Output.stop(Output.writeFailedStatus, saying: failure.sentence)
        }
        var summary = "\(command) batch: \(plural(run.inputs, "input"))"
        if let shard = settings.shard { summary += " (shard \(shard) of \(run.allInputs))" }
        summary += "; ran \(run.ran) "
        summary += "(\(run.ok) ok, \(run.findings) with findings, \(run.failed) failed)"
        summary += " with \(plural(settings.jobs, "job"))"
        summary += "; skipped \(run.skipped) already done"
        summary += settings.file == "-" ? ".\n" : "; results in \(TextTable.sanitized(settings.file)).\n"
        output.error(summary)
        return ExitCode(rawValue: run.exitCode) ?? .internalError
    }
}
