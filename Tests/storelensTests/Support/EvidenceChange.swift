import Foundation
import StoreTestSupport
import Testing

/// An input changed while storelens waits at a pause point, and the check that the run caught it.
enum EvidenceChange {
    /// Where the test changes the original while storelens waits there.
    enum Moment: String, CaseIterable, Sendable {
        /// The working copy just made, the after-hash not yet started: the bytes differ.
        case beforeAfterHash = "working-copy"
        /// The after-hash done (on its background thread), the identities not yet compared.
        case afterAfterHash = "evidence-rehashed"
    }

    /// How the original is changed: the bytes, or only the time of a write of the same bytes.
    enum Change: String, CaseIterable, Sendable {
        case appendedByte = "a byte appended"
        case sameBytesRewritten = "one byte rewritten with its own value"

        func apply(to url: URL) throws {
            let handle = try FileHandle(forUpdating: url)
            defer { try? handle.close() }
            switch self {
            case .appendedByte:
                try handle.seekToEnd()
                try handle.write(contentsOf: Data([0]))
            case .sameBytesRewritten:
                try handle.seek(toOffset: 100)
                let byte = try #require(try handle.read(upToCount: 1))
                try handle.seek(toOffset: 100)
                try handle.write(contentsOf: byte)
            }
        }
    }

    /// Runs `arguments` paused at `moment`, makes `change` to `url`, and expects exit 3 naming the changed file.
    static func assertCaught(_ arguments: [String], store url: URL, moment: Moment, change: Change) throws {
        try assertCaught(arguments, changed: url, moment: moment, what: change.rawValue) { try change.apply(to: url) }
    }

    /// Runs `arguments` paused at `moment`, runs `change` (which changes `url`: cuts it, replaces it,
    /// makes it appear), and expects exit 3 naming `url` as changed.
    static func assertCaught(_ arguments: [String], changed url: URL, moment: Moment, what: String, change: () throws -> Void) throws {
        let scratch = try TemporaryFolder("evidence-change-scratch")
        let gate = scratch.url.deletingLastPathComponent().appendingPathComponent("gate-\(UUID().uuidString)")
        defer { unlink(gate.path); unlink(gate.path + ".reached") }
        let (process, stderr) = try PausedRun.startCapturing(arguments, at: moment.rawValue, scratch: scratch.url, gate: gate)
        #expect(process.isRunning, "storelens \(arguments[0]) must be waiting at \(moment.rawValue) when the input changes")
        try change()
        _ = FileManager.default.createFile(atPath: gate.path, contents: nil)
        let message = String(decoding: stderr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 3, "storelens \(arguments.joined(separator: " ")) after \(what) at \(moment.rawValue): exit \(process.terminationStatus), \(message)")
        #expect(message.contains(url.lastPathComponent) && message.contains("changed"), "\(message)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.url.path).isEmpty, "no scratch left")
    }
}
