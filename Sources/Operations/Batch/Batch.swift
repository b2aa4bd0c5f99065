import Acquisition
import CoreDataStore
import Dispatch
import Findings
import Foundation
import StoreFormats

extension Storelens {
    /// What a batch takes besides its inputs and its job: what `--jsonl`, `--jobs`, `--resume`,
    /// `--each` and `--shard` ask for (docs/batch.md).
    public struct BatchOptions: Sendable {
        /// The command each line names (`scan`, `audit` …); `resume` skips only its inputs.
        public var command: String
        /// The results file, appended to (made if missing), or `-` for standard output (whose
        /// reader going away is `BatchResultsFailure.readerGone` where `SIGPIPE` is ignored, as
        /// the command ignores it; otherwise the signal ends the process).
        public var results: String
        /// How many inputs are read at once (at least one).
        public var jobs: Int
        /// Skip the inputs that already have a line of `command` in `results` (a file, not `-`).
        public var resume: Bool
        /// A folder given is a folder of inputs: each of its entries is an input of its own.
        public var each: Bool
        /// This process's share of the inputs (`BatchShard.parse` reads `--shard auto`'s
        /// environment; the batch reads none); nil runs them all.
        public var shard: BatchShard?
        /// Each line's `storelensVersion`.
        public var toolVersion: String?
        /// Each line's `host`: by default this machine's name.
        public var host: String
        /// Makes each input's evidence session (the command's, `Storelens.session`: its password
        /// source and warnings); `BatchEvidence.reading` ends it.
        public var makeSession: @Sendable () throws -> EvidenceSession

        public init(command: String, results: String, jobs: Int = 1, resume: Bool = false, each: Bool = false, shard: BatchShard? = nil,
                    toolVersion: String? = nil, host: String = ProcessInfo.processInfo.hostName,
                    makeSession: @escaping @Sendable () throws -> EvidenceSession = { try EvidenceSession() }) {
            self.command = command
            self.results = results
            self.jobs = jobs
            self.resume = resume
            self.each = each
            self.shard = shard
            self.toolVersion = toolVersion
            self.host = host
            self.makeSession = makeSession
        }
    }

    /// What one input's job found, before it becomes its line.
    public struct BatchOutcome: Sendable {
        /// The input's exit code, as the command run on it alone gives it: 0 nothing to report, 1
        /// findings (at or above the command's threshold), 2 the input could not be read in full,
        /// 3 storelens' own failure (docs/exit-codes.md).
        public var exitCode: Int32
        /// The line's `summary`: the few numbers that let a batch be sorted and grepped (Reports
        /// has each command's, `ScanReport.batchSummary` …).
        public var summary: JSONValue
        public var findings: [Finding]
        /// Set when the input was read only in part (a damaged archive): the line's status is `error`.
        public var error: String?

        public init(exitCode: Int32, summary: JSONValue, findings: [Finding] = [], error: String? = nil) {
            self.exitCode = exitCode
            self.summary = summary
            self.findings = findings
            self.error = error
        }
    }

    /// One input's work: `input` as given, read through `evidence` (its session, made when the job
    /// asks). An error thrown becomes the line's `error`, worded as the command prints it
    /// (`Storelens.describe`).
    public typealias BatchJob = @Sendable (_ input: String, _ evidence: BatchEvidence) throws -> BatchOutcome

    /// What happens while a batch runs, for a caller that shows it.
    public enum BatchEvent: Sendable {
        /// `resume` found the results file's last line cut off (a run stopped mid-write) and moved
        /// it, `bytes` long, into the new file `path`, so every line of the results is JSON again;
        /// its input runs again. Sent before any job runs.
        case partialLineSetAside(path: String, bytes: Int)
        /// An input's line was appended: `done` of the `total` inputs this run reads.
        case lineWritten(BatchLine, done: Int, total: Int)
    }

    /// What a batch did: the facts of the command's closing line, and its exit code.
    public struct BatchRun: Sendable, Equatable {
        /// This run's inputs: every input given (folders' entries with `each`), less the results
        /// file, or this shard's share of them; an input given twice counts twice.
        public var inputs: Int
        /// Every input before the shard's share was taken.
        public var allInputs: Int
        /// The inputs read this time (each once), and how they ended.
        public var ran: Int
        public var ok: Int
        public var findings: Int
        public var failed: Int
        /// The inputs skipped because they have a line already (`resume`).
        public var skipped: Int
        /// The worst exit code of every input, skipped ones included (their lines' codes); 0
        /// when there were none.
        public var exitCode: Int32
    }

