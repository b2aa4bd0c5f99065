import Foundation
import StoreFormats

/// Every page image of a store family that may hold records no committed state shows, carved one
/// page at a time (only the page being read is looked at; the bytes are the working copies):
///
/// - the main file's pages: free space of table leaves; freelist trunk pages past their leaf list;
///   freelist leaf pages whole (cells and free space);
/// - the `-wal`'s frames up to the last valid commit: free space (their cells are the committed
///   states `RecordRecovery` reads);
/// - frames after the last valid commit, and whole frames past where SQLite's walk stops: cells
///   (`uncommitted` when the salts are the header's, `carved` for an older generation) and free space;
/// - a `-journal`'s page images: cells and free space.
struct StoreCarver {
    struct Hit {
        let record: CarvedRecord
        let find: RecordVersion.Find
        let state: RecordVersion.State
    }

    /// An index entry and where it was (`IndexCarver`).
    struct IndexHit {
        let entry: IndexEntry
        let find: RecordVersion.Find
    }

    let evidence: WALEvidence
    var carver: PageCarver
    /// Reads index pages for entries of deleted records (nil: no index to read).
    var indexCarver: IndexCarver?
    let pageSize: Int
    /// Who uses each page in the states overflow chains are read in, walked on first need.
    let ownership: OverflowOwnership

    init?(evidence: WALEvidence, shapes: [CarvingShape]) {
        guard !shapes.isEmpty, let header = evidence.header ?? nil else { return nil }
        self.evidence = evidence
        pageSize = header.pageSize
        var shapes = shapes
        for i in shapes.indices { shapes[i].encoding = header.textEncoding }
        carver = PageCarver(shapes: shapes, usableSize: header.pageSize - Int(header.reservedBytesPerPage))
        ownership = OverflowOwnership(evidence: evidence, usableSize: carver.usableSize)
    }

    /// - Parameter index: each index entry read (`indexCarver`), as the pages are read.
    mutating func carve(_ body: (Hit) -> Void, index: (IndexHit) -> Void = { _ in }) {
        carveMainFile(body, index: index)
        carveWAL(body, index: index)
        carveJournal(body, index: index)
    }

    /// The main file's freelist: trunk pages and leaf pages, walked with every step bounded.
    func freelist(_ main: UnsafeRawBufferPointer, pages: Int) -> (trunks: Set<Int>, leaves: Set<Int>) {
        guard let header = evidence.header else { return ([], []) }
        var trunks: Set<Int> = [], leaves: Set<Int> = []
        var next = Int(header.firstFreelistTrunk)
        while next >= 1, next <= pages, !trunks.contains(next), trunks.count + leaves.count < pages {
            trunks.insert(next)
            let base = (next - 1) * pageSize
            guard let following = PageBytes.u32(main, base), let count = PageBytes.u32(main, base + 4) else { break }
            for i in 0 ..< Int(min(count, UInt32(pageSize / 4 - 2))) {
                if let leaf = PageBytes.u32(main, base + 8 + 4 * i), leaf >= 1, Int(leaf) <= pages { leaves.insert(Int(leaf)) }
            }
            next = Int(following)
        }
        return (trunks, leaves.subtracting(trunks))
    }

    mutating func carveMainFile(_ body: (Hit) -> Void, index: (IndexHit) -> Void) {
        let file = evidence.displayPath
        evidence.mainFile.withUnsafeBytes { (main: UnsafeRawBufferPointer) in
            let pages = main.count / pageSize
            let (trunks, leaves) = freelist(main, pages: pages)
            let ownership = self.ownership
            let pageSize = self.pageSize
            let mainState: (Int) -> UnsafeRawBufferPointer? = { Self.mainPage(main, $0, pageSize: pageSize, sameMoment: true)?.bytes }
            let view = OverflowView(page: { n in Self.mainPage(main, n, pageSize: pageSize, sameMoment: true) },
                                    isInUse: { ownership.isInUse($0, commit: 0) },
                                    isLiveChain: { ownership.isLiveChain(first: $0, payload: $1, rowid: $2, commit: 0, state: mainState) })
            for number in stride(from: 1, through: pages, by: 1) {
                let base = (number - 1) * pageSize
                let page = UnsafeRawBufferPointer(rebasing: main[base ..< base + pageSize])
                let role: PageCarver.Role = trunks.contains(number) ? .freelistTrunk : leaves.contains(number) ? .freelistLeaf : .btree(cells: false)
                carver.carve(page, pageNumber: number, role: role, view: view) { record in
                    body(Hit(record: record, find: Self.find(record, file: file, origin: .mainFile, page: number, base: base, frame: nil), state: .carved))
                }
                // The main file's own index pages: their cells are the live index; a freed page's are not.
                if !trunks.contains(number) {
                    let freed = leaves.contains(number)
                    indexCarver?.carve(page, pageNumber: number, cells: freed, freelistLeaf: freed) { entry in
                        index(IndexHit(entry: entry, find: Self.find(entry, file: file, origin: .mainFile, page: number, base: base, frame: nil)))
                    }
                }
                // Read in order: the pages carved are given back every few MiB, so a large store's
                // mapping does not stay resident whole.
                MappedFile.noteBytesRead(pageSize)
            }
        }
    }

