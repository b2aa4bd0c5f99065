import Foundation
import StoreFormats

/// Decides what an input is — by content, not by name — and finds the stores in it.
public struct InputResolver {
    public let session: EvidenceSession
    public let limits: ArchiveLimits
    /// Hash whole archives (for an evidence manifest). Off by default: hashing a large archive
    /// costs more than reading it; its identity (inode, size, mtime, ctime) still proves it unchanged.
    public let hashArchives: Bool
    /// Files other than stores to find (and extract from archives), such as a legacy JSON file.
    public let wanted: [PathPattern]
    /// Who decodes a .tar.gz's gzip layer (tests run both).
    public let gzipDecoder: GzipDecoder
    /// How a zip is read: through its central directory, or streamed entry by entry (tests run both).
    public let zipReader: ZipReader
    /// The stores (by path) that will be read: their files in a folder or a plain backup are
    /// hashed, and — when they are to be copied rather than read in place — copied into the
    /// scratch folder while they are hashed, so the copy does not read them a second time (each
    /// evidence byte is hashed or copied at most twice: here and in the after-hash).
    /// Nil: the stores are only hashed (`scan`).
    public let stagesCopies: (@Sendable (String) -> Bool)?
    /// How the stores read next are opened: whether they are copied (`--copy`) or read in place.
    public let open: OpenOptions

    public init(session: EvidenceSession, limits: ArchiveLimits = ArchiveLimits(), hashArchives: Bool = false,
                wanted: [PathPattern] = [], gzipDecoder: GzipDecoder = .preferred, zipReader: ZipReader = .preferred,
                stagesCopies: (@Sendable (String) -> Bool)? = nil, open: OpenOptions = OpenOptions()) {
        self.stagesCopies = stagesCopies
        self.open = open
        self.session = session
        self.gzipDecoder = gzipDecoder
        self.zipReader = zipReader
        self.limits = limits
        self.hashArchives = hashArchives
        self.wanted = wanted
    }

    /// - Parameter input: as the user typed it. A symbolic link typed on the command line
    ///   (`~/Desktop/pulled`) is followed: the user chose it, and its target is what is read,
    ///   hashed and named in the evidence manifest. Links met inside the input are never followed.
    public func inventory(of input: String) throws -> Inventory {
        let linkTarget = try SymbolicLink.resolveArgument(input)
        // A folder named in another encoding is reached through its alias and named by its bytes.
        var inventory = try inventory(of: RawPath.shown(input), at: URL(fileURLWithPath: linkTarget ?? input))
        inventory.linkTarget = linkTarget
        return inventory
    }

