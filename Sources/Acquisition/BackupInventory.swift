import Foundation
import SQLiteAccess
import StoreFormats

/// Why a backup folder could not be read. Never carries the password or anything derived from it.
public enum BackupError: Error, Equatable, CustomStringConvertible, Sendable {
    /// Manifest.db is not SQLite, yet Manifest.plist does not say the backup is encrypted.
    case encrypted(path: String)
    case manifestUnreadable(path: String, detail: String)
    case manifestPlistUnreadable(file: String, detail: String)
    /// An encrypted backup of a kind older than iOS 10.2's (no ManifestKey, no DPSL/DPIC round).
    case unsupportedEncryption(path: String, iosVersion: String?)
    case keybagDamaged(file: String, detail: String)
    case wrongPassword(path: String)
    case missingClassKey(file: String, protectionClass: UInt32)
    case decryptionFailed(file: String, detail: String)
    /// Manifest.db decrypted, but not to a SQLite database.
    case manifestNotDecrypted(file: String)

    public var description: String {
        switch self {
        case .encrypted(let path):
            return "\(path)/Manifest.db is not a SQLite database and Manifest.plist does not say the backup is encrypted; copy the whole backup folder again (Manifest.plist with it)."
        case .manifestUnreadable(let path, let detail):
            return "\(path)/Manifest.db cannot be read (\(detail)); the backup may be incomplete — copy the whole backup folder again."
        case .manifestPlistUnreadable(let file, let detail):
            return "\(file) cannot be read as a backup's Manifest.plist (\(detail)); copy the whole backup folder again."
        case .unsupportedEncryption(let path, let version):
            return "\(path) is an encrypted backup made by iOS \(version ?? "of an unknown version"), in the format used before iOS 10.2, which storelens does not decrypt; make a new backup with a current iOS, or decrypt this one with another tool first."
        case .keybagDamaged(let file, let detail):
            return "\(file): the encrypted backup's BackupKeyBag cannot be used (\(detail)); copy the whole backup folder again."
        case .wrongPassword(let path):
            return "\(path): the password does not unlock this backup's keybag; give the password set for encrypted backups in Finder or iTunes (check the password file for extra spaces or lines)."
        case .missingClassKey(let file, let protectionClass):
            return "\(file) is encrypted with protection class \(protectionClass), for which the backup's keybag holds no key; the keybag and the files do not belong together — copy the whole backup folder again."
        case .decryptionFailed(let file, let detail):
            return "\(file) does not decrypt (\(detail)); copy the whole backup folder again."
        case .manifestNotDecrypted(let file):
            return "\(file) does not decrypt to a SQLite database with the backup's ManifestKey; the file is damaged or belongs to another backup — copy the whole backup folder again."
        }
    }
}

/// A decrypted file of an encrypted backup: tied back to the original bytes by both hashes.
public struct DecryptedFile: Equatable, Sendable {
    /// `Domain/relativePath`, as for a plain backup.
    public let path: String
    /// The encrypted file in the backup (`ab/abcdef…`).
    public let original: String
    public let encryptedSHA256: String
    /// The hash of the decrypted bytes, the ones storelens reads.
    public let plaintextSHA256: String
    public let size: Int64
}

/// A Finder/iTunes backup: files live under hashed names (`ab/abcdef…`) and `Manifest.db` maps
/// them to their domain and path. App domains become container roots, and a store's
/// `-wal`/`-shm` are found under their own hashed names.
///
/// An encrypted backup (iOS 10.2 and later) is unlocked with its password first; Manifest.db and
/// the files of every store (with their sidecars and support files) are then decrypted into the
/// private scratch folder, and only those copies are read. Other files are never decrypted
/// beyond their first block, which tells a SQLite file from the rest.
struct BackupInventory {
    let root: URL
    let session: EvidenceSession
    /// Files other than stores to decrypt too (the `wanted` patterns of the resolver).
    var wanted: [PathPattern] = []

    static func isBackup(_ folder: URL) -> Bool {
        FileManager.default.fileExists(atPath: folder.appendingPathComponent("Manifest.db").path)
            || FileManager.default.fileExists(atPath: folder.appendingPathComponent("Manifest.plist").path)
    }

    struct Result {
        var files: [SeenFile] = []
        var containers: [ContainerIdentity] = []
        var skipped: [SkippedEntry] = []
        var warnings: [String] = []
        var encrypted = false
        var decrypted: [DecryptedFile] = []
        /// SHA-256 of each decrypted file's plaintext, by its path in the scratch folder.
        var plaintextHashes: [String: String] = [:]
    }

