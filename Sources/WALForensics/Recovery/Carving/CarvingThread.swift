import CoreDataStore
import Foundation
import StoreFormats

/// `CarvedVersions.collect` on a thread of its own, beside the walk through the commits.
///
/// Carving reads only the evidence's bytes and the last state, never what the commits are found to
/// hold, so `recover` no longer waits for one before the other (on the bench's WAL store they took
/// about the same time, one after the other). The last state's reader and everything `collect`
/// builds belong to this thread until `result()` returns; the caller touches neither before.
final class CarvingThread: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    private let lock = NSLock()
    private var outcome: Result<CarvedVersions, any Error>?
    private var work: (() throws -> CarvedVersions)?

    /// Starts `work` with the caller's display zone and progress reporter (task locals a new
    /// thread does not inherit), so what it decodes and reports is what the caller's thread would.
    static func start(_ work: @escaping () throws -> CarvedVersions) -> CarvingThread {
        let carving = CarvingThread()
        carving.work = work
        let zone = DisplayZone.current
        let progress = ProgressReporter.current
        let thread = Thread { [carving] in
            let body = carving.work
            carving.work = nil
            let outcome = DisplayZone.$current.withValue(zone) {
                ProgressReporter.$current.withValue(progress) { Result { try body!() } }
            }
            carving.lock.lock()
            carving.outcome = outcome
            carving.lock.unlock()
            carving.done.signal()
        }
        thread.name = "storelens.recover-carving"
        thread.start()
        return carving
    }

    /// What `collect` gave or threw, once it is done (waits; every later call returns the same).
    func result() -> Result<CarvedVersions, any Error> {
        lock.lock()
        if let outcome { lock.unlock(); return outcome }
        lock.unlock()
        done.wait()
        lock.lock()
        defer { lock.unlock() }
        return outcome!
    }
}
