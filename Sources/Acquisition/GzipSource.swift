import CArchive
import Foundation
#if canImport(CISAL)
import CISAL
#endif

/// Who decodes the gzip layer of a `.tar.gz`.
public enum GzipDecoder: String, Sendable, CaseIterable {
    /// ISA-L's igzip (Linux builds), feeding libarchive the decoded stream.
    case isal
    /// libarchive's own gzip filter (zlib).
    case libarchive

    /// The decoders this build has.
    public static var available: [GzipDecoder] { GzipSource.isBuiltIn ? [.isal, .libarchive] : [.libarchive] }

    /// ISA-L where it is built in, unless `STORELENS_GZIP=libarchive` asks for libarchive's filter
    /// (used by `make bench` to measure both).
    public static var preferred: GzipDecoder {
        GzipSource.isBuiltIn && ProcessInfo.processInfo.environment["STORELENS_GZIP"] != "libarchive" ? .isal : .libarchive
    }
}

/// The gzip layer of a `.tar.gz`, decoded with ISA-L's igzip and handed to libarchive as a plain
/// stream through `archive_read_open`'s callbacks. libarchive still recognises and reads the
/// archive inside; only the DEFLATE decoding changes hands. Decoding is where `scan` spends its
/// time on a `.tar.gz`, and igzip decodes about 1.5× as fast as zlib on the same data (measured on
/// the bench corpus: see docs/performance.md). Where ISA-L is not built in (macOS) or
/// `STORELENS_GZIP=libarchive` is set, libarchive's own gzip filter is used instead (`GzipDecoder`).
///
/// The stream is checked as gzip(1) checks it: every member's CRC-32 and length (ISA-L verifies
/// the trailer), several members read one after another, bytes after the last member ignored.
final class GzipSource {
    /// Whether this build has ISA-L.
    static var isBuiltIn: Bool {
        #if canImport(CISAL)
        return true
        #else
        return false
        #endif
    }

    /// Whether the file starts like a gzip member (magic and the DEFLATE method).
    static func looksLikeGzip(_ url: URL) -> Bool {
        let fd = open(url.path, O_RDONLY | O_NOFOLLOW)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var head = [UInt8](repeating: 0, count: 3)
        return read(fd, &head, 3) == 3 && head == [0x1f, 0x8b, 0x08]
    }

    /// Compressed bytes consumed so far (for progress and the compression-ratio limit).
    private(set) var compressedBytes: Int64 = 0
    /// Bytes after the last gzip member, ignored as `gzip -d` ignores them (reported as a warning).
    private(set) var trailingBytes: Int64 = 0

    /// How the rest of the stream ended, once libarchive has read the archive's end.
    enum Ending: Equatable {
        case verified
        case damaged(String)
        /// More than the bound was left after the archive's end: not decoded, so not verified.
        case unverified(bytesDecoded: Int64)
    }

    #if canImport(CISAL)
    private static let outputSize = 1 << 18
    /// Bytes read from the file at a time (tests make it tiny, so members end at every position).
    private let inputSize: Int
    private let fd: Int32
    private let path: String
    private let input: UnsafeMutablePointer<UInt8>
    private let output = UnsafeMutablePointer<UInt8>.allocate(capacity: GzipSource.outputSize)
    private let state = UnsafeMutablePointer<inflate_state>.allocate(capacity: 1)
    private var inputEnded = false
    private var finished = false
    /// An error found after some output was already returned: reported by the next read.
    private var pendingError: String?

    /// Opens `url` for reading; nil when it cannot be opened (libarchive then reports why).
    init?(url: URL, inputSize: Int = 1 << 18) {
        let fd = open(url.path, O_RDONLY | O_NOFOLLOW)
        guard fd >= 0 else { return nil }
        self.fd = fd
        // At least 2: a refill keeps up to one unread byte and must still have room to read.
        self.inputSize = max(2, inputSize)
        self.input = UnsafeMutablePointer<UInt8>.allocate(capacity: self.inputSize)
        self.path = url.path
        isal_inflate_init(state)
        state.pointee.crc_flag = UInt32(ISAL_GZIP)
        state.pointee.avail_in = 0
    }

    deinit {
        close(fd)
        input.deallocate()
        output.deallocate()
        state.deallocate()
    }

    /// Hands the stream to libarchive (which keeps an unretained pointer: the caller keeps `self`
    /// alive until `archive_read_free`).
    func attach(to a: OpaquePointer) -> Int32 {
        archive_read_open(a, Unmanaged.passUnretained(self).toOpaque(), nil, { a, client, buffer in
            let source = Unmanaged<GzipSource>.fromOpaque(client!).takeUnretainedValue()
            return source.next(a!, buffer!)
        }, nil)
    }

    /// libarchive's read callback: the next decoded bytes, 0 at the end, -1 with the error set.
    private func next(_ a: OpaquePointer, _ buffer: UnsafeMutablePointer<UnsafeRawPointer?>) -> Int {
        switch fill() {
        case .success(let count):
            buffer.pointee = UnsafeRawPointer(output)
            return count
        case .failure(let failure):
            storelens_archive_set_error(a, failure.message)
            return -1
        }
    }

