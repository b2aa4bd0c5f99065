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

    let evidence: WALEvidence
    var carver: PageCarver
    let pageSize: Int

    init?(evidence: WALEvidence, shapes: [CarvingShape]) {
        guard !shapes.isEmpty, let header = evidence.header ?? nil else { return nil }
        self.evidence = evidence
        pageSize = header.pageSize
        var shapes = shapes
        for i in shapes.indices { shapes[i].encoding = header.textEncoding }
        carver = PageCarver(shapes: shapes, usableSize: header.pageSize - Int(header.reservedBytesPerPage))
    }

    mutating func carve(_ body: (Hit) -> Void) {
        carveMainFile(body)
        carveWAL(body)
        carveJournal(body)
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

    mutating func carveMainFile(_ body: (Hit) -> Void) {
        let file = evidence.displayPath
        evidence.mainFile.withUnsafeBytes { (main: UnsafeRawBufferPointer) in
            let pages = main.count / pageSize
            let (trunks, leaves) = freelist(main, pages: pages)
            for number in stride(from: 1, through: pages, by: 1) {
                let base = (number - 1) * pageSize
                let page = UnsafeRawBufferPointer(rebasing: main[base ..< base + pageSize])
                let role: PageCarver.Role = trunks.contains(number) ? .freelistTrunk : leaves.contains(number) ? .freelistLeaf : .btree(cells: false)
                carver.carve(page, pageNumber: number, role: role) { record in
                    body(Hit(record: record, find: Self.find(record, file: file, origin: .mainFile, page: number, base: base, frame: nil), state: .carved))
                }
            }
        }
    }

    mutating func carveWAL(_ body: (Hit) -> Void) {
        guard let wal = evidence.wal, let data = evidence.walData, let header = wal.header, wal.isUsable,
              wal.pageSize == pageSize else { return }
        let file = evidence.walName
        let lastCommit = wal.lastCommitFrame
        let frameSize = WALFrame.headerLength + pageSize
        data.withUnsafeBytes { (raw: UnsafeRawBufferPointer) in
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
                carver.carve(page, pageNumber: Int(number), role: .btree(cells: origin != .committedFrame)) { record in
                    let state: RecordVersion.State = origin == .uncommittedFrame && record.area == .cell ? .uncommitted : .carved
                    body(Hit(record: record, find: Self.find(record, file: file, origin: origin, page: Int(number), base: base, frame: slot), state: state))
                }
            }
        }
    }

    /// Rollback-journal records: a 4-byte page number, the page, a 4-byte checksum, after a header
    /// padded to the sector size. A journal whose header was zeroed (journal_mode=PERSIST after a
    /// commit) still holds its records; the sector size is then the one whose first record names a
    /// plausible page and holds a b-tree page.
    mutating func carveJournal(_ body: (Hit) -> Void) {
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
            var at = first
            var index = 0
            while at + recordSize <= raw.count {
                index += 1
                defer { at += recordSize }
                guard let number = PageBytes.u32(raw, at), number >= 1, number <= maxPage else { continue }
                let base = at + 4
                let page = UnsafeRawBufferPointer(rebasing: raw[base ..< base + pageSize])
                carver.carve(page, pageNumber: Int(number), role: .btree(cells: true)) { record in
                    body(Hit(record: record, find: Self.find(record, file: file, origin: .journal, page: Int(number), base: base, frame: index), state: .carved))
                }
            }
        }
    }

    static func find(_ r: CarvedRecord, file: String, origin: RecordVersion.Find.Origin, page: Int, base: Int, frame: Int?) -> RecordVersion.Find {
        RecordVersion.Find(file: file, origin: origin, area: r.area, page: page, offset: r.offset, fileOffset: base + r.offset,
                           frame: frame, confidence: r.confidence)
    }
}
