import Foundation
import OutputFiles
import StoreFormats

/// The results of a batch stopped taking lines, so the batch stopped with lines missing: a
/// results file that cannot be written (a full disk), or standard output that cannot (its reader
/// went away: `EPIPE`; a full disk). storelens' own failure (exit 3), never the evidence's; the
/// command stops quietly with 141 instead when the reader of standard output went away
/// (docs/exit-codes.md). `--resume` runs the missing inputs again.
public struct BatchResultsFailure: Error, Equatable, Sendable, DescribedError {
    /// The results file, or `-` for standard output.
    public let results: String
    /// The errno of the failing write.
    public let code: Int32

    /// Standard output's reader went away (`storelens … --jsonl - | head -1`): a clean stop.
    public var readerGone: Bool { results == "-" && code == EPIPE }

    public var sentence: String {
        let reason = String(cString: strerror(code))
        if results == "-" {
            return "the results could not be written to standard output (\(reason)), "
                + "so what was written is incomplete; make room where standard output goes, or send it elsewhere, and run the command again"
        }
        return "the batch results file \(HostileText.sanitized(results)) could not be written "
            + "(\(reason)), so the batch stopped with lines missing; make room for it and run the same command with --resume"
    }

    public var errorClass: ErrorClass { .ours }
}

/// The results file: lines are appended whole (one write, under a lock and `flock`), so several
/// storelens processes may append to one file, and a file cut off mid-line stays parseable.
/// `-` is standard output.
final class BatchResultsFile: @unchecked Sendable {
    private let lock = NSLock()
    private let fd: Int32
    private let path: String
    /// Set by the first line that could not be written: no line is written after it.
    private var failure: BatchResultsFailure?

    init(path: String) throws {
        self.path = path
        if path == "-" {
            fd = STDOUT_FILENO
            return
        }
        let fd = open(path, O_RDWR | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            throw InputError(message: "cannot open \(path) for the batch results (\(String(cString: strerror(errno)))); give a writable file.")
        }
        var st = stat()
        guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else {
            _ = Foundation.close(fd)
            throw InputError(message: "\(path) is not a regular file; give --jsonl a file for the batch results.")
        }
        self.fd = fd
    }

    private var isStandardOutput: Bool { path == "-" }

    /// For `--resume`: sets aside a cut-off last line (telling `events`), then the exit code of
    /// each input that has a line of `command` already.
    func resumed(command: String, events: (Storelens.BatchEvent) -> Void) -> [String: Int32] {
        if let partial = setAsidePartialLastLine() {
            events(.partialLineSetAside(path: partial.path, bytes: partial.bytes))
        }
        var done: [String: Int32] = [:]
        for line in existingLines() {
            guard let key = BatchLine.Key(line: line), key.command == command else { continue }
            done[key.input] = key.exitCode
        }
        return done
    }

    /// A last line without its newline (a run killed mid-write) breaks `jq` on the whole file:
    /// moves it into a new file beside the results (`<file>.partial-N`) and cuts the results file
    /// back to its last whole line. Returns where it went, or nil when the file ends cleanly.
    func setAsidePartialLastLine() -> (path: String, bytes: Int)? {
        guard !isStandardOutput else { return nil }
        flock(fd, LOCK_EX)
        defer { flock(fd, LOCK_UN) }
        let size = lseek(fd, 0, SEEK_END)
        guard size > 0, let (cut, tail) = lastLine(size: size) else { return nil }
        var n = 0
        var aside = path + ".partial"
        var out = open(aside, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
        while out < 0 && errno == EEXIST && n < 1000 {
            n += 1
            aside = path + ".partial-\(n)"
            out = open(aside, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
        }
        guard out >= 0 else { return nil }
        let text = tail + [UInt8(ascii: "\n")]
        let wrote = text.withUnsafeBytes { write(out, $0.baseAddress, $0.count) }
        _ = Foundation.close(out)
        guard wrote == text.count, ftruncate(fd, cut) == 0 else { return nil }
        return (aside, tail.count)
    }

    /// The cut-off last line of a file of `size` bytes and where it starts; nil when the file
    /// ends with a newline (or cannot be read, or its last "line" is too long for a results file).
    private func lastLine(size: off_t) -> (cut: off_t, tail: [UInt8])? {
        // Read back from the end to the last newline, in bounded steps.
        var end = size, tail: [UInt8] = []
        while end > 0 {
            let step = min(Int(end), 1 << 16)
            var chunk = [UInt8](repeating: 0, count: step)
            guard pread(fd, &chunk, step, end - off_t(step)) == step else { return nil }
            if end == size, chunk.last == UInt8(ascii: "\n") { return nil }
            if let i = chunk.lastIndex(of: UInt8(ascii: "\n")) {
                return (end - off_t(step) + off_t(i) + 1, Array(chunk[(i + 1)...]) + tail)
            }
            tail = chunk + tail
            end -= off_t(step)
            guard tail.count <= 64 << 20 else { return nil }   // not a batch results file
        }
        return (0, tail)
    }

    /// The lines already in the file (for `--resume`).
    func existingLines() -> [String] {
        guard !isStandardOutput, let text = try? String(contentsOfFile: path, encoding: .utf8) else { return [] }
        return text.split(separator: "\n", omittingEmptySubsequences: true).map(String.init)
    }

    /// Appends `line` and its newline; the failure when it could not be (and every time after).
    func append(_ line: String) -> BatchResultsFailure? {
        lock.lock()
        defer { lock.unlock() }
        if let failure { return failure }
        var text = line + "\n"
        if !isStandardOutput {
            flock(fd, LOCK_EX)
            defer { flock(fd, LOCK_UN) }
            // A line cut off by a killed run must not swallow the next one.
            let size = lseek(fd, 0, SEEK_END)
            if size > 0 {
                var last: UInt8 = 0
                if pread(fd, &last, 1, size - 1) == 1, last != UInt8(ascii: "\n") { text = "\n" + text }
            }
            return failed(OutputFileFailure.writeAll(fd, Array(text.utf8)))
        }
        return failed(OutputFileFailure.writeAll(fd, Array(text.utf8)))
    }

    /// A line that cannot be appended (a full disk) must not leave a batch that looks whole.
    private func failed(_ code: Int32) -> BatchResultsFailure? {
        guard code != 0 else { return nil }
        failure = BatchResultsFailure(results: path, code: code)
        return failure
    }

    func close() {
        if !isStandardOutput { _ = Foundation.close(fd) }
    }
}
