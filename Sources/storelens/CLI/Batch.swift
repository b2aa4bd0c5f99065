import Acquisition
import CoreDataStore
import Dispatch
import Findings
import Foundation
import Operations
import Reports
import StoreFormats

/// Batch mode, shared by every read command that has it (scan, inspect, audit): each input is
/// an independent job with its own evidence session, jobs run `--jobs N` at a time, and each
/// finished job appends one JSON line to `--jsonl FILE` (docs/batch.md). One broken input never
/// stops the batch: its line records the error.
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

/// What one job found, before it becomes a line.
struct BatchOutcome: Sendable {
    var exitCode: ExitCode
    var summary: JSONValue
    var findings: [Finding] = []
    /// Set when the input was read only in part (a damaged archive): the line's status is `error`.
    var error: String?
}

/// Passed to a job so that facts learnt before a failure (the input's hash) reach its line.
final class BatchContext: @unchecked Sendable {
    private let lock = NSLock()
    private var hash: String?
    var sha256: String? {
        get { lock.lock(); defer { lock.unlock() }; return hash }
        set { lock.lock(); hash = newValue; lock.unlock() }
    }

    /// Records the input in `session`'s ledger with its SHA-256 when it is a file (a store file,
    /// an archive), so the line names it by hash even if reading it fails later.
    func hashInput(_ path: String, in session: EvidenceSession) {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue else { return }
        let url = URL(fileURLWithPath: path)
        guard (try? session.record([url], hash: true)) != nil else { return }
        sha256 = session.ledger.entries.first { $0.path == url.path }?.sha256
    }
}

enum Batch {
    typealias Job = @Sendable (_ input: String, _ context: BatchContext) throws -> BatchOutcome

    /// The inputs of a batch: the positionals, with `--each` folders replaced by their entries.
    static func inputs(_ positionals: [String], each: Bool) throws -> [String] {
        guard each else { return positionals }
        var result: [String] = []
        for path in positionals {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue else {
                result.append(path)
                continue
            }
            let names: [String]
            do {
                names = try FileManager.default.contentsOfDirectory(atPath: path)
            } catch {
                throw InputError(message: "\(path): cannot list the folder for --each (\(error.localizedDescription)); check its permissions.")
            }
            let base = path.hasSuffix("/") ? String(path.dropLast()) : path
            let all = Set(names)
            // A store's -wal, -shm and -journal go with it: they are not inputs of their own.
            let sidecar = { (name: String) in ["-wal", "-shm", "-journal"].contains { name.hasSuffix($0) && all.contains(String(name.dropLast($0.count))) } }
            result += names.filter { !$0.hasPrefix(".") && !sidecar($0) }.sorted().map { base + "/" + $0 }
        }
        return result
    }