    mutating func carveWAL(_ body: (Hit) -> Void, index: (IndexHit) -> Void) {
        guard let wal = evidence.wal, let data = evidence.walData, let header = wal.header, wal.isUsable,
              wal.pageSize == pageSize else { return }
        let file = evidence.walName
        let lastCommit = wal.lastCommitFrame
        let frameSize = WALFrame.headerLength + pageSize
        let pageSize = pageSize
        let ownership = ownership
        let frames = WALFrameIndex(slots: wal.totalFrameSlots, frameSize: frameSize)
        data.withUnsafeBytes { (raw: UnsafeRawBufferPointer) in
          evidence.mainFile.withUnsafeBytes { (main: UnsafeRawBufferPointer) in
            for slot in stride(from: 1, through: wal.totalFrameSlots, by: 1) {
                let start = WALHeader.length + (slot - 1) * frameSize
                guard start + frameSize <= raw.count, let number = PageBytes.u32(raw, start), number != 0,
                      let salt1 = PageBytes.u32(raw, start + 8), let salt2 = PageBytes.u32(raw, start + 12) else { continue }
                let origin: RecordVersion.Find.Origin
                if slot <= wal.validFrameCount {
                    origin = slot <= lastCommit ? .committedFrame : .uncommittedFrame
                } else {
                    origin = salt1 == header.salt1 && salt2 == header.salt2 ? .uncommittedFrame : .olderGeneration
                }
                let base = start + WALFrame.headerLength
                let page = UnsafeRawBufferPointer(rebasing: raw[base ..< base + pageSize])
                // Overflow chains are read in the state of this frame's transaction: the latest frame
                // of each page up to the transaction's commit frame in its generation (SQLite writes a
                // transaction's pages in page order, so a cell's new overflow pages often come after
                // its leaf; for frames after every commit, up to the generation's last frame), else the
                // main file (for the current generation its base; for an older one a later state, so
                // not the cell's own moment). Pages in use are those of the commit the frame belongs
                // to (the last commit for frames after it; the main file's for an older generation).
                let current = origin != .olderGeneration
                let commit = current ? Self.commit(containing: slot, commitFrames: wal.commitFrames) : 0
                let salts = WALFrameIndex.Salts(salt1, salt2)
                let view = OverflowView(page: { n in
                    if let at = frames.latest(page: n, inTransactionOf: slot, salts: salts, raw: raw) {
                        let from = WALHeader.length + (at - 1) * frameSize + WALFrame.headerLength
                        return OverflowView.Page(bytes: UnsafeRawBufferPointer(rebasing: raw[from ..< from + pageSize]), sameMoment: true,
                                                 checkUse: current && at <= lastCommit,
                                                 writtenWithCell: frames.sameTransaction(at, slot))
                    }
                    return Self.mainPage(main, n, pageSize: pageSize, sameMoment: current)
                }, isInUse: { ownership.isInUse($0, commit: commit) },
                isLiveChain: { ownership.isLiveChain(first: $0, payload: $1, rowid: $2, commit: commit, state: { n in
                    // The committed state `commit`: its latest frame of the page, else the main file.
                    if commit > 0, let header = wal.header, let end = wal.commitFrame(ofCommit: commit),
                       let at = frames.latest(page: n, inTransactionOf: end, salts: .init(header.salt1, header.salt2), raw: raw) {
                        let from = WALHeader.length + (at - 1) * frameSize + WALFrame.headerLength
                        return UnsafeRawBufferPointer(rebasing: raw[from ..< from + pageSize])
                    }
                    return Self.mainPage(main, n, pageSize: pageSize, sameMoment: true)?.bytes
                }) })
                carver.carve(page, pageNumber: Int(number), role: .btree(cells: origin != .committedFrame), view: view) { record in
                    let state: RecordVersion.State = origin == .uncommittedFrame && record.area == .cell ? .uncommitted : .carved
                    body(Hit(record: record, find: Self.find(record, file: file, origin: origin, page: Int(number), base: base, frame: slot), state: state))
                }
                // Every frame's index cells: an entry whose record is gone is what is looked for
                // (the live ones are let go by key once read).
                indexCarver?.carve(page, pageNumber: Int(number), cells: true, freelistLeaf: false) { entry in
                    index(IndexHit(entry: entry, find: Self.find(entry, file: file, origin: origin, page: Int(number), base: base, frame: slot)))
                }
                MappedFile.noteBytesRead(frameSize)
            }
          }
        }
    }

