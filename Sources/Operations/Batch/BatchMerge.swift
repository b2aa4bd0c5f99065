import Foundation
import OutputFiles
import StoreFormats

extension Storelens {
    /// `storelens merge`: the results files of batches (a batch's shards, one shared file, runs of
    /// batch mode) read in the order given and joined into one account. With `out`, the merged
    /// results (one line per input, ordered by command and input) are written to that new file,
    /// created exclusively; not when a line could not be read, since the account is then partial
    /// (`malformedCount`). Throws when `out` exists (before anything is read), when a file cannot
    /// be read at all (`BatchMergeError`), or when `out` cannot be written (`OutputFileFailure`).
    public static func merge(files: [URL], out: String? = nil) throws -> BatchMerge {
        if let out, FileManager.default.fileExists(atPath: out) || (try? FileManager.default.destinationOfSymbolicLink(atPath: out)) != nil {
            throw InputError(message: "\(out) already exists; give --out a new file name (merge never overwrites).")
        }
        let merge = try BatchMerge.reading(files)
        if let out, merge.malformedCount == 0 {
            // Never through a link, never over a file made meanwhile; a full disk is exit 3 naming
            // it, and nothing half-written is left (`OutputFile`).
            try OutputFile.create(merge.lines.map { $0 + "\n" }.joined(), at: out)
        }
        return merge
    }
}

/// `storelens merge`: the results files of a batch's shards (or of any runs of batch mode) joined
/// into one account (docs/scale-out.md). An input is known by its command and its path; when it
/// has several lines (done twice: overlapping shards, a rerun without `--resume`) the last one read
/// counts and the input is listed among the duplicates.
public struct BatchMerge: Sendable {
    public struct CommandTotals: Sendable, Equatable {
        public let command: String
        public var inputs = 0
        public var ok = 0
        public var findings = 0
        public var errors = 0
        public var worstExitCode: Int32 = 0
    }

    public struct Duplicate: Sendable, Equatable {
        public let command: String
        public let input: String
        public let lines: Int
        /// The hosts that wrote its lines, in the order read (`null` hosts left out).
        public let hosts: [String]
    }

    /// A line that is not a batch line: cut off, hand-edited, or another file.
    public struct Malformed: Sendable, Equatable {
        public let file: String
        public let line: Int
        public let reason: String
    }

    public struct Failure: Sendable, Equatable {
        public let command: String
        public let input: String
        public let error: String
    }

    public private(set) var files: [String] = []
    public private(set) var lineCount = 0
    public private(set) var commands: [CommandTotals] = []
    public private(set) var duplicates: [Duplicate] = []
    public private(set) var malformedCount = 0
    /// The first `malformedLimit` malformed lines.
    public private(set) var malformed: [Malformed] = []
    public private(set) var failures: [Failure] = []
    public private(set) var hosts: [String] = []
    /// The line that counts for each input, ordered by command and input: the merged results file.
    public private(set) var lines: [String] = []

    public static let schemaVersion = 1
    static let malformedLimit = 20
    /// Longer than any line storelens writes (a line holds at most a store list and findings).
    static let maximumLineBytes = 64 << 20

    public var inputCount: Int { commands.reduce(0) { $0 + $1.inputs } }

    /// The batch's exit code: the worst of every input's (as a batch run gives), at least 2 when a
    /// line could not be read (the account would be partial).
    public var exitCode: Int32 {
        let worst = commands.map(\.worstExitCode).max() ?? 0
        return malformedCount > 0 ? max(worst, 2) : worst
    }

    private struct Entry {
        var line: String
        var status: BatchLine.Status
        var exitCode: Int32
        var error: String?
        var hosts: [String]
        var count: Int
    }