    /// A Files row that names a file of an app domain present in the backup.
    private struct Entry {
        /// The domain, then the relative path's components, each a plain name (`ArchivePath`).
        let components: [String]
        var path: String { components.joined(separator: "/") }
        let fileID: String
        let url: URL
        let size: Int
        let blob: Data?
    }

    func read() throws -> Result {
        let plist = try Self.manifestPlist(in: root)
        if plist.isEncrypted { return try readEncrypted(plist) }
        let manifest = root.appendingPathComponent("Manifest.db")
        guard FileManager.default.fileExists(atPath: manifest.path) else {
            throw BackupError.manifestUnreadable(path: root.path, detail: "there is no Manifest.db")
        }
        guard DatabaseHeader.isSQLite(FamilyGrouping.prefix(of: manifest)) else {
            throw BackupError.encrypted(path: root.path)
        }
        let connection: Connection
        do {
            connection = try session.workingCopy(of: manifest).open()
        } catch {
            throw BackupError.manifestUnreadable(path: root.path, detail: "\(error)")
        }
        var result = Result()
        for entry in try entries(connection, withRecords: false, into: &result) {
            result.files.append(SeenFile(path: entry.path, url: entry.url, size: entry.size,
                                         isSQLite: DatabaseHeader.isSQLite(FamilyGrouping.prefix(of: entry.url))))
        }
        return result
    }

    /// A file the encrypted backup will decrypt, with its Manifest.db record.
    private struct Job { let entry: Entry; let record: BackupFileRecord }

    private enum Decrypted {
        case file(URL, DecryptionOutcome)
        case skipped(reason: String)
        var outcome: DecryptionOutcome? { if case .file(_, let outcome) = self { return outcome } else { return nil } }
    }

    /// How a backup file is named in errors: its path, hashed name and backup.
    private func name(of entry: Entry) -> String { "\(entry.path) (\(entry.fileID.prefix(2))/\(entry.fileID) in \(root.path))" }

    /// Decrypts `jobs` into `output` on both threads (each file created by `PrivateTree`; a name the
    /// file system refuses is skipped with why) and records each outcome in `result`.
    private func decrypt(_ jobs: [Job], with backup: EncryptedBackup, into output: URL, result: inout Result) throws {
        let tree = PrivateTree(root: output)
        let stopwatch = Stopwatch()
        let outcomes = try FileWork.map(jobs, weights: jobs.map { Int64($0.entry.size) }) { job -> Decrypted in
            let key = try backup.fileKey(protectionClass: job.record.protectionClass, wrappedKey: job.record.wrappedKey, name: name(of: job.entry))
            defer { key.clear() }
            let file: (fd: Int32, url: URL)
            do throws(PrivateTree.Failure) {
                file = try tree.createFile(job.entry.components)
            } catch .ours(let code) {
                throw WorkingFolderFailure(folder: output.path, code: code)
            } catch .name(let reason) {
                return .skipped(reason: "cannot be decrypted into the working folder (\(reason))")
            }
            return .file(file.url, try BackupFileDecryption.decrypt(job.entry.url, key: key, into: file, expectedSize: job.record.size, name: name(of: job.entry)))
        }
        if let timings = Timings.process {
            // make bench (scripts/bench-backup.sh): decryption alone, beside `openssl enc -d`.
            let bytes = outcomes.reduce(Int64(0)) { $0 + Int64($1.outcome?.ciphertext.size ?? 0) }
            timings.record("backup-decrypt-seconds=\(stopwatch.seconds) bytes=\(bytes) files=\(jobs.count)")
        }
        for (job, decrypted) in zip(jobs, outcomes) {
            guard case .file(let destination, let outcome) = decrypted else {
                if case .skipped(let reason) = decrypted { result.skipped.append(SkippedEntry(path: job.entry.path, reason: reason)) }
                continue
            }
            session.recordDecrypted(outcome.ciphertext)
            result.plaintextHashes[destination.path] = outcome.plaintextSHA256
            result.decrypted.append(DecryptedFile(path: job.entry.path, original: job.entry.url.path,
                                                  encryptedSHA256: outcome.ciphertext.sha256 ?? "", plaintextSHA256: outcome.plaintextSHA256,
                                                  size: outcome.size))
            if let note = outcome.sizeNote { result.warnings.append(note) }
            result.files.append(SeenFile(path: job.entry.path, url: destination, size: Int(outcome.size),
                                         isSQLite: DatabaseHeader.isSQLite(FamilyGrouping.prefix(of: destination))))
        }
    }