    /// The commit a frame slot belongs to: the first whose commit frame is at or after it (the
    /// last commit for a frame after every commit).
    static func commit(containing slot: Int, commitFrames: [Int]) -> Int {
        var low = 0, high = commitFrames.count
        while low < high {
            let mid = (low + high) / 2
            if commitFrames[mid] < slot { low = mid + 1 } else { high = mid }
        }
        return min(low + 1, commitFrames.count)
    }

    /// Page `n` of the main file.
    static func mainPage(_ main: UnsafeRawBufferPointer, _ n: Int, pageSize: Int, sameMoment: Bool) -> OverflowView.Page? {
        guard n >= 1, n <= main.count / pageSize else { return nil }
        let base = (n - 1) * pageSize
        return OverflowView.Page(bytes: UnsafeRawBufferPointer(rebasing: main[base ..< base + pageSize]), sameMoment: sameMoment)
    }

    /// Rollback-journal records: a 4-byte page number, the page, a 4-byte checksum, after a header
    /// padded to the sector size. A journal whose header was zeroed (journal_mode=PERSIST after a
    /// commit) still holds its records; the sector size is then the one whose first record names a
    /// plausible page and holds a b-tree page.
    mutating func carveJournal(_ body: (Hit) -> Void, index indexHit: (IndexHit) -> Void) {
        guard let data = evidence.journalData, data.count > 28 else { return }
        let file = evidence.displayPath + "-journal"
        let recordSize = pageSize + 8
        let maxPage = UInt32(clamping: max(evidence.mainFile.count / pageSize, 1) * 4 + 1024)
        data.withUnsafeBytes { (raw: UnsafeRawBufferPointer) in
            func plausible(_ at: Int) -> Bool {
                guard at + recordSize <= raw.count, let number = PageBytes.u32(raw, at), number >= 1, number <= maxPage else { return false }
                let type = raw[at + 4 + (number == 1 ? 100 : 0)]
                return [2, 5, 10, 13].contains(type)
            }
            var candidates: [Int] = []
            if let sector = PageBytes.u32(raw, 20), sector >= 32, sector <= 65536, sector & (sector - 1) == 0 { candidates.append(Int(sector)) }
            candidates += [512, 1024, 2048, 4096, 8192, 16384, 32768, 65536]
            guard let first = candidates.first(where: plausible) else { return }
            // Overflow chains of the journal's images: the journal's first image of a page (its
            // content before the transaction), else the main file (a page the transaction did not
            // write); pages in use are the main file's.
            // The journal is mapped: each pass notes what it read, so its pages are given back as
            // it goes (memory follows the records being read, not the journal's size).
            var original: [Int: Int] = [:]
            var scan = first
            while scan + recordSize <= raw.count {
                if let number = PageBytes.u32(raw, scan), number >= 1, number <= maxPage, original[Int(number)] == nil {
                    original[Int(number)] = scan + 4
                }
                scan += recordSize
                MappedFile.noteBytesRead(recordSize)
            }
            let pageSize = pageSize
            let ownership = ownership
            evidence.mainFile.withUnsafeBytes { (main: UnsafeRawBufferPointer) in
            let view = OverflowView(page: { n in
                if let at = original[n] {
                    return OverflowView.Page(bytes: UnsafeRawBufferPointer(rebasing: raw[at ..< at + pageSize]), sameMoment: true,
                                             checkUse: false)
                }
                return Self.mainPage(main, n, pageSize: pageSize, sameMoment: true)
            }, isInUse: { ownership.isInUse($0, commit: 0) },
            isLiveChain: { ownership.isLiveChain(first: $0, payload: $1, rowid: $2, commit: 0, state: { Self.mainPage(main, $0, pageSize: pageSize, sameMoment: true)?.bytes }) })
            var at = first
            var index = 0
            while at + recordSize <= raw.count {
                index += 1
                defer {
                    at += recordSize
                    MappedFile.noteBytesRead(recordSize)
                }
                guard let number = PageBytes.u32(raw, at), number >= 1, number <= maxPage else { continue }
                let base = at + 4
                let page = UnsafeRawBufferPointer(rebasing: raw[base ..< base + pageSize])
                carver.carve(page, pageNumber: Int(number), role: .btree(cells: true), view: view) { record in
                    body(Hit(record: record, find: Self.find(record, file: file, origin: .journal, page: Int(number), base: base, frame: index), state: .carved))
                }
                indexCarver?.carve(page, pageNumber: Int(number), cells: true, freelistLeaf: false) { entry in
                    indexHit(IndexHit(entry: entry, find: Self.find(entry, file: file, origin: .journal, page: Int(number), base: base, frame: index)))
                }
            }
            }
        }
    }

