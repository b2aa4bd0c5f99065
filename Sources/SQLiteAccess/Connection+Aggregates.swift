import CSQLite
import Foundation

/// Reads one value of a row or of a function call by position, the same way for both, so code
/// that turns a value into something (a hash, a cell) takes either.
public protocol ValueReading {
    func storageClass(_ i: Int32) -> RowCursor.StorageClass
    func int64(_ i: Int32) -> Int64
    func double(_ i: Int32) -> Double
    /// Text's UTF-8 bytes as stored (not validated), without a terminator.
    func textBytes(_ i: Int32) -> UnsafeBufferPointer<UInt8>
    func blobBytes(_ i: Int32) -> UnsafeRawBufferPointer
}

extension RowCursor: ValueReading {}

/// The arguments of one call of a function defined with `Connection.defineAggregate`, valid only
/// during that call.
public struct FunctionArguments: ValueReading {
    let values: UnsafeMutablePointer<OpaquePointer?>
    public let count: Int32

    public func storageClass(_ i: Int32) -> RowCursor.StorageClass {
        switch sqlite3_value_type(values[Int(i)]) {
        case SQLITE_INTEGER: return .integer
        case SQLITE_FLOAT: return .real
        case SQLITE_TEXT: return .text
        case SQLITE_BLOB: return .blob
        default: return .null
        }
    }

    public func int64(_ i: Int32) -> Int64 { sqlite3_value_int64(values[Int(i)]) }
    public func double(_ i: Int32) -> Double { sqlite3_value_double(values[Int(i)]) }

    public func textBytes(_ i: Int32) -> UnsafeBufferPointer<UInt8> {
        guard let p = sqlite3_value_text(values[Int(i)]) else { return UnsafeBufferPointer(start: nil, count: 0) }
        return UnsafeBufferPointer(start: p, count: Int(sqlite3_value_bytes(values[Int(i)])))
    }

    public func blobBytes(_ i: Int32) -> UnsafeRawBufferPointer {
        let n = Int(sqlite3_value_bytes(values[Int(i)]))
        guard n > 0, let p = sqlite3_value_blob(values[Int(i)]) else { return UnsafeRawBufferPointer(start: nil, count: 0) }
        return UnsafeRawBufferPointer(start: p, count: n)
    }
}

extension Connection {
    /// Defines an aggregate SQL function on this connection: each group's state starts as
    /// `initial()`, `step` folds in each row's arguments, and `result` gives the group's value.
    /// The work of a pass over a million rows then stays inside SQLite's loop instead of handing
    /// every row out through `sqlite3_step`. A name already defined here is left as it is.
    ///
    /// The function is `SQLITE_DIRECTONLY`: a store's own schema (a view, a trigger) cannot call it.
    public func defineAggregate<State>(_ name: String, initial: @escaping () -> State,
                                       step: @escaping (inout State, FunctionArguments) -> Void,
                                       result: @escaping (State) -> DatabaseValue) throws(SQLiteError) {
        guard !definedFunctions.contains(name) else { return }
        let callbacks = Aggregate(initial: initial, step: step, result: result)
        // SQLite owns the retained reference and releases it (aggregateDestroy) when the function
        // is replaced or the connection closes, or at once if the definition fails.
        let rc = sqlite3_create_function_v2(handle, name, -1, SQLITE_UTF8 | SQLITE_DIRECTONLY,
                                            Unmanaged<AggregateCallbacks>.passRetained(callbacks).toOpaque(),
                                            nil, aggregateStep, aggregateFinal, aggregateDestroy)
        guard rc == SQLITE_OK else { throw error(code: rc, sql: nil) }
        definedFunctions.insert(name)
    }
}

/// The type-erased face of an aggregate's callbacks, for the C entry points.
class AggregateCallbacks {
    func step(_ context: OpaquePointer, _ arguments: FunctionArguments) {}
    func final(_ context: OpaquePointer) {}
}

private final class Aggregate<State>: AggregateCallbacks {
    typealias Slot = UnsafeMutablePointer<State>?
    let initial: () -> State
    let stepBody: (inout State, FunctionArguments) -> Void
    let resultBody: (State) -> DatabaseValue

    init(initial: @escaping () -> State, step: @escaping (inout State, FunctionArguments) -> Void,
         result: @escaping (State) -> DatabaseValue) {
        self.initial = initial
        stepBody = step
        resultBody = result
    }

    override func step(_ context: OpaquePointer, _ arguments: FunctionArguments) {
        // SQLite's per-group memory holds a pointer to the state, made at the group's first row
        // and freed by `final`, which SQLite calls for every group it started (also on an error).
        guard let slot = sqlite3_aggregate_context(context, Int32(MemoryLayout<Slot>.stride))?.assumingMemoryBound(to: Slot.self) else {
            sqlite3_result_error_nomem(context)
            return
        }
        if slot.pointee == nil {
            let state = UnsafeMutablePointer<State>.allocate(capacity: 1)
            state.initialize(to: initial())
            slot.pointee = state
        }
        stepBody(&slot.pointee!.pointee, arguments)
    }

    override func final(_ context: OpaquePointer) {
        let value: DatabaseValue
        if let slot = sqlite3_aggregate_context(context, 0)?.assumingMemoryBound(to: Slot.self), let state = slot.pointee {
            value = resultBody(state.pointee)
            state.deinitialize(count: 1)
            state.deallocate()
            slot.pointee = nil
        } else {
            value = resultBody(initial())
        }
        switch value {
        case .null: sqlite3_result_null(context)
        case .integer(let v): sqlite3_result_int64(context, v)
        case .real(let d): sqlite3_result_double(context, d)
        case .text(let s):
            sqlite3_result_text64(context, s, sqlite3_uint64(s.utf8.count), storelens_sqlite3_transient(), UInt8(SQLITE_UTF8))
        case .blob(let data):
            data.withUnsafeBytes {
                sqlite3_result_blob64(context, $0.baseAddress ?? UnsafeRawPointer(bitPattern: 1), sqlite3_uint64($0.count), storelens_sqlite3_transient())
            }
        }
    }
}

private func callbacks(_ context: OpaquePointer) -> AggregateCallbacks? {
    guard let app = sqlite3_user_data(context) else { return nil }
    return Unmanaged<AggregateCallbacks>.fromOpaque(app).takeUnretainedValue()
}

private let aggregateStep: @convention(c) (OpaquePointer?, Int32, UnsafeMutablePointer<OpaquePointer?>?) -> Void = { context, count, values in
    guard let context, let values, let callbacks = callbacks(context) else { return }
    callbacks.step(context, FunctionArguments(values: values, count: count))
}

private let aggregateFinal: @convention(c) (OpaquePointer?) -> Void = { context in
    guard let context, let callbacks = callbacks(context) else { return }
    callbacks.final(context)
}

private let aggregateDestroy: @convention(c) (UnsafeMutableRawPointer?) -> Void = { app in
    guard let app else { return }
    Unmanaged<AggregateCallbacks>.fromOpaque(app).release()
}
