import Foundation

/// One command's dealings with evidence: the scratch folder its copies live in, and the
/// ledger proving the originals were left as they were.
public final class EvidenceSession {
    public let scratch: ScratchFolder
    public private(set) var ledger = EvidenceLedger()

    public init(keepScratch: Bool = false, scratchParent: URL? = nil) throws {
        scratch = try ScratchFolder(parent: scratchParent, keep: keepScratch)
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

    /// Checks every original against its recorded hash, then removes the scratch folder.
    public func finish() throws {
        defer { scratch.remove() }
        try ledger.verifyUnchanged()
    }
}
