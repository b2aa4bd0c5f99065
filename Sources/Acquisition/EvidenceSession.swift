import Foundation
import StoreFormats

/// One command's dealings with evidence: the scratch folder its copies live in, and the
/// ledger proving the originals were left as they were.
public final class EvidenceSession {
    public let scratch: ScratchFolder
    public private(set) var ledger = EvidenceLedger()

    /// Where an encrypted backup's password comes from; nil refuses encrypted backups with a
    /// sentence saying how to give it.
    public let backupPassword: BackupPasswordSource?

    /// Damaged archives read anyway (`ArchiveLimits.readDamaged`): the command states each one.
    public internal(set) var damagedInputs: [DamagedInput] = [] {
        didSet { for input in damagedInputs.dropFirst(oldValue.count) { onDamagedInput?(input) } }
    }
    /// Told of each damaged archive as it is accepted, so a command can warn before its output.
    public var onDamagedInput: ((DamagedInput) -> Void)?
    /// Told, before a store is read, that another process has it open or is writing it
    /// (`StoreInUse`), so a command can warn before its output.
    public var onStoreInUse: ((String) -> Void)?

    public init(keepScratch: Bool = false, scratchParent: URL? = nil, backupPassword: BackupPasswordSource?) throws {
        // Made when first needed: a store read in place needs none.
        scratch = try ScratchFolder(parent: scratchParent, keep: keepScratch, lazily: true)
        self.backupPassword = backupPassword
    }

    public convenience init(keepScratch: Bool = false, scratchParent: URL? = nil) throws {
        try self.init(keepScratch: keepScratch, scratchParent: scratchParent, backupPassword: nil)
    }

    /// Hashes files before anything reads them (once per file).
    public func record(_ files: [URL], hash: Bool = true) throws {
        try ledger.record(files, hash: hash)
    }

    /// Records an encrypted original whose hash was taken while it was decrypted (one read for both).
    func recordDecrypted(_ evidence: FileEvidence) {
        ledger.add(evidence)
    }

    /// Hashes a store family for reading: copying it on the way when it will be copied, else
    /// (read in place, `WorkingCopy.readsInPlace`) only hashing it.
    func recordForReading(_ family: StoreFamily, options: OpenOptions) throws {
        ledger.recordAbsent(["-wal", "-journal", "-shm"].map { family.main.path + $0 })
        if let onStoreInUse, let notice = StoreInUse.notice(family, displayPath: RawPath.shown(family.main.path)) { onStoreInUse(notice) }
        if WorkingCopy.readsInPlace(family, options: options) {
            try recordInPlace(family)
        } else {
            try recordCopying(family)
        }
    }

    /// Hashes a store family that will be read where it lies (each file once), and notes where
    /// its `_EXTERNAL_DATA` files are read: the originals, with the hashes just taken.
    func recordInPlace(_ family: StoreFamily) throws {
        // The store's own files are hashed beside the reading; the support folder's (small, and
        // their hashes are shown with their rows) at once.
        let storeFiles = [family.main, family.wal, family.shm, family.journal].compactMap { $0 }
        try ledger.recordHashingBeside(storeFiles)
        try ledger.record(family.files.filter { !storeFiles.contains($0) })
        guard externalData[family.main.path] == nil else { return }
        let storeName = family.main.lastPathComponent
        let (kind, entries) = try ExternalDataFolder.listing(family, storeName: storeName)
        var copies: [String: URL] = [:], hashes: [String: String] = [:]
        if kind == .folder, let source = family.supportFolder?.appendingPathComponent("_EXTERNAL_DATA") {
            for (name, file) in entries where file.exists {
                let url = source.appendingPathComponent(name)
                copies[name] = url
                // The ledger knows the file by the path the support folder's walk spelt; a file it
                // missed (another spelling) is hashed here, once.
                if let hash = ledger.entry(for: url.path)?.sha256 {
                    hashes[name] = hash
                } else {
                    try ledger.record([url])
                    hashes[name] = ledger.entry(for: url.path)?.sha256
                }
            }
        }
        externalData[family.main.path] = .made(kind: kind, entries: entries, storeName: storeName, copies: copies, hashes: hashes)
    }

