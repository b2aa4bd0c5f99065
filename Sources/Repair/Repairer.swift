import Acquisition
import Checks
import CoreDataStore
import Findings
import Foundation
import OutputFiles
import SQLiteAccess
import StoreFormats

/// What a repair did, for the log and the report.
public struct RepairOutcome: Sendable {
    public let input: String
    public let plan: RepairPlan
    /// Findings before the repair.
    public let findings: [Finding]
    /// Whether the output was written (false for `--plan`, or when nothing needed repair).
    public let written: Bool
    public let output: String?
    public let outputSHA256: String?
    /// Rows changed by each action, in plan order.
    public let changes: [Int]
    /// Content hash of every table before and after (SHA-256 over its rows in rowid order).
    public let tablesBefore: [String: String]
    public let tablesAfter: [String: String]
    /// Findings the checks still report on the output (none of them answered by the plan).
    public let remaining: [Finding]

    public init(input: String, plan: RepairPlan, findings: [Finding], written: Bool, output: String?, outputSHA256: String?,
                changes: [Int], tablesBefore: [String: String], tablesAfter: [String: String], remaining: [Finding]) {
        self.input = input
        self.plan = plan
        self.findings = findings
        self.written = written
        self.output = output
        self.outputSHA256 = outputSHA256
        self.changes = changes
        self.tablesBefore = tablesBefore
        self.tablesAfter = tablesAfter
        self.remaining = remaining
    }
}

/// Applies a plan to a copy of a store, proves the result, and only then puts it where asked.
///
/// The input is never opened for writing. The output is written under a temporary name beside
/// its destination and renamed into place only after every check has run again on it: a repair
/// killed at any point leaves the input untouched and nothing under the final name.
public struct Repairer {
    public let session: EvidenceSession
    public let store: AcquiredStore
    public var xcodeModel: URL?
    public var keep: KeepRule = .highestOpt
    public var only: Set<String>?
    /// Copy the store's `.<name>_SUPPORT/` beside the output (off for in-place repairs, where it already is).
    public var copySupportFolder = true
    /// A plan made elsewhere (the manifest's cross-store repairs) instead of one from `check`.
    public var givenPlan: RepairPlan?

    public init(session: EvidenceSession, store: AcquiredStore) {
        self.session = session
        self.store = store
    }

    /// Checks the store and plans the repair.
    public func plan() throws -> (RepairPlan, [Finding]) {
        let opened = try OpenedStore.open(store.copy, displayPath: store.displayPath, xcodeModel: xcodeModel)
        let findings = try StoreChecker(opened: opened, copy: store.copy).run()
        if let givenPlan { return (givenPlan, findings) }
        var planner = RepairPlanner(opened: opened)
        planner.keep = keep
        return (try planner.plan(for: findings, only: only), findings)
    }

    /// Plans, applies to a copy, verifies, and writes `output` (a new file).
    public func run(output: URL) throws -> RepairOutcome {
        try Self.checkOutput(output)
        let supportTarget = output.deletingLastPathComponent()
            .appendingPathComponent(".\(output.deletingPathExtension().lastPathComponent)_SUPPORT")
        if copySupportFolder, store.found.family.supportFolder != nil, FileManager.default.fileExists(atPath: supportTarget.path) {
            throw RepairError.outputExists(path: supportTarget.path)
        }
        let (plan, findings) = try self.plan()
        guard !plan.isEmpty else {
            return RepairOutcome(input: store.displayPath, plan: plan, findings: findings, written: false, output: nil, outputSHA256: nil,
                                 changes: [], tablesBefore: [:], tablesAfter: [:], remaining: findings)
        }

        // 1–2. A private read-write copy with the WAL merged in, the plan applied to it.
        let applied = try appliedToPrivateCopy(plan)

        // 3. Write beside the destination under a temporary name.
        let temporary = output.deletingLastPathComponent()
            .appendingPathComponent(".\(output.lastPathComponent).storelens-\(UUID().uuidString.prefix(8)).tmp")
        // Registered before it exists, so Ctrl-C at any later point removes it; unregistered only
        // once it is linked into place (or removed) below.
        guard ScratchRegistry.shared.track(file: temporary.path) else {
            throw RepairError.failed(path: store.displayPath, detail: "interrupted")
        }
        defer {
            unlink(temporary.path)
            ScratchRegistry.shared.untrack(file: temporary.path)
        }
        try writeTemporary(applied.repaired, to: temporary, output: output)
        TestPause.reach("repair-verify")

        // 4. Prove it: every check again, on a fresh working copy of the written file.
        let proof = try recheck(temporary, output: output, plan: plan)
        try requireProof(proof, plan: plan, findings: findings, before: applied.before, output: output)
        let remainingAfterCopy = proof.remaining.filter { $0.id != StoreChecker.Check.externalDataMissing.rawValue || store.found.family.supportFolder == nil }

        // 5. The evidence must still be what was read: a result made from evidence that changed
        // meanwhile is no result, so this comes before the output gets its final name.
        try session.ledger.verifyUnchanged()

        // Test hook: verified and the evidence re-hashed, not yet under its final name.
        TestPause.reach("repair-link")
        // 6. Into place, never over an existing file.
        try linkIntoPlace(temporary, output: output, supportTarget: supportTarget)
        return RepairOutcome(input: store.displayPath, plan: plan, findings: findings, written: true, output: output.path,
                             outputSHA256: try SHA256.hexOfFile(at: output), changes: applied.changes,
                             tablesBefore: applied.before, tablesAfter: proof.after, remaining: remainingAfterCopy)
    }

