import Foundation
import SQLiteAccess

/// Whole passes storelens makes over input files — a hash, a copy (or both in one read), an
/// archive read through, a decryption; not the reads of a store read in place, which SQLite and
/// the page walk make where they need them — counted per path when `STORELENS_EVIDENCE_READS`
/// names a log file. Each session's `finish()` appends its counts there (`passes<TAB>path` a
/// line, and the writes the evidence VFS refused, `refusedWritesName`), and
/// `EvidenceGuaranteeTests` reads them to prove that every command hashes or copies each evidence
/// byte at most twice and asks no write of the evidence (docs/safety.md). Reads of a few header
/// bytes (sniffing a format, a WAL header) are not passes and are not counted. Without the
/// variable this costs one nil check per pass.
/// `package`: a measurement hook for the project's own tests, not part of what an app imports.
package enum EvidenceReads {
    static let log = ProcessInfo.processInfo.environment["STORELENS_EVIDENCE_READS"]
    private static let lock = NSLock()
    nonisolated(unsafe) private static var counts: [String: Int] = [:]

    /// One whole pass over the file at `path`.
    static func pass(_ path: String) {
        guard log != nil else { return }
        lock.lock()
        counts[path, default: 0] += 1
        lock.unlock()
    }

    /// The line that counts the writes SQLite asked of the evidence VFS and was refused (a normal
    /// run asks none; `EvidenceGuaranteeTests` expects it never to appear).
    package static let refusedWritesName = "storelens:evidence-vfs-refused-writes"
    nonisolated(unsafe) private static var refusedAtLastFlush: Int64 = 0

    /// Appends the passes counted so far to the log, and starts counting afresh.
    static func flush() {
        guard let log else { return }
        lock.lock()
        var lines = counts.sorted { $0.key < $1.key }.map { "\($0.value)\t\($0.key)\n" }.joined()
        counts = [:]
        let refused = Connection.evidenceWritesRefused
        if refused > refusedAtLastFlush { lines += "\(refused - refusedAtLastFlush)\t\(refusedWritesName)\n" }
        refusedAtLastFlush = refused
        lock.unlock()
        guard !lines.isEmpty, let handle = FileHandle(forWritingAtPath: log) ?? {
            _ = FileManager.default.createFile(atPath: log, contents: nil)
            return FileHandle(forWritingAtPath: log)
        }() else { return }
        defer { try? handle.close() }
        _ = try? handle.seekToEnd()
        try? handle.write(contentsOf: Data(lines.utf8))
    }
}