    static func find(_ e: IndexEntry, file: String, origin: RecordVersion.Find.Origin, page: Int, base: Int, frame: Int?) -> RecordVersion.Find {
        RecordVersion.Find(file: file, origin: origin, area: e.area, page: page, offset: e.offset, fileOffset: base + e.offset,
                           frame: frame, confidence: .indexOnly)
    }

    static func find(_ r: CarvedRecord, file: String, origin: RecordVersion.Find.Origin, page: Int, base: Int, frame: Int?) -> RecordVersion.Find {
        RecordVersion.Find(file: file, origin: origin, area: r.area, page: page, offset: r.offset, fileOffset: base + r.offset,
                           frame: frame, confidence: r.confidence)
    }
}

/// The `-wal`'s frames by generation (salts) and page, built on first need: where an overflow chain
/// of a frame's cell is read from.
final class WALFrameIndex {
    struct Salts: Hashable {
        let salt1: UInt32
        let salt2: UInt32
        init(_ salt1: UInt32, _ salt2: UInt32) {
            self.salt1 = salt1
            self.salt2 = salt2
        }
    }

    let slots: Int
    let frameSize: Int
    /// Per generation, per page: the slots holding it, ascending.
    private var index: [Salts: [Int: [Int]]]?
    /// Per slot (index slot - 1): the last slot of its transaction (its generation's next commit
    /// frame, else the generation's last frame); 0 for a slot that holds no frame.
    private var transactionEnd: [Int32] = []

    init(slots: Int, frameSize: Int) {
        self.slots = slots
        self.frameSize = frameSize
    }

    /// Whether two slots are frames of one transaction (of one generation).
    func sameTransaction(_ a: Int, _ b: Int) -> Bool {
        guard a >= 1, b >= 1, a <= transactionEnd.count, b <= transactionEnd.count else { return false }
        return transactionEnd[a - 1] != 0 && transactionEnd[a - 1] == transactionEnd[b - 1]
    }

    /// The last slot of generation `salts` holding page `page`, up to the end of `slot`'s transaction.
    func latest(page: Int, inTransactionOf slot: Int, salts: Salts, raw: UnsafeRawBufferPointer) -> Int? {
        if index == nil { build(raw) }
        guard slot >= 1, slot <= transactionEnd.count, let list = index?[salts]?[page] else { return nil }
        let end = max(slot, Int(transactionEnd[slot - 1]))
        var low = 0, high = list.count
        while low < high {
            let mid = (low + high) / 2
            if list[mid] <= end { low = mid + 1 } else { high = mid }
        }
        return low == 0 ? nil : list[low - 1]
    }

