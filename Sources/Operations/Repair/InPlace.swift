import Acquisition
import Foundation
import Repair
import StoreFormats

/// `--in-place --backup DIR`: the family is copied to DIR and verified, the repaired store is
/// made beside the original, then swapped in; the original's -wal is kept under another name
/// until the swap is done, so no moment pairs the new main file with the old WAL.
enum InPlace {
    static func repair(_ repairer: Repairer, store: AcquiredStore, backup: URL, session: EvidenceSession) throws -> RepairOutcome {
        let family = store.found.family
        var isDir: ObjCBool = false
        guard FileManager.default.fileExists(atPath: backup.path, isDirectory: &isDir), isDir.boolValue else {
            throw RepairError.backupFailed(path: backup.path, detail: "no such folder")
        }
        guard family.main.path == store.displayPath || FileManager.default.fileExists(atPath: store.displayPath) else {
            throw InputError(message: "--in-place works only on a store file on disk, not on a store inside an archive or backup.")
        }
        for file in [family.main, family.wal, family.shm, family.journal].compactMap({ $0 }) {
            let target = backup.appendingPathComponent(file.lastPathComponent)
            do {
                try FileManager.default.copyItem(at: file, to: target)
            } catch {
                throw RepairError.backupFailed(path: target.path, detail: error.localizedDescription)
            }
            guard try SHA256.hexOfFile(at: file) == SHA256.hexOfFile(at: target) else {
                throw RepairError.backupFailed(path: target.path, detail: "the copy does not hash like the original")
            }
        }
        let staged = family.main.deletingLastPathComponent().appendingPathComponent(".\(family.main.lastPathComponent).storelens-repaired")
        try? FileManager.default.removeItem(at: staged)
        // The staged store lies beside the evidence: until it is renamed over the store, an error
        // or Ctrl-C removes it, as the temporary file of an --out repair.
        guard ScratchRegistry.shared.track(file: staged.path) else {
            throw RepairError.failed(path: store.displayPath, detail: "interrupted")
        }
        var swapped = false
        defer {
            if !swapped { unlink(staged.path) }
            ScratchRegistry.shared.untrack(file: staged.path)
        }
        var repairer = repairer
        repairer.copySupportFolder = false
        let outcome = try repairer.run(output: staged)
        guard outcome.written else { return outcome }
        try session.ledger.verifyUnchanged()
        // The window (docs/repair.md): from hiding the -wal until the rename below, a reader of
        // the store sees the old main file without the -wal's commits. Two files cannot be swapped
        // in one step; the verified backup is the recovery path if the process dies here.
        if let wal = family.wal { _ = rename(wal.path, wal.path + ".storelens-old") }
        if let shm = family.shm { unlink(shm.path) }
        TestPause.reach("in-place-swap")
        guard rename(staged.path, family.main.path) == 0 else {
            let code = errno
            // Not swapped: the store gets its -wal back (SQLite rebuilds the -shm).
            if let wal = family.wal { _ = rename(wal.path + ".storelens-old", wal.path) }
            throw RepairError.failed(path: family.main.path, detail: String(cString: strerror(code)))
        }
        swapped = true
        // Checked unchanged up to the swap, which changed them on purpose: not to be checked again.
        session.replacedOriginals()
        ScratchRegistry.shared.untrack(file: staged.path)
        if let wal = family.wal { unlink(wal.path + ".storelens-old") }
        return RepairOutcome(input: outcome.input, plan: outcome.plan, findings: outcome.findings, written: true, output: family.main.path,
                             outputSHA256: outcome.outputSHA256, changes: outcome.changes, tablesBefore: outcome.tablesBefore,
                             tablesAfter: outcome.tablesAfter, remaining: outcome.remaining)
    }
}