    /// Copies made while hashing (original path → the copy in the scratch folder), waiting for the
    /// working copy of that store, which takes them instead of reading the originals again.
    private var staged: [String: URL] = [:]

    /// Hashes a store family and, on the same two threads, copies its main file, -wal, -journal
    /// and `_EXTERNAL_DATA` files into the scratch folder for the working copy that follows.
    func recordCopying(_ family: StoreFamily) throws {
        var originals = [family.main, family.wal, family.journal].compactMap { $0 }.filter { staged[$0.path] == nil }
        let listing = externalData[family.main.path] == nil ? try ExternalDataFolder.listing(family, storeName: family.main.lastPathComponent) : nil
        let externalFiles = listing.map { $0.entries.values.filter(\.exists).map(\.name).sorted() } ?? []
        guard !originals.isEmpty || !externalFiles.isEmpty else { return try ledger.record(family.files) }
        let folder = try scratch.makeSubfolder(named: "staged-" + family.main.lastPathComponent)
        // A store read a second time in one run (`migration X --to X`): its files were hashed and
        // copied already, so the new copy is made from ours, checked against the recorded hash.
        originals = try originals.enumerated().compactMap { i, url in
            guard let hash = ledger.entry(for: url.path)?.sha256, let own = pristine[url.path] else { return url }
            let copy = folder.appendingPathComponent("own-\(i)-\(url.lastPathComponent)")
            guard try SafeCopy.copy(own, to: copy, hashing: true) == hash else {
                unlink(copy.path)
                return url
            }
            staged[url.path] = copy
            return nil
        }
        let pairs = originals.enumerated().map { (from: $1, to: folder.appendingPathComponent("\($0)-\($1.lastPathComponent)")) }
        let source = family.supportFolder?.appendingPathComponent("_EXTERNAL_DATA")
        let externalPairs = externalFiles.enumerated().compactMap { i, name in
            source.map { (name: name, from: $0.appendingPathComponent(name), to: folder.appendingPathComponent("external-\(i)")) }
        }
        try ledger.record(family.files, copying: pairs + externalPairs.map { (from: $0.from, to: $0.to) })
        for pair in pairs { staged[pair.from.path] = pair.to }
        if let listing {
            var hashes: [String: String] = [:]
            for pair in externalPairs {
                // The hash taken as the file was copied, or (when the ledger knew the file by another
                // spelling of its path) the hash of our copy, which holds the bytes as read.
                hashes[pair.name] = try ledger.entry(for: pair.from.path)?.sha256 ?? SHA256.hexOfFile(at: pair.to)
            }
            externalData[family.main.path] = ExternalDataFolder.made(
                kind: listing.kind, entries: listing.entries, storeName: family.main.lastPathComponent,
                copies: Dictionary(uniqueKeysWithValues: externalPairs.map { ($0.name, $0.to) }), hashes: hashes)
        }
    }

    /// Each store's `_EXTERNAL_DATA`, copied and hashed while it was recorded, by main file path:
    /// kept for every working copy of that store (nothing writes the copies).
    private var externalData: [String: ExternalDataFolder] = [:]

    /// Copies this session made that still hold their original's bytes (original path → copy).
    private var pristine: [String: URL] = [:]

    /// Remembers a working copy's files as copies of their originals, unless SQLite may change
    /// them (a hot journal is rolled back into the copy's main file).
    private func remember(_ copy: WorkingCopy) {
        guard !copy.rollsBackJournal, copy.databaseFile.path != copy.family.main.path else { return }
        pristine[copy.family.main.path] = copy.databaseFile
        let wal = copy.databaseFile.path + "-wal"
        if let original = copy.family.wal, FileManager.default.fileExists(atPath: wal) { pristine[original.path] = URL(fileURLWithPath: wal) }
    }

