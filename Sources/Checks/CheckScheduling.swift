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
/// stray Z_ENT values, NULL required values, bad Z_OPT, to-one keys whose target is missing or of
/// another entity, history changes naming unknown entities or transactions are all questions about
/// each row of the same large tables (a condition's lookup is one more join of that scan). The
/// first check to ask about a table counts every condition registered for it; a check on the other
/// thread asking meanwhile waits for that scan instead of making its own.
///
/// The integrity task compares each table the `-wal` changed with its indexes, which needs the
/// same rows again (`IndexAgreement.TableSide`): for such a table the scan sums the index side
/// too, in the same statement, so the table is read once for both, by whichever thread asks first.
final class RowScreen: @unchecked Sendable {
    private let state = NSCondition()
    private var byTable: [String: [InvariantQueries.RowCondition]] = [:]
    private var counts: [InvariantQueries.RowCondition: Int] = [:]
    private var sides: [String: IndexAgreement.TableSide] = [:]
    private var scanning: Set<String> = []
    private var scanned: Set<String> = []
    /// The tables whose index side the integrity task will want (computed once, by the first scan).
    private let agreementTables: Deferred<[String]?>
    /// SQLite allows 2,000 result columns by default; a hostile table can have more conditions.
    private static let conditionsPerScan = 200

    init(_ conditions: [InvariantQueries.RowCondition], agreementTables: Deferred<[String]?> = Deferred(nil)) {
        self.agreementTables = agreementTables
        for condition in conditions where !(byTable[condition.table]?.contains(condition) ?? false) {
            byTable[condition.table, default: []].append(condition)
        }
    }

    /// How many rows meet `condition`, or nil when it was not registered.
    func count(_ condition: InvariantQueries.RowCondition, on connection: Connection) throws -> Int? {
        guard byTable[condition.table]?.contains(condition) ?? false else { return nil }
        scan(condition.table, on: connection)
        state.lock()
        defer { state.unlock() }
        // A failed scan leaves no counts: the caller lists the rows itself and meets the error there.
        return counts[condition]
    }

    /// Whether the screen's scan of `table` also reads its index side.
    func reads(_ table: String) -> Bool {
        byTable[table] != nil && agreementTables.wrappedValue?.contains(table) ?? false
    }

    /// The index side of `table` from the screen's scan, or nil when the screen does not scan it
    /// (no condition about its rows) or could not read it.
    func tableSide(_ table: String, on connection: Connection) -> IndexAgreement.TableSide? {
        guard reads(table) else { return nil }
        scan(table, on: connection)
        state.lock()
        defer { state.unlock() }
        return sides[table]
    }

    /// Scans `table` once, here or on the thread already scanning it.
    private func scan(_ table: String, on connection: Connection) {
        state.lock()
        defer { state.unlock() }
        while !scanned.contains(table) {
            if scanning.contains(table) {
                state.wait()
                continue
            }
            scanning.insert(table)
            state.unlock()
            let all = byTable[table] ?? []
            let result = Result { try Self.scan(table, all, agreement: reads(table), on: connection) }
            state.lock()
            scanning.remove(table)
            scanned.insert(table)
            if case .success(let found) = result {
                for (c, n) in found.counts { counts[c] = n }
                sides[table] = found.side
            }
            state.broadcast()
        }
    }

    private static func scan(_ table: String, _ conditions: [InvariantQueries.RowCondition], agreement: Bool,
                             on connection: Connection) throws -> (counts: [InvariantQueries.RowCondition: Int], side: IndexAgreement.TableSide?) {
        var found: [InvariantQueries.RowCondition: Int] = [:]
        var side = agreement ? try? IndexAgreement.TableSide(connection, table: table) : nil
        if side?.hasIndexes == false { side = nil }
        var start = 0
        while start < conditions.count {
            let group = Array(conditions[start..<min(start + conditionsPerScan, conditions.count)])
            var lookups: [InvariantQueries.Lookup] = []
            for lookup in group.flatMap(\.lookups) where !lookups.contains(lookup) { lookups.append(lookup) }
            let from = InvariantQueries.RowCondition.from(table, lookups)
            var columns = group.map { "count(*) FILTER (WHERE \($0.condition))" }
            // The first scan also sums the index side, when SQLite reads the table from its own b-tree.
            if start == 0, let reading = side {
                let sql = "SELECT \((columns + reading.aggregates(alias: "s")).joined(separator: ", ")) FROM \(from)"
                if try IndexAgreement.TableSide.scansTable(connection, sql, alias: "s") { columns += reading.aggregates(alias: "s") } else { side = nil }
            }
            let row = try connection.rows("SELECT \(columns.joined(separator: ", ")) FROM \(from)").first
            for (i, c) in group.enumerated() { found[c] = row?[i].int ?? 0 }
            if start == 0, var reading = side {
                side = row.map { reading.take($0.values.dropFirst(group.count)) } == true ? reading : nil
            }
            start += group.count
        }
        return (found, side)
    }
}

/// One piece of work per table, on two connections at once when a second can be had: the
/// integrity task's comparison of each table the `-wal` changed with its indexes is the longest
/// part of `check` on a large store, and the other checks leave the second core idle long
/// before it ends. The largest tables (by `cost`) are taken first, so the last piece of work on
/// either connection is a small one; results come back in `tables`' order, whichever connection
/// read a table.
enum TableWork {
    static func each<T>(_ tables: [String], on first: Connection, second: (() throws -> Connection)?,
                        cost: (String) -> Int = { _ in 0 },
                        _ body: @escaping @Sendable (Connection, String) -> T) -> [T] {
        guard tables.count > 1, let opened = try? second?() else { return tables.map { body(first, $0) } }
        let costs = tables.map(cost)
        let order = tables.indices.sorted { costs[$0] != costs[$1] ? costs[$0] > costs[$1] : $0 < $1 }
        let shared = Shared<T>(order: order, connection: opened)
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
        private let order: [Int]
        private var next = 0
        private var slots: [T?]
        /// The second connection, for the worker thread alone.
        var connection: Connection?
        init(order: [Int], connection: Connection) {
            self.order = order
            slots = Array(repeating: nil, count: order.count)
            self.connection = connection
        }
        func take() -> Int? {
            lock.lock(); defer { lock.unlock() }
            guard next < order.count else { return nil }
            next += 1
            return order[next - 1]
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
