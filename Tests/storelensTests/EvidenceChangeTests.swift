import Foundation
import StoreBuilder
import StoreTestSupport
import Testing

/// Every command reads each evidence byte at most twice: the hash is taken from the
/// bytes as they are copied, and the after-hash runs on a background thread beside the command's
/// work. Neither may let a change to an input go unnoticed: one made before the after-hash
/// changes the bytes it reads, one made after it changes the file's ctime, which the closing
/// identity check compares.
@Suite("an input changed during a run is caught, before or after its after-hash")
struct EvidenceChangeTests {
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

    static let commands: [[String]] = [["inspect"], ["rows", "<store>", "Note", "--format", "jsonl"], ["wal"], ["check"]]

    @Test("inspect, rows, wal and check exit 3 naming the changed file, whatever the moment and the change",
          arguments: Moment.allCases, Change.allCases)
    func caught(moment: Moment, change: Change) throws {
        for command in Self.commands {
            let folder = try TemporaryFolder("evidence-change")
            let url = try RepairPromiseTests.storeWithWAL(in: folder.url)
            let arguments = command.count == 1 ? command + [url.path] : command.map { $0 == "<store>" ? url.path : $0 }
            try assertCaught(arguments, store: url, moment: moment, change: change)
        }
    }

    func assertCaught(_ arguments: [String], store url: URL, moment: Moment, change: Change) throws {
        let scratch = try TemporaryFolder("evidence-change-scratch")
        let gate = scratch.url.deletingLastPathComponent().appendingPathComponent("gate-\(UUID().uuidString)")
        defer { unlink(gate.path); unlink(gate.path + ".reached") }
        let (process, stderr) = try RepairPromiseTests.startPausedCapturing(arguments, at: moment.rawValue, scratch: scratch.url, gate: gate)
        #expect(process.isRunning, "storelens \(arguments[0]) must be waiting at \(moment.rawValue) when the input changes")
        try change.apply(to: url)
        _ = FileManager.default.createFile(atPath: gate.path, contents: nil)
        let message = String(decoding: stderr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 3, "storelens \(arguments[0]) after \(change.rawValue) at \(moment.rawValue): exit \(process.terminationStatus), \(message)")
        #expect(message.contains(url.lastPathComponent) && message.contains("changed"), "\(message)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.url.path).isEmpty, "no scratch left")
    }
}