    /// Decodes whatever libarchive did not ask for (a tar's end padding, the last trailer), so the
    /// last member's CRC-32 and length are checked even when the archive ends before the stream;
    /// at most `bound` decoded bytes, so data hidden after the archive's end cannot cost more.
    func finish(bound: Int64 = 64 << 20) -> Ending {
        var decoded: Int64 = 0
        while decoded <= bound {
            switch fill() {
            case .success(let count):
                if count == 0 { return .verified }
                decoded += Int64(count)
            case .failure(let failure):
                return .damaged(failure.message)
            }
        }
        return .unverified(bytesDecoded: decoded)
    }

    struct Failure: Error { let message: String }

    /// Every decoded byte, or the stream's error with what was decoded before it (for tests).
    func decodeAll() -> (data: Data, error: String?) {
        var data = Data()
        while true {
            switch fill() {
            case .success(let count):
                if count == 0 { return (data, nil) }
                data.append(output, count: count)
            case .failure(let failure):
                return (data, failure.message)
            }
        }
    }

    /// Fills the output buffer: its byte count, 0 at the end of the stream.
    private func fill() -> Result<Int, Failure> {
        if let pendingError { return .failure(Failure(message: pendingError)) }
        if finished { return .success(0) }
        state.pointee.next_out = output
        state.pointee.avail_out = UInt32(Self.outputSize)
        while state.pointee.avail_out > 0 {
            if state.pointee.avail_in == 0 && !inputEnded {
                guard refill(keeping: 0) else { return .failure(readFailure()) }
            }
            let before = state.pointee.avail_in
            let beforeOut = state.pointee.avail_out
            let status = isal_inflate(state)
            if status < 0 {
                pendingError = Self.describe(status)
                break
            }
            if state.pointee.block_state == ISAL_BLOCK_FINISH {
                // A member ended with its CRC-32 and length verified. Another follows only if the
                // next bytes are a gzip header; anything else after the last member is ignored.
                if state.pointee.avail_in < 2 && !inputEnded {
                    guard refill(keeping: Int(state.pointee.avail_in)) else { return .failure(readFailure()) }
                }
                let next = state.pointee.next_in
                if state.pointee.avail_in >= 2, let next, next[0] == 0x1f, next[1] == 0x8b {
                    let (nextIn, availIn) = (state.pointee.next_in, state.pointee.avail_in)
                    let (nextOut, availOut) = (state.pointee.next_out, state.pointee.avail_out)
                    isal_inflate_reset(state)
                    state.pointee.crc_flag = UInt32(ISAL_GZIP)
                    state.pointee.next_in = nextIn
                    state.pointee.avail_in = availIn
                    state.pointee.next_out = nextOut
                    state.pointee.avail_out = availOut
                    continue
                }
                finished = true
                trailingBytes = Int64(state.pointee.avail_in) + max(0, fileSize() - compressedBytes)
                break
            }
            if before == state.pointee.avail_in && beforeOut == state.pointee.avail_out {
                // No progress: at the end of the input that is a cut-off stream; never spin.
                if inputEnded {
                    pendingError = "truncated gzip input: the stream ends inside a member"
                    break
                }
                if state.pointee.avail_in > 0 {
                    pendingError = "the gzip stream could not be decoded further"
                    break
                }
            }
        }
        let produced = Self.outputSize - Int(state.pointee.avail_out)
        if produced == 0, let pendingError { return .failure(Failure(message: pendingError)) }
        return .success(produced)
    }

    /// Reads the next input chunk, keeping the last `count` unread bytes in front of it.
    private func refill(keeping count: Int) -> Bool {
        if count > 0, let next = state.pointee.next_in { memmove(input, next, count) }
        var n: Int
        repeat { n = read(fd, input + count, inputSize - count) } while n < 0 && errno == EINTR
        guard n >= 0 else { return false }
        if n == 0 { inputEnded = true }
        compressedBytes += Int64(n)
        state.pointee.next_in = input
        state.pointee.avail_in = UInt32(count + n)
        return true
    }

    private func fileSize() -> Int64 {
        var st = stat()
        return fstat(fd, &st) == 0 ? Int64(st.st_size) : 0
    }

    private func readFailure() -> Failure {
        let message = "cannot read \(path): \(String(cString: strerror(errno)))"
        pendingError = message
        return Failure(message: message)
    }

    static func describe(_ status: Int32) -> String {
        switch status {
        case ISAL_INVALID_BLOCK: return "invalid compressed data: a bad DEFLATE block header"
        case ISAL_INVALID_SYMBOL: return "invalid compressed data: a bad DEFLATE code"
        case ISAL_INVALID_LOOKBACK: return "invalid compressed data: a back-reference before the start of the stream"
        case ISAL_INVALID_WRAPPER: return "invalid gzip header"
        case ISAL_UNSUPPORTED_METHOD: return "the gzip member uses a compression method other than DEFLATE"
        case ISAL_INCORRECT_CHECKSUM: return "gzip CRC-32 or length mismatch: the data is corrupt"
        default: return "gzip decoding failed (ISA-L status \(status))"
        }
    }
    #else
    init?(url: URL, inputSize: Int = 1 << 18) { nil }
    func attach(to a: OpaquePointer) -> Int32 { ARCHIVE_FATAL }
    func finish(bound: Int64 = 64 << 20) -> Ending { .verified }
    func decodeAll() -> (data: Data, error: String?) { (Data(), "ISA-L is not built in") }
    #endif
}