    /// Runs `job` for every input not already done, `settings.jobs` at a time, appending a line
    /// per input. Returns the worst exit code over every input of the batch, skipped ones included.
    static func run(command: String, inputs positionals: [String], settings: BatchSettings, output: Output, job: @escaping Job) throws -> ExitCode {
        // The results file may sit in the folder of inputs: it is never an input itself.
        let resultsPath = settings.file == "-" ? nil : URL(fileURLWithPath: settings.file).standardizedFileURL.path
        let all = try self.inputs(positionals, each: settings.each).filter {
            URL(fileURLWithPath: $0).standardizedFileURL.path != resultsPath
        }
        // Every shard lists the same inputs and keeps its own share of them.
        let inputs = settings.shard?.select(all) ?? all
        let sink = try BatchSink(path: settings.file, output: output)
        defer { sink.close() }
        var done: [String: Int32] = [:]
        if settings.resume {
            if let partial = sink.setAsidePartialLastLine() {
                output.error("warning: the last line of \(TextTable.sanitized(settings.file)) was cut off (\(partial.bytes) bytes, from a run stopped mid-write); it was moved to \(TextTable.sanitized(partial.path)) so the results stay one JSON object per line, and its input runs again.\n")
            }
            for line in sink.existingLines() {
                guard let key = BatchLine.Key(line: line), key.command == command else { continue }
                done[key.input] = key.exitCode
            }
        }
        var skippedCodes: [Int32] = []
        var todo: [String] = []
        var seen = Set<String>()
        for input in inputs where seen.insert(input).inserted {
            if let code = done[input] { skippedCodes.append(code) } else { todo.append(input) }
        }

        let progress = ProgressReporter.current
        let pending = todo
        let state = BatchState(total: pending.count)
        let host = ProcessInfo.processInfo.hostName
        let workers = min(settings.jobs, max(1, todo.count))
        // Task-local values stay on the thread that bound them: each worker binds --tz again.
        let zone = DisplayZone.current
        if !todo.isEmpty {
            DispatchQueue.concurrentPerform(iterations: workers) { _ in
                while let index = state.next() {
                    let input = pending[index]
                    let line = DisplayZone.$current.withValue(zone) {
                        ProgressReporter.silent.bind { runOne(command: command, input: input, host: host, job: job) }
                    }
                    progress.clear()
                    sink.append(line.json().rendered(pretty: false))
                    let finished = state.finish(line)
                    progress.report("\(command) batch", done: Int64(finished), total: Int64(pending.count), unit: .items("inputs"))
                }
            }
        }
        progress.clear()
        let codes = state.exitCodes + skippedCodes
        let counts = state.statusCounts
        var summary = "\(command) batch: \(plural(inputs.count, "input"))"
        if let shard = settings.shard { summary += " (shard \(shard) of \(all.count))" }
        summary += "; ran \(todo.count) "
        summary += "(\(counts[.ok, default: 0]) ok, \(counts[.findings, default: 0]) with findings, \(counts[.error, default: 0]) failed)"
        summary += " with \(plural(settings.jobs, "job"))"
        summary += "; skipped \(skippedCodes.count) already done"
        summary += settings.file == "-" ? ".\n" : "; results in \(TextTable.sanitized(settings.file)).\n"
        output.error(summary)
        let worst = codes.max() ?? 0
        return ExitCode(rawValue: worst) ?? .internalError
    }

    /// One job, its errors turned into the line's `error` as the command would print them.
    static func runOne(command: String, input: String, host: String, job: Job) -> BatchLine {
        let context = BatchContext()
        let started = Date()
        let stopwatch = Stopwatch()
        var line = BatchLine(command: command, input: input)
        line.host = host
        line.toolVersion = RootCommand.version
        line.startedAt = started
        do {
            let outcome = try job(input, context)
            line.exitCode = outcome.exitCode.rawValue
            line.summary = outcome.summary
            line.findings = outcome.findings
            line.error = outcome.error
            line.status = outcome.error != nil ? .error : outcome.exitCode == .success ? .ok : outcome.exitCode == .findings ? .findings : .error
        } catch {
            let (message, code) = Diagnostics.outcome(error)
            line.exitCode = code.rawValue
            line.status = .error
            line.error = message
        }
        line.sha256 = context.sha256
        line.seconds = stopwatch.seconds
        return line
    }
}

/// Which job runs next, and what finished.
final class BatchState: @unchecked Sendable {
    private let lock = NSLock()
    private var nextIndex = 0
    private let total: Int
    private(set) var exitCodes: [Int32] = []
    private(set) var statusCounts: [BatchLine.Status: Int] = [:]

    init(total: Int) { self.total = total }

    func next() -> Int? {
        lock.lock(); defer { lock.unlock() }
        guard nextIndex < total else { return nil }
        nextIndex += 1
        return nextIndex - 1
    }

    /// Records a finished line; returns how many have finished.
    func finish(_ line: BatchLine) -> Int {
        lock.lock(); defer { lock.unlock() }
        exitCodes.append(line.exitCode)
        statusCounts[line.status, default: 0] += 1
        return exitCodes.count
    }
}

/// The results file: lines are appended whole (one write, under a lock and `flock`), so several
/// storelens processes may append to one file, and a file cut off mid-line stays parseable.
final class BatchSink: @unchecked Sendable {
    private let lock = NSLock()
    private let fd: Int32
    private let output: Output?
    private let path: String