    /// Runs `job` for every input of `inputs` (each folder's entries with `options.each`; this
    /// shard's share with `options.shard`) that has no line yet (`options.resume`), `options.jobs`
    /// at a time, and appends one JSON line per input to `options.results` (`BatchLine`), whole
    /// and under `flock`, so several processes may share the file. One input that fails never
    /// stops the batch: its line records the error. Progress goes to `ProgressReporter.current`;
    /// `events` hears of a cut-off line set aside and of each line written (from the jobs' threads).
    ///
    /// Throws before any job runs when the results file cannot be opened or a folder cannot be
    /// listed (`InputError`); and `BatchResultsFailure` when the results stop taking lines (a full
    /// disk, a reader of standard output gone): the jobs running then finish, no other starts,
    /// and the batch has lines missing, which `resume` runs again.
    public static func batch(_ inputs: [String], _ options: BatchOptions, events: @escaping @Sendable (BatchEvent) -> Void = { _ in },
                             job: @escaping BatchJob) throws -> BatchRun {
        // The results file may sit in the folder of inputs: it is never an input itself.
        let resultsPath = options.results == "-" ? nil : URL(fileURLWithPath: options.results).standardizedFileURL.path
        let all = try batchInputs(inputs, each: options.each).filter {
            URL(fileURLWithPath: $0).standardizedFileURL.path != resultsPath
        }
        // Every shard lists the same inputs and keeps its own share of them.
        let selected = options.shard?.select(all) ?? all
        let results = try BatchResultsFile(path: options.results)
        defer { results.close() }
        let done = options.resume ? results.resumed(command: options.command, events: events) : [:]
        var skippedCodes: [Int32] = []
        var todo: [String] = []
        var seen = Set<String>()
        for input in selected where seen.insert(input).inserted {
            if let code = done[input] { skippedCodes.append(code) } else { todo.append(input) }
        }
        let state = try BatchPool(todo, options, results: results, events: events, job: job).run()
        let codes = state.exitCodes + skippedCodes
        let counts = state.statusCounts
        return BatchRun(inputs: selected.count, allInputs: all.count, ran: todo.count, ok: counts[.ok, default: 0],
                        findings: counts[.findings, default: 0], failed: counts[.error, default: 0], skipped: skippedCodes.count,
                        exitCode: codes.max() ?? 0)
    }

    /// The inputs of a batch: `paths`, with each folder replaced by its entries when `each` (not
    /// hidden ones, nor a store's `-wal`, `-shm` or `-journal`, which go with it), sorted by name.
    public static func batchInputs(_ paths: [String], each: Bool) throws -> [String] {
        guard each else { return paths }
        var result: [String] = []
        for path in paths {
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

    /// One input's evidence session, made when its job asks for it (`reading`): what a job checks
    /// before reading (a report that is in the way) fails the input without hashing it.
    public final class BatchEvidence: @unchecked Sendable {
        public let input: String
        private let makeSession: @Sendable () throws -> EvidenceSession
        private let lock = NSLock()
        private var hash: String?

        init(input: String, makeSession: @escaping @Sendable () throws -> EvidenceSession) {
            self.input = input
            self.makeSession = makeSession
        }

        /// The input's SHA-256 once `reading` recorded it (a file's; nil for a folder).
        public var sha256: String? {
            lock.lock(); defer { lock.unlock() }
            return hash
        }

        /// The input's session, opened and ended as `Storelens.reading` does it: made, it records
        /// `first` in its ledger (a manifest, listed before the input as without a batch), then the
        /// input itself with its SHA-256 when it is a file (a store, an archive), so the line names
        /// it by hash even if reading it fails; then runs `read`, checks the originals unchanged
        /// (unless `read` did), and runs `then` with what was read. The working folder is removed
        /// whatever happens.
        public func reading<T, R>(recordingFirst first: [URL] = [], _ read: (EvidenceSession) throws -> T,
                                  then: (T, EvidenceSession) throws -> R) throws -> R {
            try Storelens.ending(makeSession(), { session in
                if !first.isEmpty { try session.record(first) }
                recordInput(in: session)
                return try read(session)
            }, then: then)
        }

        /// `reading(recordingFirst:_:then:)` with nothing to do after the originals are checked.
        public func reading<T>(recordingFirst first: [URL] = [], _ read: (EvidenceSession) throws -> T) throws -> T {
            try reading(recordingFirst: first, read, then: { result, _ in result })
        }

        private func recordInput(in session: EvidenceSession) {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: input, isDirectory: &isDirectory), !isDirectory.boolValue else { return }
            let url = URL(fileURLWithPath: input)
            guard (try? session.record([url], hash: true)) != nil else { return }
            let sha = session.ledger.entries.first { $0.path == url.path }?.sha256
            lock.lock(); hash = sha; lock.unlock()
        }
    }
}
