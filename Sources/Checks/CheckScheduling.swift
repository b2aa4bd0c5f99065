import Acquisition
import CoreDataStore
import Findings
import Foundation
import SQLiteAccess
import StoreFormats

/// The checks still to run and the results so far, shared by the two threads.
final class CheckQueue: @unchecked Sendable {
    private let lock = NSLock()
    private let tasks: [StoreChecker.Task]
    /// Indices into `tasks`, slowest first.
    private var pending: [Int]
    private var outcomes: [Result<[Finding], Error>?]
    private var started: Int64 = 0
    /// How long each task took and on which connection, for `STORELENS_TIMINGS` (make bench).
    private(set) var timings: [(task: String, connection: Int, duration: Duration)] = []
    let progress: ProgressReporter

    init(tasks: [StoreChecker.Task], progress: ProgressReporter) {
        self.tasks = tasks
        self.progress = progress
        pending = tasks.indices.sorted { tasks[$0].cost > tasks[$1].cost }
        outcomes = Array(repeating: nil, count: tasks.count)
    }

    /// Runs tasks on `checker` until none is left that this connection may run.
    func drain(with checker: StoreChecker, firstConnection: Bool) {
        let clock = ContinuousClock()
        while let index = take(firstConnection: firstConnection) {
            var outcome: Result<[Finding], Error>!
            let took = clock.measure { outcome = Result { try tasks[index].body(checker) } }
            // A table SQLite cannot read here (a virtual table whose module or tokenizer only
            // Apple's frameworks register) stops this check, not the others: it is reported.
            if case .failure(let error as SQLiteError) = outcome, !(error.isCorrupt || error.isNotADatabase) {
                outcome = .success([StoreChecker.incomplete(task: tasks[index].name, error: error, store: checker.opened.displayPath)])
            }
            lock.lock()
            outcomes[index] = outcome
            timings.append((tasks[index].name, firstConnection ? 1 : 2, took))
            lock.unlock()
        }
    }

    private func take(firstConnection: Bool) -> Int? {
        lock.lock()
        defer { lock.unlock() }
        guard let at = pending.firstIndex(where: { firstConnection || !tasks[$0].firstConnectionOnly }) else { return nil }
        let index = pending.remove(at: at)
        started += 1
        progress.report("checking \(tasks[index].name)", done: started, total: Int64(tasks.count), unit: .step)
        return index
    }

    /// Every task that ran with its outcome, in task order.
    func finished() -> [(StoreChecker.Task, Result<[Finding], Error>)] {
        lock.lock()
        defer { lock.unlock() }
        return zip(tasks, outcomes).compactMap { task, outcome in outcome.map { (task, $0) } }
    }

    /// Every task's findings in task order; the first error (in task order) is thrown.
    func results() throws -> [[Finding]] {
        lock.lock()
        defer { lock.unlock() }
        return try outcomes.map { outcome in
            guard let outcome else { return [] }
            return try outcome.get()
        }
    }
}

/// Counts rows meeting single-row conditions, scanning each table once for all of its conditions:
/// stray Z_ENT values, NULL required values, bad Z_OPT and history changes naming unknown entities
/// are all questions about each row of the same large tables. The first check to ask about a
/// table counts every condition registered for it; a check on the other thread asking meanwhile
/// waits for that scan instead of making its own.
final class RowScreen: @unchecked Sendable {
    private let state = NSCondition()
    private var byTable: [String: [InvariantQueries.RowCondition]] = [:]
    private var counts: [InvariantQueries.RowCondition: Int] = [:]
    private var scanning: Set<String> = []
    /// SQLite allows 2,000 result columns by default; a hostile table can have more conditions.
    private static let conditionsPerScan = 200

    init(_ conditions: [InvariantQueries.RowCondition]) {
        for condition in conditions where !(byTable[condition.table]?.contains(condition) ?? false) {
            byTable[condition.table, default: []].append(condition)
        }
    }

    /// How many rows meet `condition`, or nil when it was not registered.
    func count(_ condition: InvariantQueries.RowCondition, on connection: Connection) throws -> Int? {
        state.lock()
        defer { state.unlock() }
        guard let all = byTable[condition.table], all.contains(condition) else { return nil }
        while counts[condition] == nil {
            if scanning.contains(condition.table) {
                state.wait()
                continue
            }
            scanning.insert(condition.table)
            state.unlock()
            let result = Result { try Self.scan(condition.table, all, on: connection) }
            state.lock()
            scanning.remove(condition.table)
            state.broadcast()
            // A failed scan leaves no counts: the caller lists the rows itself and meets the error there.
            guard case .success(let found) = result else { return nil }
            for (c, n) in found { counts[c] = n }
        }
        return counts[condition]
    }

    private static func scan(_ table: String, _ conditions: [InvariantQueries.RowCondition],
                             on connection: Connection) throws -> [InvariantQueries.RowCondition: Int] {
        var found: [InvariantQueries.RowCondition: Int] = [:]
        var start = 0
        while start < conditions.count {
            let group = Array(conditions[start..<min(start + conditionsPerScan, conditions.count)])
            let columns = group.map { "count(*) FILTER (WHERE \($0.condition))" }.joined(separator: ", ")
            let row = try connection.rows("SELECT \(columns) FROM \(Identifier.quoted(table)) NOT INDEXED").first
            for (i, c) in group.enumerated() { found[c] = row?[i].int ?? 0 }
            start += group.count
        }
        return found
    }
}

/// One piece of work per table, on two connections at once when a second can be had: the
/// integrity task's comparison of each table the `-wal` changed with its indexes is the longest
/// part of `check` on a large store, and the other checks leave the second core idle long
/// before it ends. Results come back in `tables`' order, whichever connection read a table.
enum TableWork {
    static func each<T>(_ tables: [String], on first: Connection, second: (() throws -> Connection)?,
                        _ body: @escaping @Sendable (Connection, String) -> T) -> [T] {
        guard tables.count > 1, let opened = try? second?() else { return tables.map { body(first, $0) } }
        let shared = Shared<T>(tables: tables, connection: opened)
        let done = DispatchSemaphore(value: 0)
        let worker = Thread { [shared] in
            // Only this thread uses the second connection, and lets go of it before it signals.
            if let connection = shared.connection {
                while let index = shared.take() { shared.put(index, body(connection, tables[index])) }
            }
            shared.connection = nil
            done.signal()
        }
        worker.name = "storelens.check-tables"
        worker.start()
        while let index = shared.take() { shared.put(index, body(first, tables[index])) }
        done.wait()
        return shared.results()
    }

    private final class Shared<T>: @unchecked Sendable {
        private let lock = NSLock()
        private var next = 0
        private var slots: [T?]
        /// The second connection, for the worker thread alone.
        var connection: Connection?
        init(tables: [String], connection: Connection) {
            slots = Array(repeating: nil, count: tables.count)
            self.connection = connection
        }
        func take() -> Int? {
            lock.lock(); defer { lock.unlock() }
            guard next < slots.count else { return nil }
            next += 1
            return next - 1
        }
        func put(_ index: Int, _ value: T) {
            lock.lock(); defer { lock.unlock() }
            slots[index] = value
        }
        func results() -> [T] {
            lock.lock(); defer { lock.unlock() }
            return slots.map { $0! }
        }
    }
}