    /// Copies the store (and its WAL) into a private folder, merges the WAL, and runs every
    /// action of the plan in one transaction: all or nothing. Returns the repaired file, the
    /// table hashes before the plan ran, and the rows each action changed.
    func appliedToPrivateCopy(_ plan: RepairPlan) throws -> (repaired: URL, before: [String: String], changes: [Int]) {
        let work = try session.scratch.makeSubfolder(named: "repair")
        let repaired = work.appendingPathComponent(store.copy.databaseFile.lastPathComponent)
        try FileManager.default.copyItem(at: store.copy.databaseFile, to: repaired)
        // The -wal SQLite reads with the store (none when one that cannot belong is left out).
        if let wal = store.copy.sqliteWAL {
            try FileManager.default.copyItem(at: wal, to: URL(fileURLWithPath: repaired.path + "-wal"))
        }
        var changes: [Int] = []
        let before: [String: String]
        do {
            let db = try Connection.open(path: repaired.path, mode: .readWrite)
            try db.disableTriggers()
            try db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            before = try Self.tableHashes(db)
            try db.inTransaction {
                for action in plan.actions {
                    var changed = 0
                    for statement in action.statements {
                        try db.run(statement.sql, statement.arguments.map(Self.value))
                        if statement.writesStoreRows { changed += Int(db.changes) }
                    }
                    changes.append(changed)
                }
                // Test hook (inert unless both STORELENS_TEST_PAUSE_* are set): the plan has run, uncommitted.
                TestPause.reach("repair-apply")
            }
            try db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        } catch {
            if let ours = WorkingFolderFailure.from(error) { throw ours }
            throw RepairError.failed(path: store.displayPath, detail: "\(error)")
        }
        // The connection is closed here: SQLite checkpoints and removes the copy's -wal.
        return (repaired, before, changes)
    }

    /// Copies the repaired file durably to `temporary` (beside `output`), removing it on failure.
    func writeTemporary(_ repaired: URL, to temporary: URL, output: URL) throws {
        do {
            try Self.copyDurably(repaired, to: temporary)
        } catch let failure as OutputFileFailure {
            try? FileManager.default.removeItem(at: temporary)
            // Named as the user named it (a full disk there is ours, exit 3; see OutputFileFailure).
            throw OutputFileFailure(path: output.path, code: failure.code)
        } catch {
            try? FileManager.default.removeItem(at: temporary)
            // One sentence, not a dump of the NSError's user info.
            throw RepairError.failed(path: store.displayPath, detail: "cannot write \(temporary.path): \((error as NSError).localizedDescription)")
        }
    }

    /// What the checks, the table hashes, the loss proof and the plan's postconditions say of the
    /// written file, read from a fresh working copy of it.
    struct Recheck {
        let after: [String: String]
        let remaining: [Finding]
        let failedPostconditions: [String]
        let losses: [String]
    }

    /// Runs every check again on a fresh working copy of `temporary`; removes it when that fails.
    func recheck(_ temporary: URL, output: URL, plan: RepairPlan) throws -> Recheck {
        do {
            let verify = try EvidenceSession()
            defer { verify.scratch.remove() }
            let copy = try verify.workingCopy(of: temporary)
            let opened = try OpenedStore.open(copy, displayPath: output.path, xcodeModel: xcodeModel)
            let remaining = try StoreChecker(opened: opened, copy: copy).run()
            let after = try Self.tableHashes(opened.connection)
            let losses = try RepairProof.problems(plan: plan, map: opened.map, db: opened.connection, before: store.copy)
            var failedPostconditions: [String] = []
            for action in plan.actions {
                for p in action.postconditions {
                    let got = try opened.connection.scalar(p.sql, p.arguments.map(Self.value)).int ?? -1
                    if got != p.expected { failedPostconditions.append("\(p.description): expected \(p.expected), found \(got)") }
                }
            }
            return Recheck(after: after, remaining: remaining, failedPostconditions: failedPostconditions, losses: losses)
        } catch {
            try? FileManager.default.removeItem(at: temporary)
            // A full working folder is ours to report, not a repair that failed its proof.
            if let ours = WorkingFolderFailure.from(error) { throw ours }
            throw RepairError.verificationFailed(path: output.path, detail: "\(error)")
        }
    }