    init(path: String, output: Output) throws {
        self.path = path
        if path == "-" {
            fd = -1
            self.output = output
            return
        }
        self.output = nil
        let fd = open(path, O_RDWR | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            throw InputError(message: "cannot open \(path) for the batch results (\(String(cString: strerror(errno)))); give a writable file.")
        }
        var st = stat()
        guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else {
            _ = Foundation.close(fd)
            throw InputError(message: "\(path) is not a regular file; give --jsonl a file for the batch results.")
        }
        self.fd = fd
    }

    /// A last line without its newline (a run killed mid-write) breaks `jq` on the whole file:
    /// moves it into a new file beside the results (`<file>.partial-N`) and cuts the results file
    /// back to its last whole line. Returns where it went, or nil when the file ends cleanly.
    func setAsidePartialLastLine() -> (path: String, bytes: Int)? {
        guard fd >= 0 else { return nil }
        flock(fd, LOCK_EX)
        defer { flock(fd, LOCK_UN) }
        let size = lseek(fd, 0, SEEK_END)
        guard size > 0 else { return nil }
        // Read back from the end to the last newline, in bounded steps.
        var end = size, tail: [UInt8] = []
        var cut: off_t = 0
        search: while end > 0 {
            let step = min(Int(end), 1 << 16)
            var chunk = [UInt8](repeating: 0, count: step)
            guard pread(fd, &chunk, step, end - off_t(step)) == step else { return nil }
            if end == size, chunk.last == UInt8(ascii: "\n") { return nil }
            for i in stride(from: step - 1, through: 0, by: -1) where chunk[i] == UInt8(ascii: "\n") {
                cut = end - off_t(step) + off_t(i) + 1
                tail = Array(chunk[(i + 1)...]) + tail
                break search
            }
            tail = chunk + tail
            end -= off_t(step)
            guard tail.count <= 64 << 20 else { return nil }   // not a batch results file
        }
        var n = 0
        var aside = path + ".partial"
        var out = open(aside, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
        while out < 0 && errno == EEXIST && n < 1000 {
            n += 1
            aside = path + ".partial-\(n)"
            out = open(aside, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
        }
        guard out >= 0 else { return nil }
        let text = tail + [UInt8(ascii: "\n")]
        let wrote = text.withUnsafeBytes { write(out, $0.baseAddress, $0.count) }
        _ = Foundation.close(out)
        guard wrote == text.count, ftruncate(fd, cut) == 0 else { return nil }
        return (aside, tail.count)
    }

    /// The lines already in the file (for `--resume`).
    func existingLines() -> [String] {
        guard fd >= 0, let text = try? String(contentsOfFile: path, encoding: .utf8) else { return [] }
        return text.split(separator: "\n", omittingEmptySubsequences: true).map(String.init)
    }

    func append(_ line: String) {
        lock.lock()
        defer { lock.unlock() }
        if let output {
            output.write(line + "\n")
            return
        }
        flock(fd, LOCK_EX)
        defer { flock(fd, LOCK_UN) }
        // A line cut off by a killed run must not swallow the next one.
        var text = line + "\n"
        let size = lseek(fd, 0, SEEK_END)
        if size > 0 {
            var last: UInt8 = 0
            if pread(fd, &last, 1, size - 1) == 1, last != UInt8(ascii: "\n") { text = "\n" + text }
        }
        if !Output.writeAll(fd, Array(text.utf8)) {
            // A line that cannot be appended (a full disk) must not leave a batch that looks whole:
            // the run stops as storelens' own failure; `--resume` sets aside a cut-off last line.
            Output.stop(Output.writeFailedStatus, saying: "the batch results file \(TextTable.sanitized(path)) could not be written "
                + "(\(String(cString: strerror(errno)))), so the batch stopped with lines missing; make room for it and run the same command with --resume")
        }
    }

    func close() {
        if fd >= 0 { _ = Foundation.close(fd) }
    }
}
