import Foundation

/// A store found in an input and copied into the scratch folder, ready to open.
public struct AcquiredStore {
    /// How to name the store to the user: the path given, or `input!path/inside/archive`.
    public let displayPath: String
    /// What acquisition learnt about it: container, sidecars, hashes, location.
    public let found: FoundStore
    public let copy: WorkingCopy

    public init(displayPath: String, found: FoundStore, copy: WorkingCopy) {
        self.displayPath = displayPath
        self.found = found
        self.copy = copy
    }
}

extension EvidenceSession {
    /// Resolves command-line inputs (store files, folders, archives, backups) to stores and makes
    /// a working copy of each.
    ///
    /// - Parameter select: `--store PATH`: keep only the store whose path ends with this, and fail
    ///   if none or several match. Without it, every store found is returned.
    /// - Returns: the stores, and the inventories they came from (for damage and warnings).
    public func stores(from inputs: [String], select: String? = nil, options: OpenOptions = OpenOptions(),
                       limits: ArchiveLimits = ArchiveLimits()) throws -> [AcquiredStore] {
        var candidates = try found(in: inputs, select: select, limits: limits, open: options)
        // A Core Data XML or binary store beside SQLite stores is left to the commands that read
        // it (as before they knew it); alone (or picked with --store) it is refused, saying so.
        if candidates.contains(where: { $0.format == .sqlite }) { candidates.removeAll { $0.format != .sqlite } }
        let acquired = try candidates.map { store in
            AcquiredStore(displayPath: store.path, found: store, copy: try workingCopy(of: store, options: options))
        }
        verifyInBackground()
        return acquired
    }

    /// Like `stores(from:…)`, but a store refused as input (truncated, not SQLite, a WAL that
    /// cannot belong) does not stop the others: it is listed in `refused` and the rest go on.
    /// Our own failures (scratch, evidence guard) still stop everything; when every store is
    /// refused, the first refusal is thrown as before.
    public func stores(from inputs: [String], select: String? = nil, options: OpenOptions = OpenOptions(),
                       limits: ArchiveLimits = ArchiveLimits(), refused: inout [RefusedStore]) throws -> [AcquiredStore] {
        var unused: [AcquiredAtomicStore] = []
        return try stores(from: inputs, select: select, options: options, limits: limits, refused: &refused, atomic: &unused, collectingAtomic: false)
    }

    /// Like `stores(from:…refused:)`, and Core Data XML and binary stores are copied into the
    /// working folder and returned in `atomic` (for `inspect`, `rows`, `export`) instead of
    /// being refused.
    public func stores(from inputs: [String], select: String? = nil, options: OpenOptions = OpenOptions(),
                       limits: ArchiveLimits = ArchiveLimits(), refused: inout [RefusedStore],
                       atomic: inout [AcquiredAtomicStore]) throws -> [AcquiredStore] {
        try stores(from: inputs, select: select, options: options, limits: limits, refused: &refused, atomic: &atomic, collectingAtomic: true)
    }

    private func stores(from inputs: [String], select: String?, options: OpenOptions, limits: ArchiveLimits,
                        refused: inout [RefusedStore], atomic: inout [AcquiredAtomicStore], collectingAtomic: Bool) throws -> [AcquiredStore] {
        var acquired: [AcquiredStore] = []
        var firstRefusal: AcquisitionError?
        for store in try found(in: inputs, select: select, limits: limits, open: options) {
            if collectingAtomic, store.format != .sqlite {
                atomic.append(try atomicCopy(of: store))
                continue
            }
            do {
                acquired.append(AcquiredStore(displayPath: store.path, found: store, copy: try workingCopy(of: store, options: options)))
            } catch let error as AcquisitionError where !error.isInternal && !error.isOurs {
                firstRefusal = firstRefusal ?? error
                refused.append(RefusedStore(path: store.path, error: error))
            }
        }
        if acquired.isEmpty, atomic.isEmpty, let firstRefusal { throw firstRefusal }
        verifyInBackground()
        return acquired
    }

    /// What every command does with the damage its inputs' inventories report (input → what is
    /// wrong): a damaged archive stops the command, since what it still holds may be an older
    /// state (a -wal cut short shows fewer commits) or corrupt bytes. It is read anyway only when
    /// asked (`limits.readDamaged`) and something was found in it, and the damage is then kept
    /// for the command to state (`damagedInputs`).
    public func admit(damage: [String: String], anythingFound: Bool, limits: ArchiveLimits) throws {
        let damaged = damage.sorted { $0.key < $1.key }
        guard let (input, detail) = damaged.first else { return }
        guard limits.readDamaged, anythingFound else { throw AcquisitionError.archiveDamaged(path: input, detail: detail) }
        damagedInputs += damaged.map { DamagedInput(input: $0.key, detail: $0.value) }
    }

    /// The stores the inputs hold (each input read once), narrowed by `--store`: the one place
    /// both forms of `stores(from:…)` find what to copy, so they cannot drift apart.
    func found(in inputs: [String], select: String?, limits: ArchiveLimits, open: OpenOptions) throws -> [FoundStore] {
        // Every store found is readied unless `--store` names one (the same match as below).
        let resolver = InputResolver(session: self, limits: limits, stagesCopies: { path in select.map { path.hasSuffix($0) } ?? true },
                                     open: open)
        var found: [FoundStore] = []
        var damage: [String: String] = [:]
        var emptyBackups: [(input: String, listed: Int)] = []
        for input in InputResolver.distinct(inputs) {
            let inventory = try resolver.inventory(of: input)
            found += inventory.stores
            if let d = inventory.damage { damage[input] = d }
            let missing = inventory.skipped.filter { $0.reason == SkippedEntry.missingFromBackup }.count
            if inventory.kind == .backup, inventory.stores.isEmpty, missing > 0, missing == inventory.skipped.count {
                emptyBackups.append((input, missing))
            }
        }
        if let select {
            let matches = found.filter { $0.path.hasSuffix(select) }
            guard matches.count == 1 else {
                throw AcquisitionError.storeSelection(select: select, candidates: found.map(\.path), matched: matches.count)
            }
            found = matches
        }
        try admit(damage: damage, anythingFound: !found.isEmpty, limits: limits)
        if found.isEmpty, emptyBackups.count == InputResolver.distinct(inputs).count, let (input, listed) = emptyBackups.first {
            throw AcquisitionError.backupFilesMissing(backup: input, listed: listed)
        }
        if found.isEmpty {
            throw AcquisitionError.noStores(inputs: inputs)
        }
        return found
    }
}

/// An archive read with `--read-damaged` although it is damaged, and what is wrong with it.
public struct DamagedInput: Sendable, Equatable {
    public let input: String
    public let detail: String

    public init(input: String, detail: String) {
        self.input = input
        self.detail = detail
    }

    /// The warning a command prints, and the finding `check` and `report` list.
    public var warning: String {
        "\(input): \(detail); read as asked (--read-damaged): what is shown may be an older or partial state, or hold corrupt bytes"
    }
}

/// A store an input held that could not be read, and why (one sentence).
public struct RefusedStore: Sendable, Equatable {
    public let path: String
    public let error: AcquisitionError
    public var reason: String { error.description }
}

extension AcquisitionError {
    /// Failures of storelens's own working space, never a fact about the evidence.
    var isOurs: Bool {
        WorkingFolderFailure.from(self) != nil
    }
}