    /// The largest Manifest.plist read: Finder's and iTunes' hold the keybag, the device's
    /// Lockdown facts and at most a list of apps, well under a megabyte; old iTunes backups with
    /// app icons stay under a few.
    static let manifestPlistLimit = 32 << 20

    /// Manifest.plist, read only after its size is checked (a sparse 2 GiB one costs nothing); a
    /// backup without one is read as unencrypted, as before.
    static func manifestPlist(in root: URL) throws -> BackupManifestPlist {
        let url = root.appendingPathComponent("Manifest.plist")
        var st = stat()
        guard lstat(url.path, &st) == 0 else { return BackupManifestPlist(Data()) }
        EvidenceReads.pass(url.path)
        do {
            return BackupManifestPlist(try SmallFile.contents(of: url, limit: manifestPlistLimit))
        } catch {
            throw BackupError.manifestPlistUnreadable(file: url.path, detail: error.description)
        }
    }

    // MARK: - Manifest.db rows

    private func entries(_ connection: Connection, withRecords: Bool, into result: inout Result) throws -> [Entry] {
        // A view named Files could run any query, one that never ends among them.
        let filesIsTable: Bool
        do {
            filesIsTable = try connection.tableExists("Files")
        } catch {
            throw BackupError.manifestUnreadable(path: root.path, detail: "\(error)")
        }
        guard filesIsTable else { throw BackupError.manifestUnreadable(path: root.path, detail: "it has no Files table") }
        var entries: [Entry] = []
        var domains = Set<String>()
        var skipped: [SkippedEntry] = []
        var containers: [ContainerIdentity] = []
        do {
            let columns = withRecords ? "fileID, domain, relativePath, flags, file" : "fileID, domain, relativePath, flags"
            let statement = try connection.prepare("SELECT \(columns) FROM Files WHERE flags = 1 ORDER BY domain, relativePath")
            try statement.forEach { row in
                guard let fileID = row[0].string, let domain = row[1].string, let relative = row[2].string else {
                    skipped.append(SkippedEntry(path: "Manifest.db row", reason: "a Files row without fileID, domain or relativePath"))
                    return
                }
                guard let kind = Self.containerKind(domain) else { return }
                // fileID names a file in the backup: it must be 40 hex digits, nothing else.
                guard fileID.count == 40, fileID.allSatisfy(\.isHexDigit) else {
                    skipped.append(SkippedEntry(path: "\(domain)/\(relative)", reason: "invalid fileID in Manifest.db"))
                    return
                }
                // The one rule for names from evidence: the domain is one plain name, the
                // relative path a safe relative path; either may come from a hostile Manifest.db.
                let components: [String]
                switch ArchivePath.sanitize(domain: domain, relativePath: relative) {
                case .rejected(let reason):
                    skipped.append(SkippedEntry(path: "\(domain)/\(relative)", reason: "unsafe domain or relativePath in Manifest.db: \(reason)"))
                    return
                case .safe(let parts, _):
                    components = parts
                }
                let url = root.appendingPathComponent(String(fileID.prefix(2))).appendingPathComponent(fileID)
                let path = components.joined(separator: "/")
                guard let attributes = try? FileManager.default.attributesOfItem(atPath: url.path),
                      (attributes[.type] as? FileAttributeType) == .typeRegular else {
                    skipped.append(SkippedEntry(path: path, reason: SkippedEntry.missingFromBackup))
                    return
                }
                if domains.insert(domain).inserted {
                    let identifier = domain.split(separator: "-", maxSplits: 1).dropFirst().first.map(String.init)
                    containers.append(ContainerIdentity(kind: kind, identifier: identifier, source: "backup domain \(domain)", root: domain))
                }
                entries.append(Entry(components: components, fileID: fileID, url: url, size: (attributes[.size] as? NSNumber)?.intValue ?? 0,
                                     blob: withRecords ? row[4].data : nil))
            }
        } catch {
            throw BackupError.manifestUnreadable(path: root.path, detail: "\(error)")
        }
        result.skipped += skipped
        result.containers += containers
        return entries
    }

    static func containerKind(_ domain: String) -> ContainerIdentity.Kind? {
        if domain.hasPrefix("AppDomainGroup-") { return .appGroup }
        if domain.hasPrefix("AppDomainPlugin-") { return .appExtension }
        if domain.hasPrefix("AppDomain-") { return .appData }
        return nil
    }

    static func isEncrypted(_ data: Data) -> Bool {
        BackupManifestPlist(data).isEncrypted
    }

    // MARK: - Encrypted backups