    private func build(_ raw: UnsafeRawBufferPointer) {
        var out: [Salts: [Int: [Int]]] = [:]
        var ends = [Int32](repeating: 0, count: max(0, slots))
        // Slots of the open transaction: a run of one generation's frames since its last commit frame.
        var open: [Int] = []
        var openSalts: Salts?
        func close(at end: Int) {
            for s in open { ends[s - 1] = Int32(clamping: end) }
            open.removeAll(keepingCapacity: true)
        }
        for slot in stride(from: 1, through: slots, by: 1) {
            let start = WALHeader.length + (slot - 1) * frameSize
            guard start + frameSize <= raw.count, let number = PageBytes.u32(raw, start), number != 0,
                  let commitSize = PageBytes.u32(raw, start + 4),
                  let salt1 = PageBytes.u32(raw, start + 8), let salt2 = PageBytes.u32(raw, start + 12) else { continue }
            let salts = Salts(salt1, salt2)
            if salts != openSalts, let last = open.last { close(at: last) }
            openSalts = salts
            out[salts, default: [:]][Int(number), default: []].append(slot)
            open.append(slot)
            if commitSize != 0 { close(at: slot) }
        }
        if let last = open.last { close(at: last) }
        index = out
        transactionEnd = ends
    }
}

/// Which pages the b-trees of a state use (b-tree pages, freelist trunks, overflow pages of live
/// cells): a chain page they use holds other bytes now. The states are the main file and the WAL's
/// commits, walked by `PageOwnershipTracker` only when a spilled cell is first met (stores without
/// one pay nothing); the WAL's tracker moves forward as the frames are carved in order.
final class OverflowOwnership {
    let evidence: WALEvidence
    let usableSize: Int
    private var main: PageOwnershipTracker?
    private var mainFailed = false
    private var wal: PageOwnershipTracker?
    private var walFailed = false

    init(evidence: WALEvidence, usableSize: Int) {
        self.evidence = evidence
        self.usableSize = usableSize
    }

    /// Whether `page` is in use at `commit` (0: the main file). A state whose pages cannot be
    /// walked counts every page as in use: no chain is then trusted.
    func isInUse(_ page: Int, commit: Int) -> Bool {
        guard page >= 2, let number = UInt32(exactly: page) else { return true }
        guard let tracker = tracker(at: commit) else { return true }
        switch tracker.use(of: number)?.kind {
        case nil, .freelistLeaf: return false
        case .interior, .leaf, .overflow, .freelistTrunk, .pointerMap, .lockByte: return true
        }
    }

    /// Whether, at `commit`, the leaf holding the chain that `first` starts has a cell with this
    /// rowid and payload length whose first overflow page is `first` (`state` reads that commit's pages).
    func isLiveChain(first: Int, payload: Int, rowid: Int64, commit: Int, state: (Int) -> UnsafeRawBufferPointer?) -> Bool {
        guard let number = UInt32(exactly: first), let tracker = tracker(at: commit),
              let owner = tracker.overflowOwner(of: number), let leaf = state(Int(owner)),
              let layout = BTreePageLayout.read(leaf, headerOffset: owner == 1 ? 100 : 0, usableSize: usableSize),
              layout.isTableLeaf else { return false }
        let limit = min(usableSize, leaf.count)
        for offset in layout.cells {
            guard let size = PageBytes.varint(leaf, offset, limit: limit), size.value == UInt64(payload),
                  let key = PageBytes.varint(leaf, offset + size.length, limit: limit), Int64(bitPattern: key.value) == rowid else { continue }
            let pointer = offset + size.length + key.length + OverflowChain.localSize(payload: payload, usable: usableSize)
            if pointer + 4 <= limit, PageBytes.u32(leaf, pointer) == number { return true }
        }
        return false
    }

    /// The tracker for `commit`, walked on first need; nil when that state cannot be walked.
    private func tracker(at commit: Int) -> PageOwnershipTracker? {
        if commit == 0 {
            if main == nil, !mainFailed {
                main = try? PageOwnershipTracker(mainFile: evidence.mainFile, files: evidence.files.map { ($0.main, nil) })
                mainFailed = main == nil
            }
            return main
        } else {
            if wal == nil || wal!.commit > commit, !walFailed {
                wal = try? PageOwnershipTracker(mainFile: evidence.mainFile, wal: evidence.wal, walData: evidence.walData,
                                                startCommit: commit, files: evidence.files)
                walFailed = wal == nil
            }
            guard let wal else { return nil }
            wal.advance(toCommit: commit)
            return wal.commit == commit ? wal : nil
        }
    }
}
