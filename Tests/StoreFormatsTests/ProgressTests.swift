import Dispatch
import Foundation
import StoreFormats
import Testing

/// A clock the test moves by hand, so rate limiting is tested without sleeping.
final class ManualClock: @unchecked Sendable {
    private let lock = NSLock()
    private var nanoseconds: UInt64 = 1_000_000_000
    func now() -> UInt64 { lock.lock(); defer { lock.unlock() }; return nanoseconds }
    func advance(milliseconds: UInt64) { lock.lock(); nanoseconds += milliseconds * 1_000_000; lock.unlock() }
}

/// What a sink received, in order (nil: the line was cleared).
final class Recorder: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [ProgressReporter.Update?] = []
    func record(_ u: ProgressReporter.Update?) { lock.lock(); items.append(u); lock.unlock() }
    var updates: [ProgressReporter.Update?] { lock.lock(); defer { lock.unlock() }; return items }
}

@Suite("progress reporter")
struct ProgressTests {
    @Test("nothing before the delay, then at most one update per interval, and clear removes the line once")
    func rateLimited() {
        let clock = ManualClock()
        let recorder = Recorder()
        let reporter = ProgressReporter(interval: .milliseconds(100), delay: .milliseconds(300), clock: { clock.now() },
                                        sink: { recorder.record($0) })
        reporter.report("work", done: 1)
        clock.advance(milliseconds: 200)
        reporter.report("work", done: 2)
        #expect(recorder.updates.isEmpty, "short work never shows a line")
        clock.advance(milliseconds: 150)
        reporter.report("work", done: 3)
        reporter.report("work", done: 4)
        clock.advance(milliseconds: 50)
        reporter.report("work", done: 5)
        #expect(recorder.updates.compactMap { $0?.done } == [3], "within the interval further updates are dropped")
        clock.advance(milliseconds: 100)
        reporter.report("work", done: 6, total: 10)
        #expect(recorder.updates.compactMap { $0?.done } == [3, 6])
        reporter.clear()
        reporter.clear()
        #expect(recorder.updates.count == 3)
        #expect(recorder.updates.last! == nil)
    }

    @Test("silent reports nothing and never builds the task's text")
    func silentIsFree() {
        let built = Recorder()
        ProgressReporter.silent.report({ built.record(nil); return "expensive" }(), done: 1)
        #expect(built.updates.isEmpty)
        #expect(ProgressReporter.silent.isSilent)
        #expect(ProgressReporter.current.isSilent, "library code reports to silent unless the executable binds a reporter")
    }

    @Test("bind makes a reporter current for the work inside, on this thread only, and clears it after")
    func binding() {
        let recorder = Recorder()
        let reporter = ProgressReporter(interval: .zero, delay: .zero, sink: { recorder.record($0) })
        reporter.bind {
            ProgressReporter.current.report("inside", done: 1)
            let other = DispatchSemaphore(value: 0)
            Thread.detachNewThread {
                ProgressReporter.current.report("other thread", done: 2)
                other.signal()
            }
            other.wait()
        }
        ProgressReporter.current.report("outside", done: 3)
        #expect(recorder.updates.compactMap { $0?.task } == ["inside"])
        #expect(recorder.updates.last! == nil, "the line is cleared when the work ends")
    }

    @Test("the line's text: percent and sizes for bytes, grouped counts for items")
    func text() {
        #expect(ProgressReporter.Update(task: "reading a.tar.gz", done: 110_000_000, total: 220_000_000, unit: .bytes).text
                == "reading a.tar.gz: 50% (110.0 MB of 220.0 MB)")
        #expect(ProgressReporter.Update(task: "decoding history", done: 12_345, total: nil, unit: .items("transactions")).text
                == "decoding history: 12,345 transactions")
        #expect(ProgressReporter.Update(task: "batch", done: 3, total: 4, unit: .items("inputs")).text == "batch: 3 of 4 inputs (75%)")
        #expect(ProgressReporter.Update(task: "report: store 1 of 2 (default.store): running checks", done: 0, total: nil, unit: .step).text
                == "report: store 1 of 2 (default.store): running checks")
        #expect(ProgressReporter.Update.grouped(1_000_000) == "1,000,000")
        #expect(ProgressReporter.Update.grouped(-1234) == "-1,234")
        #expect(ProgressReporter.Update.grouped(999) == "999")
    }
}