    private func readEncrypted(_ plist: BackupManifestPlist) throws -> Result {
        let manifestPlist = root.appendingPathComponent("Manifest.plist")
        let manifest = root.appendingPathComponent("Manifest.db")
        // The keybag is checked and the password tried before anything is decrypted.
        let backup = try EncryptedBackup(root: root, plist: plist, password: session.backupPassword)
        defer { backup.close() }
        guard FileManager.default.fileExists(atPath: manifest.path) else {
            throw BackupError.manifestUnreadable(path: root.path, detail: "there is no Manifest.db")
        }
        try session.record([manifestPlist])
        var result = Result()
        result.encrypted = true

        let manifestFolder = try session.scratch.makeSubfolder(named: "backup-manifest")
        let manifestKey = try backup.manifestKey(plist)
        defer { manifestKey.clear() }
        try BackupFileDecryption.checkManifest(manifest, key: manifestKey, name: manifest.path)
        let manifestFile: (fd: Int32, url: URL)
        do throws(PrivateTree.Failure) {
            manifestFile = try PrivateTree(root: manifestFolder).createFile(["Manifest.db"])
        } catch .ours(let code) {
            throw WorkingFolderFailure(folder: manifestFolder.path, code: code)
        } catch {
            // A fresh folder of our own holds nothing yet: the name cannot be refused.
            throw WorkingFolderFailure(folder: manifestFolder.path, code: EEXIST)
        }
        let decryptedManifest = manifestFile.url
        let outcome = try BackupFileDecryption.decrypt(manifest, key: manifestKey, into: manifestFile, expectedSize: nil, name: manifest.path)
        session.recordDecrypted(outcome.ciphertext)
        guard DatabaseHeader.isSQLite(FamilyGrouping.prefix(of: decryptedManifest)) else {
            throw BackupError.manifestNotDecrypted(file: manifest.path)
        }
        let connection: Connection
        do {
            connection = try WorkingCopy(family: StoreFamily(main: decryptedManifest), name: "Manifest.db", displayPath: manifest.path,
                                         into: manifestFolder, alreadyPrivate: true).open()
        } catch {
            throw BackupError.manifestUnreadable(path: root.path, detail: "\(error)")
        }

        // Which files to decrypt: every SQLite file (known by its first block), every sidecar and
        // support file by name, and the files asked for by pattern.
        struct Candidate { let entry: Entry; let record: BackupFileRecord; let byName: Bool }
        var candidates: [Candidate] = []
        let output = try session.scratch.makeSubfolder(named: "decrypted")
        var paths = Set<String>()
        for entry in try entries(connection, withRecords: true, into: &result) {
            guard paths.insert(entry.path).inserted else {
                result.skipped.append(SkippedEntry(path: entry.path, reason: "listed more than once in Manifest.db; the first is read"))
                continue
            }
            let record: BackupFileRecord?
            do {
                record = try entry.blob.flatMap { blob throws(BackupFileRecord.Unreadable) in try BackupFileRecord.parse(blob) }
            } catch {
                result.skipped.append(SkippedEntry(path: entry.path, reason: "its Manifest.db record cannot be read (\(error.detail))"))
                continue
            }
            guard let record else {
                result.skipped.append(SkippedEntry(path: entry.path, reason: "its Manifest.db record holds no encryption key"))
                continue
            }
            let byName = FamilyGrouping.sidecarSuffixes.keys.contains { entry.path.hasSuffix($0) }
                || entry.path.contains("_SUPPORT/")
                || wanted.contains { $0.matches(entry.path, ignoringCase: true) }
            candidates.append(Candidate(entry: entry, record: record, byName: byName))
        }
        // The rest by their first block, on both threads: an app domain can hold many thousands of files.
        let needed = try FileWork.map(candidates, weights: candidates.map { _ in 1 }) { candidate -> Bool in
            if candidate.byName { return true }
            let key = try backup.fileKey(protectionClass: candidate.record.protectionClass, wrappedKey: candidate.record.wrappedKey,
                                         name: name(of: candidate.entry))
            defer { key.clear() }
            return try BackupFileDecryption.firstBlock(of: candidate.entry.url, key: key).map { DatabaseHeader.isSQLite(Data($0)) } ?? false
        }
        var jobs: [Job] = []
        for (candidate, isNeeded) in zip(candidates, needed) where isNeeded {
            jobs.append(Job(entry: candidate.entry, record: candidate.record))
        }
        try decrypt(jobs, with: backup, into: output, result: &result)
        return result
    }

}

extension BackupError: DescribedError {
    public var errorClass: ErrorClass { .input }
}
