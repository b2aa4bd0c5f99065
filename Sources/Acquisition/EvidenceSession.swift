import Foundation
import StoreFormats

/// One command's dealings with evidence: the scratch folder its copies live in, and the
/// ledger proving the originals were left as they were.
public final class EvidenceSession {
    public let scratch: ScratchFolder
    public private(set) var ledger = EvidenceLedger()

    public init(keepScratch: Bool = false, scratchParent: URL? = nil) throws {
        scratch = try ScratchFolder(parent: scratchParent, keep: keepScratch)
    }

    /// Hashes files before anything reads them (once per file).
    public func record(_ files: [URL], hash: Bool = true) throws {
        try ledger.record(files, hash: hash)
    }

    /// The recorded SHA-256 of each file of `family`, named by the store's path `naming`
    /// (sidecars get their suffix; support files are left out).
    func hashes(for family: StoreFamily, naming: String) -> [String: String] {
        var result: [String: String] = [:]
        for (url, suffix) in [(family.main, ""), (family.wal, "-wal"), (family.shm, "-shm"), (family.journal, "-journal")] {
            guard let url, let entry = ledger.entries.first(where: { $0.path == url.path }), let hash = entry.sha256 else { continue }
            result[naming + suffix] = hash
        }
        return result
    }

    /// Hashes the family of `main`, then copies it into a fresh subfolder of the scratch folder.
    public func workingCopy(of main: URL, options: OpenOptions = OpenOptions()) throws -> WorkingCopy {
        var isDir: ObjCBool = false
        if FileManager.default.fileExists(atPath: main.path, isDirectory: &isDir), !isDir.boolValue {
            try ledger.record(StoreFamily.beside(main).files)
        }
        let folder = try scratch.makeSubfolder(named: main.lastPathComponent)
        return try WorkingCopy(of: main, into: folder, options: options)
    }

    /// Copies a found store (from a folder, archive or backup) into a fresh subfolder.
    public func workingCopy(of store: FoundStore, options: OpenOptions = OpenOptions()) throws -> WorkingCopy {
        let folder = try scratch.makeSubfolder(named: store.name)
        // Files extracted from an archive are already storelens's own copies in the scratch folder.
        let extracted = store.family.main.standardizedFileURL.path.hasPrefix(scratch.url.standardizedFileURL.path + "/")
        return try WorkingCopy(family: store.family, name: store.name, displayPath: store.path, into: folder, options: options,
                               alreadyPrivate: extracted)
    }

    /// Checks every original against its recorded hash, then removes the scratch folder.
    public func finish() throws {
        defer { scratch.remove() }
        try ledger.verifyUnchanged()
    }
}
