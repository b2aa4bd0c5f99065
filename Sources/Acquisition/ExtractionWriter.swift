import Foundation
import StoreFormats

/// Hashes and writes extracted entries on a thread of its own while libarchive decompresses the
/// next blocks. Decompression and hashing each cost about as much as the other on a store-heavy
/// archive; on two cores they overlap instead of adding up.
///
/// The reading thread copies each libarchive block into one of a few fixed buffers (libarchive
/// reuses its block after the next read) and queues it; memory is bounded by
/// `bufferCount × bufferSize` whatever the archive's size. Entries are written in the order they
/// were begun, so each entry's hasher sees its bytes in order.
final class ExtractionWriter: @unchecked Sendable {
    /// An entry's outcome, known once the writer has finished it.
    struct Written {
        var sha256: String
        /// The errno of a write that failed (the entry's file is incomplete): always our own
        /// failure in the working folder, never the archive's.
        var failure: Int32?
    }

    private enum Job {
        case begin(fd: Int32)
        /// `count` bytes of `buffer` belong at `offset` of the current entry.
        case data(buffer: Int, offset: Int64, count: Int)
        /// Extends the file to `size` (a sparse tail), then finishes the entry.
        case end(size: Int64?, slot: Int)
    }

    static let bufferSize = 1 << 18
    private static let bufferCount = 16

    private let condition = NSCondition()
    private var jobs: [Job] = []
    private var free: [Int]
    private let buffers: [UnsafeMutableRawPointer]
    private var results: [Written?] = []
    private var stopped = false
    private let finished = DispatchSemaphore(value: 0)

    // Filling side (reading thread only).
    private var filling: Int?
    private var fillOffset: Int64 = 0
    private var fillCount = 0

    init() {
        buffers = (0..<Self.bufferCount).map { _ in UnsafeMutableRawPointer.allocate(byteCount: Self.bufferSize, alignment: 64) }
        free = Array(0..<Self.bufferCount)
        // The thread holds the writer until `work` returns (after `close`); the writer does not hold
        // the thread, so nothing keeps either alive afterwards.
        let thread = Thread { [self] in self.work() }
        thread.name = "storelens.extract"
        thread.start()
    }

    deinit {
        for buffer in buffers { buffer.deallocate() }
    }

    // MARK: Reading thread

    /// Starts an entry written to `fd` (the writer closes it). Returns the slot its result will fill.
    func begin(fd: Int32) -> Int {
        flush()
        condition.lock()
        results.append(nil)
        let slot = results.count - 1
        jobs.append(.begin(fd: fd))
        condition.broadcast()
        condition.unlock()
        return slot
    }

    /// Queues `count` bytes at `offset` of the current entry (copied: `bytes` may be reused).
    func write(_ bytes: UnsafeRawPointer, count: Int, at offset: Int64) {
        var source = bytes
        var remaining = count
        var offset = offset
        while remaining > 0 {
            if filling != nil, fillOffset + Int64(fillCount) != offset || fillCount == Self.bufferSize {
                flush()
            }
            if filling == nil {
                filling = takeFreeBuffer()
                fillOffset = offset
                fillCount = 0
            }
            let take = min(remaining, Self.bufferSize - fillCount)
            (buffers[filling!] + fillCount).copyMemory(from: source, byteCount: take)
            fillCount += take
            source += take
            remaining -= take
            offset += Int64(take)
        }
    }

    /// Ends the current entry; `size` extends the file when the entry declares more than it wrote.
    func end(slot: Int, extendingTo size: Int64?) {
        flush()
        condition.lock()
        jobs.append(.end(size: size, slot: slot))
        condition.broadcast()
        condition.unlock()
    }

    /// Waits until every queued entry is written and returns each entry's result, by slot.
    func drain() -> [Written] {
        flush()
        condition.lock()
        while !jobs.isEmpty || results.contains(where: { $0 == nil }) { condition.wait() }
        let done = results.map { $0! }
        condition.unlock()
        return done
    }

    /// The first write that failed so far, by slot (checked between entries so a full disk stops
    /// the extraction early).
    func firstFailure() -> (slot: Int, code: Int32)? {
        condition.lock()
        defer { condition.unlock() }
        for (slot, result) in results.enumerated() {
            if let reason = result?.failure { return (slot, reason) }
        }
        return nil
    }

    /// Stops the thread once the queue is empty (call once, after the last `drain` or on error).
    func close() {
        flush()
        condition.lock()
        stopped = true
        condition.broadcast()
        condition.unlock()
        finished.wait()
    }

    private func flush() {
        guard let buffer = filling else { return }
        filling = nil
        condition.lock()
        jobs.append(.data(buffer: buffer, offset: fillOffset, count: fillCount))
        condition.broadcast()
        condition.unlock()
    }

    private func takeFreeBuffer() -> Int {
        condition.lock()
        defer { condition.unlock() }
        while free.isEmpty { condition.wait() }
        return free.removeLast()
    }

    // MARK: Writing thread

    private func work() {
        var fd: Int32 = -1
        var hasher = SHA256()
        var written: Int64 = 0
        var failure: Int32?
        let zeros = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            condition.lock()
            while jobs.isEmpty && !stopped { condition.wait() }
            if jobs.isEmpty && stopped {
                condition.unlock()
                break
            }
            let job = jobs.removeFirst()
            condition.unlock()

            switch job {
            case .begin(let newFD):
                fd = newFD
                hasher = SHA256()
                written = 0
                failure = nil
            case .data(let buffer, let offset, let count):
                // Sparse entries: a hole reads back as zeros, so it is hashed as zeros.
                while written < offset {
                    let chunk = Int(min(Int64(zeros.count), offset - written))
                    zeros.withUnsafeBytes { hasher.update($0.prefix(chunk)) }
                    written += Int64(chunk)
                }
                if failure == nil {
                    var done = 0
                    while done < count {
                        let n = pwrite(fd, buffers[buffer] + done, count - done, off_t(offset) + off_t(done))
                        if n < 0 && errno == EINTR { continue }
                        guard n > 0 else {
                            failure = n == 0 ? EIO : errno
                            break
                        }
                        done += n
                    }
                }
                hasher.update(UnsafeRawBufferPointer(start: buffers[buffer], count: count))
                written = max(written, offset + Int64(count))
                condition.lock()
                free.append(buffer)
                condition.broadcast()
                condition.unlock()
            case .end(let size, let slot):
                if let size, size > written {
                    if ftruncate(fd, off_t(size)) != 0, failure == nil { failure = errno }
                    while written < size {
                        let chunk = Int(min(Int64(zeros.count), size - written))
                        zeros.withUnsafeBytes { hasher.update($0.prefix(chunk)) }
                        written += Int64(chunk)
                    }
                }
                if fd >= 0 { Foundation.close(fd) }
                fd = -1
                let digest = hasher.finalizeHex()
                condition.lock()
                results[slot] = Written(sha256: digest, failure: failure)
                condition.broadcast()
                condition.unlock()
            }
        }
        if fd >= 0 { Foundation.close(fd) }
        finished.signal()
    }
}
