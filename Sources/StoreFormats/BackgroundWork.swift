import Foundation

/// Work run on a thread of its own while the caller's thread does something else (`wal`'s
/// quick_check beside its page walk, `recover`'s carving beside its commits, `check`'s second
/// connection, `report`'s second part); `result()` waits. The one home for a background thread.
///
/// What the work captured (a connection, a state's reader) belongs to the thread until the result
/// is posted, and is let go of before it is: once `result()` returns, the caller may use it again
/// and the thread holds nothing. The caller's progress reporter (a task local a new thread does
/// not inherit) is bound on the thread, so it reports as the caller would; work that decodes
/// values uses `init(decodingAsCaller:_:)` (CoreDataStore), which binds the display zone too.
public final class BackgroundWork<Value>: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    private let lock = NSLock()
    private var outcome: Value?
    private var work: (() -> Value)?

    public init(name: String, _ work: @escaping () -> Value) {
        self.work = work
        let progress = ProgressReporter.current
        let thread = Thread { [self] in
            var body = self.work
            self.work = nil
            let value = ProgressReporter.$current.withValue(progress) { body!() }
            body = nil
            lock.lock()
            outcome = value
            lock.unlock()
            done.signal()
        }
        thread.name = name
        thread.start()
    }

    /// What the work gave, once it is done (waits; every later call returns the same at once).
    @discardableResult
    public func result() -> Value {
        lock.lock()
        if let outcome { lock.unlock(); return outcome }
        lock.unlock()
        done.wait()
        // The one signal wakes one waiter: passed on, so every thread waiting here wakes.
        done.signal()
        lock.lock()
        defer { lock.unlock() }
        return outcome!
    }
}
