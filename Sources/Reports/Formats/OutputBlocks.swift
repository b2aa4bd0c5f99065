/// Output gathered into blocks of about `size` bytes before it is written: a million rows are a
/// few thousand writes, not a million (a write per version was a tenth of `recover`'s time on the
/// bench's 10000 deleted records). The streaming writers append; `flush()` hands the block on.
final class OutputBlocks {
    static let size = 1 << 16

    /// What is gathered and not yet written; the byte encoders append to it directly.
    var bytes: [UInt8] = []
    let spill: ([UInt8]) -> Void

    init(spill: @escaping ([UInt8]) -> Void) {
        self.spill = spill
        bytes.reserveCapacity(Self.size + 4096)
    }

    func append(_ text: String) {
        bytes.append(contentsOf: text.utf8)
        flushIfFull()
    }

    func flushIfFull() {
        if bytes.count >= Self.size { flush() }
    }

    /// Writes what is gathered: at the end, and before an error is reported mid-stream so what
    /// was read so far comes out first.
    func flush() {
        guard !bytes.isEmpty else { return }
        spill(bytes)
        bytes.removeAll(keepingCapacity: true)
    }
}