    /// The staged copies of `family`'s files, handed over once.
    func takeStaged(_ family: StoreFamily) -> [String: URL] {
        var taken: [String: URL] = [:]
        for url in [family.main, family.wal, family.journal].compactMap({ $0 }) {
            if let copy = staged.removeValue(forKey: url.path) { taken[url.path] = copy }
        }
        return taken
    }

    /// `hashes(for:naming:)`, computed when first asked for: a store read in place is hashed
    /// beside its reading, and only the commands that show the hashes wait for them.
    func deferredHashes(for family: StoreFamily, naming: String) -> Deferred<[String: String]> {
        // Each file's hash, or the work still taking it: never the ledger itself, which a closure
        // holding it would make copy itself whole at its next change (4,000 stores: 4,000 copies).
        var known: [String: String] = [:], waiting: [(name: String, path: String, hashing: PendingHashes)] = []
        for (url, suffix) in [(family.main, ""), (family.wal, "-wal"), (family.shm, "-shm"), (family.journal, "-journal")] {
            guard let url else { continue }
            switch ledger.hashSource(for: url.path) {
            case .known(let hash): known[naming + suffix] = hash
            case .pending(let hashing): waiting.append((naming + suffix, url.path, hashing))
            case nil: continue
            }
        }
        guard !waiting.isEmpty else { return Deferred(known) }
        return Deferred { [known, waiting] in
            var all = known
            for item in waiting { all[item.name] = item.hashing.hash(for: item.path) }
            return all
        }
    }

    /// The recorded SHA-256 of each file of `family`, named by the store's path `naming`
    /// (sidecars get their suffix; support files are left out).
    func hashes(for family: StoreFamily, naming: String) -> [String: String] {
        Self.hashes(in: ledger, for: family, naming: naming)
    }

    private static func hashes(in ledger: EvidenceLedger, for family: StoreFamily, naming: String) -> [String: String] {
        var result: [String: String] = [:]
        for (url, suffix) in [(family.main, ""), (family.wal, "-wal"), (family.shm, "-shm"), (family.journal, "-journal")] {
            guard let url, let entry = ledger.entry(for: url.path), let hash = entry.sha256 else { continue }
            result[naming + suffix] = hash
        }
        return result
    }

    /// Hashes the family of `main`, then readies it for reading: where it lies, or copied into a
    /// fresh subfolder of the scratch folder (`WorkingCopy.readsInPlace`).
    public func workingCopy(of main: URL, options: OpenOptions = OpenOptions()) throws -> WorkingCopy {
        var isDir: ObjCBool = false
        let family = StoreFamily.beside(main)
        if FileManager.default.fileExists(atPath: main.path, isDirectory: &isDir), !isDir.boolValue {
            try recordForReading(family, options: options)
        }
        let folder = scratch.subfolderPath(named: main.lastPathComponent)
        let copy = try WorkingCopy(family: family, name: main.lastPathComponent, displayPath: main.path, into: folder, options: options,
                                   staged: takeStaged(family), externalData: externalData[family.main.path],
                                   preparing: { [scratch] in try scratch.makeSubfolder(at: folder) })
        remember(copy)
        TestPause.reach("working-copy")
        return copy
    }

    /// Copies a found store (from a folder, archive or backup) into a fresh subfolder.
    public func workingCopy(of store: FoundStore, options: OpenOptions = OpenOptions()) throws -> WorkingCopy {
        let folder = scratch.subfolderPath(named: store.name)
        // Files extracted from an archive are already storelens's own copies in the scratch folder.
        let extracted = store.family.main.standardizedFileURL.path.hasPrefix(scratch.url.standardizedFileURL.path + "/")
        let copy = try WorkingCopy(family: store.family, name: store.name, displayPath: store.path, into: folder, options: options,
                                   alreadyPrivate: extracted, staged: takeStaged(store.family),
                                   externalData: externalData[store.family.main.path],
                                   preparing: { [scratch] in try scratch.makeSubfolder(at: folder) })
        remember(copy)
        // Tests interrupt here: the copy exists in the scratch folder and must be removed.
        TestPause.reach("working-copy")
        return copy
    }