    /// Refuses an output the recheck does not prove: a plan from a check must make that check
    /// pass, a given plan must not add new findings, no table the plan does not touch may change,
    /// and no postcondition or loss proof may fail.
    func requireProof(_ proof: Recheck, plan: RepairPlan, findings: [Finding], before: [String: String], output: URL) throws {
        let stillFailing = givenPlan == nil
            ? proof.remaining.filter { plan.answered.contains($0.id) }
            : proof.remaining.filter { f in !findings.contains { $0.id == f.id && $0.entity == f.entity } }
        let changedUntouched = before.keys.filter { !plan.touchedTables.contains($0) && before[$0] != proof.after[$0] }.sorted()
        guard stillFailing.isEmpty, changedUntouched.isEmpty, proof.failedPostconditions.isEmpty, proof.losses.isEmpty else {
            var detail: [String] = proof.losses + proof.failedPostconditions
            if !stillFailing.isEmpty { detail.append("still failing: \(Set(stillFailing.map(\.id)).sorted().joined(separator: ", "))") }
            if !changedUntouched.isEmpty { detail.append("tables changed that the plan did not touch: \(changedUntouched.joined(separator: ", "))") }
            throw RepairError.verificationFailed(path: output.path, detail: detail.joined(separator: "; "))
        }
    }

    /// Links the verified file under its final name, never over an existing file (link fails if
    /// the name was taken meanwhile), and copies the store's support folder beside it.
    func linkIntoPlace(_ temporary: URL, output: URL, supportTarget: URL) throws {
        guard link(temporary.path, output.path) == 0 else {
            let code = errno
            if code == EEXIST { throw RepairError.outputExists(path: output.path) }
            throw RepairError.failed(path: store.displayPath, detail: "cannot create \(output.path): \(String(cString: strerror(code)))")
        }
        // External binary data lives beside the store; the output gets its own copy.
        if copySupportFolder, let support = store.found.family.supportFolder {
            do {
                try FileManager.default.copyItem(at: support, to: supportTarget)
            } catch {
                throw RepairError.failed(path: store.displayPath, detail: "the store was written, but its support folder could not be copied to \(supportTarget.path): \(error.localizedDescription)")
            }
        }
    }

    static func value(_ v: RepairPlan.Statement.Value) -> DatabaseValue {
        switch v {
        case .null: return .null
        case .integer(let i): return .integer(i)
        case .real(let d): return .real(d)
        case .text(let s): return .text(s)
        case .blob(let b): return .blob(Data(b))
        }
    }

    static func checkOutput(_ output: URL) throws {
        var isDir: ObjCBool = false
        guard !FileManager.default.fileExists(atPath: output.path) else { throw RepairError.outputExists(path: output.path) }
        guard FileManager.default.fileExists(atPath: output.deletingLastPathComponent().path, isDirectory: &isDir), isDir.boolValue else {
            throw RepairError.outputFolderMissing(path: output.path)
        }
    }

    /// SHA-256 of each table's rows in rowid order (primary key order for a WITHOUT ROWID table),
    /// to prove which tables a repair changed.
    public static func tableHashes(_ db: Connection) throws -> [String: String] {
        var result: [String: String] = [:]
        for table in try db.tableNames() where !table.hasPrefix("sqlite_") {
            var hasher = SHA256()
            let order = try db.rowKey(of: table).map { $0 == "rowid" ? "rowid" : Identifier.quoted($0) }.joined(separator: ", ")
            let statement = try db.prepare("SELECT * FROM \(Identifier.quoted(table)) ORDER BY \(order)")
            try statement.forEach { row in
                for value in row.values {
                    switch value {
                    case .null: hasher.update(Data([0]))
                    case .integer(let i): hasher.update(Data([1])); hasher.update(Data(String(i).utf8))
                    case .real(let d): hasher.update(Data([2])); hasher.update(Data(String(d.bitPattern).utf8))
                    case .text(let s): hasher.update(Data([3])); hasher.update(Data(String(s.utf8.count).utf8)); hasher.update(Data(s.utf8))
                    case .blob(let b): hasher.update(Data([4])); hasher.update(Data(String(b.count).utf8)); hasher.update(b)
                    }
                }
                hasher.update(Data([0xFF]))
            }
            result[table] = hasher.finalizeHex()
        }
        return result
    }

    /// Copies with O_EXCL and fsyncs, so a crash cannot leave a file that looks complete but is not.
    static func copyDurably(_ source: URL, to destination: URL) throws {
        let input = try FileHandle(forReadingFrom: source)
        defer { try? input.close() }
        let fd = open(destination.path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o644)
        guard fd >= 0 else { throw OutputFileFailure(path: destination.path, code: errno) }
        defer { close(fd) }
        while let chunk = try input.read(upToCount: 1 << 20), !chunk.isEmpty {
            let code = OutputFileFailure.writeAll(fd, [UInt8](chunk))
            if code != 0 { throw OutputFileFailure(path: destination.path, code: code) }
        }
        guard fsync(fd) == 0 else { throw OutputFileFailure(path: destination.path, code: errno) }
    }
}
