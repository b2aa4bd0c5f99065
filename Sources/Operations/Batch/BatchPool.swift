import CoreDataStore
import Dispatch
import Foundation
import StoreFormats

/// The jobs of one batch run: `jobs` threads each take the next input, run its job with an
/// evidence session of its own, and append its line; the first line the results cannot take
/// stops the pool (no job starts after it) and is what `run` throws.
final class BatchPool: @unchecked Sendable {
    private let todo: [String]
    private let options: Storelens.BatchOptions
    private let results: BatchResultsFile
    private let events: @Sendable (Storelens.BatchEvent) -> Void
    private let job: Storelens.BatchJob

    private let lock = NSLock()
    private var nextIndex = 0
    private var failure: BatchResultsFailure?
    private(set) var exitCodes: [Int32] = []
    private(set) var statusCounts: [BatchLine.Status: Int] = [:]

    init(_ todo: [String], _ options: Storelens.BatchOptions, results: BatchResultsFile,
         events: @escaping @Sendable (Storelens.BatchEvent) -> Void, job: @escaping Storelens.BatchJob) {
        self.todo = todo
        self.options = options
        self.results = results
        self.events = events
        self.job = job
    }

    /// Runs every job; returns the pool with what finished (`exitCodes`, `statusCounts`).
    func run() throws(BatchResultsFailure) -> BatchPool {
        let progress = ProgressReporter.current
        let workers = min(max(1, options.jobs), max(1, todo.count))
        // Task-local values stay on the thread that bound them: each worker binds --tz again.
        let zone = DisplayZone.current
        if !todo.isEmpty {
            DispatchQueue.concurrentPerform(iterations: workers) { _ in
                while let index = next() {
                    let input = todo[index]
                    let line = DisplayZone.$current.withValue(zone) {
                        ProgressReporter.silent.bind { runOne(input) }
                    }
                    progress.clear()
                    if let failure = results.append(line.json().rendered(pretty: false)) {
                        stop(failure)
                        return
                    }
                    let finished = finish(line)
                    events(.lineWritten(line, done: finished, total: todo.count))
                    progress.report("\(options.command) batch", done: Int64(finished), total: Int64(todo.count), unit: .items("inputs"))
                }
            }
        }
        progress.clear()
        if let failure { throw failure }
        return self
    }

    /// One job, its errors turned into the line's `error` as the command would print them.
    private func runOne(_ input: String) -> BatchLine {
        let evidence = Storelens.BatchEvidence(input: input, makeSession: options.makeSession)
        let started = Date()
        let stopwatch = Stopwatch()
        var line = BatchLine(command: options.command, input: input)
        line.host = options.host
        line.toolVersion = options.toolVersion
        line.startedAt = started
        do {
            let outcome = try job(input, evidence)
            line.exitCode = outcome.exitCode
            line.summary = outcome.summary
            line.findings = outcome.findings
            line.error = outcome.error
            line.status = outcome.error != nil ? .error : outcome.exitCode == 0 ? .ok : outcome.exitCode == 1 ? .findings : .error
        } catch {
            let described = Storelens.describe(error)
            line.exitCode = described.exitCode
            line.status = .error
            line.error = described.sentence
        }
        line.sha256 = evidence.sha256
        line.seconds = stopwatch.seconds
        return line
    }

    /// The index of the next input to run; nil when none is left or the results failed.
    private func next() -> Int? {
        lock.lock(); defer { lock.unlock() }
        guard failure == nil, nextIndex < todo.count else { return nil }
        nextIndex += 1
        return nextIndex - 1
    }

    private func stop(_ failure: BatchResultsFailure) {
        lock.lock(); defer { lock.unlock() }
        if self.failure == nil { self.failure = failure }
    }

    /// Records a line written; returns how many have been.
    private func finish(_ line: BatchLine) -> Int {
        lock.lock(); defer { lock.unlock() }
        exitCodes.append(line.exitCode)
        statusCounts[line.status, default: 0] += 1
        return exitCodes.count
    }
}