    func inventory(of input: String, at url: URL) throws -> Inventory {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: url.path),
              let type = attributes[.type] as? FileAttributeType else {
            throw AcquisitionError.notFound(path: input)
        }
        if type == .typeDirectory {
            if BackupInventory.isBackup(url) { return try backup(url, input: input) }
            return try folder(url, input: input)
        }
        guard type == .typeRegular else {
            throw AcquisitionError.unreadable(path: input, reason: "not a regular file or folder")
        }
        guard FileManager.default.isReadableFile(atPath: url.path) else {
            throw AcquisitionError.unreadable(path: input, reason: "permission denied")
        }
        let head = FamilyGrouping.prefix(of: url, count: 262)
        // Named like an archive: what it is not is the archive the user expected, not a store.
        let lower = url.lastPathComponent.lowercased()
        if !DatabaseHeader.isSQLite(head), !ArchiveSniffer.looksLikeArchive(head),
           let kind = [(".zip", "zip"), (".tar.gz", "tar.gz"), (".tgz", "tar.gz"), (".tar", "tar")].first(where: { lower.hasSuffix($0.0) })?.1 {
            throw AcquisitionError.notAnArchive(path: input, kind: kind)
        }
        if DatabaseHeader.isSQLite(head) || head.count < 16 && !ArchiveSniffer.looksLikeArchive(head) {
            return try storeFile(url, input: input)
        }
        if ArchiveSniffer.looksLikeArchive(head) { return try archive(url, input: input) }
        if let atomic = StoreFileFormat.atomic(head: head) { return try storeFile(url, input: input, format: atomic) }
        throw AcquisitionError.notSQLite(path: input)
    }

    /// The inputs with each file or folder kept once, by what it is (device and inode, links
    /// followed): the same input given twice (`a/` and `./a`, or a link and its target) would
    /// list every store twice and make `--store` and manifests impossible to satisfy. (Not by
    /// resolved path: two folders named in another encoding read the same once repaired.)
    public static func distinct(_ inputs: [String]) -> [String] {
        struct Identity: Hashable { let device: UInt64; let inode: UInt64 }
        var seen = Set<Identity>()
        return inputs.filter { input in
            var st = stat()
            guard stat(input, &st) == 0 else { return true }
            return seen.insert(Identity(device: UInt64(st.st_dev), inode: UInt64(st.st_ino))).inserted
        }
    }

    // MARK: - Kinds of input

    /// Hashes a found store's files, copying them for its working copy on the way when one will
    /// be made.
    func record(_ store: FoundStore) throws {
        if store.format != .sqlite, store.size > StoreFileFormat.atomicStoreByteLimit {
            // Refused by its reader for its size: nothing of it is copied or hashed (a sparse
            // file of gigabytes costs nothing to make, and its bytes are never read).
            try session.record(store.family.files, hash: false)
        } else if stagesCopies?(store.path) == true {
            try session.recordForReading(store.family, options: open)
        } else {
            try session.record(store.family.files)
        }
    }

    func storeFile(_ url: URL, input: String, format: StoreFileFormat = .sqlite) throws -> Inventory {
        let family = StoreFamily.beside(url)
        if format != .sqlite, size(url) > StoreFileFormat.atomicStoreByteLimit {
            // Refused by its reader for its size: neither copied nor hashed (`record(_:)`).
            try session.record(family.files, hash: false)
        } else {
            // A single store is read next: hash it (and copy it while hashing, when it is to be copied).
            try session.recordForReading(family, options: open)
        }
        let name = url.lastPathComponent
        let external = try ExternalDataFolder.listing(family, storeName: name)
        let store = FoundStore(path: input, family: family, name: name,
                               sidecars: .init(wal: family.wal.map { _ in input + "-wal" }, shm: family.shm.map { _ in input + "-shm" },
                                               journal: family.journal.map { _ in input + "-journal" },
                                               externalData: external.kind == .missing ? nil : family.supportFolder.map { $0.path + "/_EXTERNAL_DATA" },
                                               externalDataFiles: external.entries.values.filter(\.exists).count),
                               size: size(url), container: nil, location: FamilyGrouping.wellKnownLocation(url.path, container: nil),
                               hashes: session.deferredHashes(for: family, naming: input), format: format)
        let hashes = store.hashes
        return Inventory(input: input, kind: .storeFile, inputHash: Deferred { hashes.wrappedValue[input] }, stores: [store],
                         orphans: [], skipped: [], warnings: [], extracted: [])
    }

    func folder(_ url: URL, input: String) throws -> Inventory {
        let walk = FolderInventory(root: url).walk()
        var (stores, orphans) = FamilyGrouping.group(walk.files, containers: walk.containers)
        let progress = ProgressReporter.current
        defer { progress.setContext(nil) }
        for i in stores.indices {
            progress.setContext("store \(i + 1) of \(ProgressReporter.Update.grouped(Int64(stores.count)))")
            try record(stores[i])
            stores[i].hashes = session.deferredHashes(for: stores[i].family, naming: stores[i].path)
        }
        FamilyGrouping.markSecondCopies(&stores)
        var inventory = Inventory(input: input, kind: walk.isXcappdata ? .xcappdata : .folder, inputSHA256: nil,
                                  stores: stores, orphans: orphans, skipped: walk.skipped, warnings: [], extracted: [])
        for file in walk.files where !file.isSQLite && wanted.contains(where: { $0.matches(file.path, ignoringCase: true) }) {
            try session.record([file.url])
            inventory.otherFiles.append((file.path, file.url))
        }
        // Archives one level inside the folder are read too.
        for (path, archiveURL) in walk.archives {
            do {
                let nested = try archive(archiveURL, input: input + "/" + path)
                inventory.stores += nested.stores
                inventory.orphans += nested.orphans
                inventory.skipped += nested.skipped
                inventory.warnings += nested.warnings
                inventory.extracted += nested.extracted
            } catch {
                inventory.skipped.append(SkippedEntry(path: path, reason: "archive not read: \(error)"))
            }
        }
        return inventory
    }

    func archive(_ url: URL, input: String) throws -> Inventory {
        try session.record([url], hash: hashArchives)
        let output = try session.scratch.makeSubfolder(named: "extracted")
        let result = try ArchiveInventory(url: url, displayName: input, output: output, limits: limits, wanted: wanted,
                                          gzipDecoder: gzipDecoder, zipReader: zipReader).read()
        let (found, orphans) = FamilyGrouping.group(result.files, containers: result.containers)
        let hashes = Dictionary(result.extracted.map { ($0.path, $0.sha256) }, uniquingKeysWith: { a, _ in a })
        var stores = found.map { s -> FoundStore in
            var copy = FoundStore(path: input + "!" + s.path, family: s.family, name: s.name,
                                  sidecars: s.sidecars, size: s.size, container: s.container, location: s.location, sha256: [:], format: s.format)
            for p in [s.path, s.sidecars.wal, s.sidecars.shm, s.sidecars.journal].compactMap({ $0 }) {
                copy.sha256[input + "!" + p] = hashes[p]
            }
            return copy
        }
        FamilyGrouping.markSecondCopies(&stores)
        var warnings = result.warnings
        if let damage = result.damage { warnings.append(damage) }
        var inventory = Inventory(input: input, kind: .archive, inputSHA256: session.ledger.entry(for: url.path)?.sha256,
                                  stores: stores, orphans: orphans.map { OrphanSidecar(path: input + "!" + $0.path, kind: $0.kind, size: $0.size) },
                                  skipped: result.skipped, warnings: warnings, extracted: result.extracted)
        inventory.damage = result.damage
        inventory.otherFiles = result.files.filter { file in !file.isSQLite && wanted.contains { $0.matches(file.path, ignoringCase: true) } }
            .map { (input + "!" + $0.path, $0.url) }
        return inventory
    }

    func backup(_ url: URL, input: String) throws -> Inventory {
        let result = try BackupInventory(root: url, session: session, wanted: wanted).read()
        var (stores, orphans) = FamilyGrouping.group(result.files, containers: result.containers)
        let progress = ProgressReporter.current
        defer { progress.setContext(nil) }
        for i in stores.indices {
            if result.encrypted {
                // The encrypted originals are in the ledger already; a store's hashes are those
                // of the plaintext storelens reads, as for a plain backup.
                stores[i].sha256 = Self.hashes(result.plaintextHashes, for: stores[i].family, naming: stores[i].path)
                continue
            }
            progress.setContext("store \(i + 1) of \(ProgressReporter.Update.grouped(Int64(stores.count)))")
            try record(stores[i])
            stores[i].hashes = session.deferredHashes(for: stores[i].family, naming: stores[i].path)
        }
        FamilyGrouping.markSecondCopies(&stores)
        var inventory = Inventory(input: input, kind: .backup, inputSHA256: nil, stores: stores, orphans: orphans,
                                  skipped: result.skipped, warnings: result.warnings, extracted: [])
        inventory.encrypted = result.encrypted
        inventory.decrypted = result.decrypted
        for file in result.files where !file.isSQLite && wanted.contains(where: { $0.matches(file.path, ignoringCase: true) }) {
            if !result.encrypted { try session.record([file.url]) }
            inventory.otherFiles.append((file.path, file.url))
        }
        return inventory
    }

    /// A family's hashes from a table of hashes by file path, named like `EvidenceSession.hashes`.
    static func hashes(_ table: [String: String], for family: StoreFamily, naming: String) -> [String: String] {
        var result: [String: String] = [:]
        for (url, suffix) in [(family.main, ""), (family.wal, "-wal"), (family.shm, "-shm"), (family.journal, "-journal")] {
            if let url, let hash = table[url.path] { result[naming + suffix] = hash }
        }
        return result
    }

    private func size(_ url: URL) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: url.path))?[.size] as? NSNumber)?.intValue ?? 0
    }
}