    /// Starts hashing the originals again on a background thread, so the after-hash runs beside
    /// the command's own work instead of after it. `stores(from:…)` calls it once every store has
    /// its working copy: commands read only their copies from then on. It is safe at any point:
    /// files recorded later are hashed by `finish()` itself, and `finish()` compares every file's
    /// identity at the end, so a write made after the background hash is still caught (it
    /// changes ctime).
    public func verifyInBackground() {
        guard verification == nil else { return }
        verification = BackgroundVerification(ledger)
    }

    private var verification: BackgroundVerification?

    /// What a failure while reading is to be reported as. When an original changed while it was
    /// read (cut short, replaced, a `-wal` that appeared), SQLite's complaint about the bytes it
    /// got ("malformed", "not a database") is about the change, not the evidence as it came: the
    /// change is the answer (exit 3). Otherwise the error itself. Identities only (inode, size,
    /// times): a failing run is not held up re-hashing what is plainly unchanged.
    public func explaining(_ error: Error) -> Error {
        if case .evidenceChanged? = error as? AcquisitionError { return error }
        if let changed = ledger.firstChange() { return changed }
        if let path = MappedFile.cutShort(among: Set(ledger.paths)).sorted().first {
            return AcquisitionError.evidenceChanged(path: path, before: ledger.entry(for: path)?.sha256 ?? "(identity)",
                                                    after: "(it was cut short while storelens read it in place)")
        }
        return error
    }

    /// Runs `body` with this session, removing the scratch folder whatever happens and reporting a
    /// failure as `explaining` tells (the one place a command's session ends on an error).
    public func reading<T>(_ body: (EvidenceSession) throws -> T) throws -> T {
        defer { scratch.remove() }
        do {
            return try body(self)
        } catch {
            throw explaining(error)
        }
    }

    /// Set once the originals were checked unchanged (`finish`), or replaced on purpose after they
    /// were (`replacedOriginals`): whoever ends the session (`Storelens.reading`) does not check
    /// them again. An export and a report check them before they write; the rest after reading.
    public private(set) var isFinished = false

    /// The originals were checked unchanged and then changed on purpose (an in-place repair's
    /// swap): there is nothing left to check them against.
    public func replacedOriginals() {
        isFinished = true
    }

    /// Checks every original against its recorded hash, then removes the scratch folder.
    /// - Parameter keepingScratch: leave the private copies for the caller to read from (an
    ///   export copying `_EXTERNAL_DATA` files after the check); it removes the folder itself.
    public func finish(keepingScratch: Bool = false) throws {
        defer {
            if !keepingScratch { scratch.remove() }
            EvidenceReads.flush()
        }
        // The hashes taken beside the reading: one that could not be taken fails the run here.
        try ledger.settle()
        if let verification {
            try verification.wait()
            // Tests change an original here, after its after-hash: only its identity can tell.
            TestPause.reach("evidence-rehashed")
            try ledger.verifyUnchanged { !verification.covers($0) }
            try ledger.verifyIdentities()
        } else {
            try ledger.verifyUnchanged()
        }
        // The ledger names a file that changed; this catches one it cannot have seen (cut short
        // while mapped, and restored between the checks).
        if let path = MappedFile.cutShort(among: Set(ledger.paths)).sorted().first {
            throw AcquisitionError.evidenceChanged(path: path, before: ledger.entry(for: path)?.sha256 ?? "(identity)",
                                                   after: "(it was cut short while storelens read it in place)")
        }
        isFinished = true
    }
}

/// The after-hash of a ledger, run on a thread of its own (`BackgroundWork`).
private final class BackgroundVerification: Sendable {
    private let hashing: BackgroundWork<Result<Void, Error>>
    /// Files recorded after the hashing started are hashed by `wait` itself.
    private let covered: Set<String>

    init(_ ledger: EvidenceLedger) {
        covered = Set(ledger.paths)
        hashing = BackgroundWork(name: "storelens.verify") { Result { try ledger.verifyUnchanged() } }
    }

    func wait() throws {
        try hashing.result().get()
    }

    func covers(_ path: String) -> Bool { covered.contains(path) }
}