    /// Reads every file, in the order given, line by line.
    static func reading(_ files: [URL]) throws(BatchMergeError) -> BatchMerge {
        var merge = BatchMerge()
        var entries: [String: [String: Entry]] = [:]
        var hosts = Set<String>()
        for file in files {
            merge.files.append(file.path)
            try forEachLine(of: file) { number, text in
                merge.lineCount += 1
                let line: BatchLine.Read
                switch BatchLine.read(text) {
                case .success(let read): line = read
                case .failure(let invalid):
                    merge.malformedCount += 1
                    if merge.malformed.count < malformedLimit { merge.malformed.append(Malformed(file: file.path, line: number, reason: invalid.reason)) }
                    return
                }
                if let host = line.host { hosts.insert(host) }
                var entry = entries[line.command, default: [:]][line.input]
                    ?? Entry(line: text, status: line.status, exitCode: line.exitCode, error: line.error, hosts: [], count: 0)
                entry.line = text
                entry.status = line.status
                entry.exitCode = line.exitCode
                entry.error = line.error
                entry.count += 1
                if let host = line.host { entry.hosts.append(host) }
                entries[line.command, default: [:]][line.input] = entry
            }
        }
        merge.hosts = hosts.sorted()
        for command in entries.keys.sorted() {
            var totals = CommandTotals(command: command)
            for (input, entry) in entries[command, default: [:]].sorted(by: { $0.key < $1.key }) {
                totals.inputs += 1
                switch entry.status {
                case .ok: totals.ok += 1
                case .findings: totals.findings += 1
                case .error:
                    totals.errors += 1
                    merge.failures.append(Failure(command: command, input: input, error: entry.error ?? "(no error given)"))
                }
                totals.worstExitCode = max(totals.worstExitCode, entry.exitCode)
                if entry.count > 1 { merge.duplicates.append(Duplicate(command: command, input: input, lines: entry.count, hosts: entry.hosts)) }
                merge.lines.append(entry.line)
            }
            merge.commands.append(totals)
        }
        return merge
    }

    /// Streams `file` in bounded chunks; `body` gets each non-empty line with its 1-based number.
    private static func forEachLine(of file: URL, _ body: (Int, String) -> Void) throws(BatchMergeError) {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: file.path, isDirectory: &isDirectory) else {
            throw BatchMergeError(file: file.path, detail: "no such file")
        }
        guard !isDirectory.boolValue else { throw BatchMergeError(file: file.path, detail: "it is a folder") }
        // Not a pipe or a device: one nobody writes to would never end.
        guard let type = try? FileManager.default.attributesOfItem(atPath: file.resolvingSymlinksInPath().path)[.type] as? FileAttributeType,
              type == .typeRegular else {
            throw BatchMergeError(file: file.path, detail: "it is not a regular file")
        }
        let handle: FileHandle
        do { handle = try FileHandle(forReadingFrom: file) } catch {
            throw BatchMergeError(file: file.path, detail: error.localizedDescription)
        }
        defer { try? handle.close() }
        var pending = Data()
        var number = 0
        func emit(_ bytes: Data) {
            number += 1
            guard !bytes.isEmpty else { return }
            body(number, String(decoding: bytes, as: UTF8.self))
        }
        while true {
            let chunk: Data
            do { chunk = try handle.read(upToCount: 1 << 20) ?? Data() } catch {
                throw BatchMergeError(file: file.path, detail: error.localizedDescription)
            }
            if chunk.isEmpty { break }
            // Only the new bytes are searched (memchr): a long line is read at the speed of
            // reading it, not searched again from its start with every chunk (quadratic: a 100 MB
            // line cost a minute of CPU before it was refused).
            let searched = pending.count
            pending.append(chunk)
            let newlines: [Int] = pending.withUnsafeBytes { raw in
                guard let base = raw.baseAddress else { return [] }
                var found: [Int] = []
                var from = searched
                while from < raw.count, let hit = memchr(base + from, Int32(UInt8(ascii: "\n")), raw.count - from) {
                    let at = UnsafeRawPointer(hit) - base
                    found.append(at)
                    from = at + 1
                }
                return found
            }
            // A cursor through the buffer, so a chunk of many short lines is not copied once per line.
            var start = 0
            for newline in newlines {
                emit(pending[(pending.startIndex + start) ..< (pending.startIndex + newline)])
                start = newline + 1
            }
            if start > 0 { pending = Data(pending[(pending.startIndex + start)...]) }
            guard pending.count <= maximumLineBytes else {
                throw BatchMergeError(file: file.path, detail: "line \(number + 1) is longer than \(maximumLineBytes >> 20) MiB, so this is no batch results file")
            }
        }
        if !pending.isEmpty { emit(pending) }
    }
}

/// A results file that cannot be read at all.
public struct BatchMergeError: Error, CustomStringConvertible {
    public let file: String
    public let detail: String
    public var description: String {
        "cannot read \(HostileText.sanitized(file)) (\(HostileText.sanitized(detail))); give merge the results files (--jsonl) of the batch's shards."
    }
}

extension BatchMergeError: DescribedError {
    public var errorClass: ErrorClass { .input }
}
