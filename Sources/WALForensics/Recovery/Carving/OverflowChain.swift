import Foundation
import StoreFormats

/// The page images a carved cell's overflow chain is read from: the same state of the store the
/// cell's own page came from (docs/recover.md, "Records whose payload spills"). Pages are handed out
/// one at a time from the carver's own readers (the mapped main file, the `-wal`, the `-journal`).
struct OverflowView {
    /// One page of the view: its bytes, and whether they come from the same moment as the cell's
    /// page (a frame of the cell's WAL generation at or before its frame, the `-journal`'s image, the
    /// main file for the main file's own cells) rather than from a later state read in their place.
    struct Page {
        let bytes: UnsafeRawBufferPointer
        let sameMoment: Bool
        /// Whether the bytes are of the state `isInUse` describes (the main file, a committed
        /// state), so that a page in use there is one whose bytes were reused. A page image of the
        /// cell's own moment that `isInUse` does not describe (an older generation's frame, a
        /// `-journal` image, a frame after the last commit) holds what the page held then.
        var checkUse = true
        /// Whether the transaction whose page image holds the cell wrote this page too. A freed
        /// cell's chain is never written by a transaction unless its pages were taken for something
        /// else (a new record's overflow, a freelist trunk), so a freed cell's chain through such a
        /// page is turned away.
        var writtenWithCell = false
    }

    /// The page `number` in this view, or nil when the view has no such page.
    let page: (Int) -> Page?
    /// Whether the view's b-trees use `number` (a b-tree page, a freelist trunk, or an overflow
    /// page of a live cell): its bytes are then not the carved cell's any more.
    let isInUse: (Int) -> Bool
    /// Whether a live cell of the view with this rowid and payload length starts its chain at
    /// `first`: the chain is then the same record's own (an older copy of a cell that still
    /// lives, or one a page image of another moment holds), not pages another record took.
    let isLiveChain: (_ first: Int, _ payload: Int, _ rowid: Int64) -> Bool
}

/// Why a spilled cell was turned away (counted in `PageCarver.rejected`, listed in docs/recover.md).
enum OverflowRejection: String, Error {
    /// A chain page number is 0 where a page must follow, page 1, or past the view's last page.
    case pageRange = "overflow-page-range"
    /// The chain comes back to a page it already visited.
    case loop = "overflow-loop"
    /// The chain ends before the payload does, or goes on after it.
    case chainLength = "overflow-chain-length"
    /// A chain page is used by the view's b-trees: its bytes were reused.
    case reused = "overflow-reused"
    /// The payload is larger than `OverflowChain.maxPayload`.
    case tooLarge = "overflow-too-large"
    /// The record header does not fit in the cell's local part.
    case headerNotLocal = "overflow-header-not-local"
}

/// SQLite's rules for a table-leaf cell whose payload does not fit on its page, and the bounded
/// walk of its overflow chain.
enum OverflowChain {
    /// Largest payload reassembled (bytes): a bigger record is turned away rather than held in
    /// memory. Core Data keeps large binary attributes in external files when told to; 16 MiB is
    /// far above anything the real stores hold in a row.
    static let maxPayload = 16 << 20

    /// Bytes of a `payload`-byte payload that stay on a table leaf page of `usable` bytes (SQLite's
    /// btreeParseCellAdjustSizeForOverflow): all of it up to maxLocal, else minLocal plus what fills
    /// the last overflow page, when that still fits.
    static func localSize(payload: Int, usable: Int) -> Int {
        let maxLocal = usable - 35
        guard payload > maxLocal else { return payload }
        let minLocal = (usable - 12) * 32 / 255 - 23
        let size = minLocal + (payload - minLocal) % (usable - 4)
        return size <= maxLocal ? size : minLocal
    }

    /// Appends to `into` the `count` bytes of payload held by the chain starting at `first`, read
    /// page by page from `view`. Every step is bounded: page numbers in range, no page twice, exactly
    /// ceil(count / (usable - 4)) pages with the last one ending the chain, none in use in the view.
    ///
    /// - Returns: whether every page came from the cell's own moment (`OverflowView.Page.sameMoment`).
    /// A chain whose first page a live cell of the same record (`rowid`, `payload`) starts from is
    /// that record's: its pages are in use by the record itself, not reused.
    /// `freed`: the cell was in free space (not a cell its page points to).
    static func read(first: UInt32, count: Int, usable: Int, payload: Int, rowid: Int64?, freed: Bool, view: OverflowView,
                     into out: inout [UInt8]) throws(OverflowRejection) -> Bool {
        let perPage = usable - 4
        guard perPage > 0, count > 0 else { throw .chainLength }
        guard count <= maxPayload else { throw .tooLarge }
        let pages = (count + perPage - 1) / perPage
        // First the chain's shape alone (page numbers, no page twice, its length): only a chain
        // whose shape holds is checked against the state's b-trees, whose walk is made on first need.
        var chain: [(number: Int, page: OverflowView.Page)] = []
        chain.reserveCapacity(min(pages, 4096))
        var visited: Set<Int> = []
        var next = Int(first)
        for index in 0 ..< pages {
            guard next >= 2, let page = view.page(next), page.bytes.count >= usable else { throw .pageRange }
            guard visited.insert(next).inserted else { throw .loop }
            if freed, page.writtenWithCell { throw .reused }
            guard let following = PageBytes.u32(page.bytes, 0) else { throw .pageRange }
            // The last page ends the chain (SQLite writes 0 there); every other page names the next.
            if index == pages - 1 {
                guard following == 0 else { throw .chainLength }
            } else if following == 0 {
                throw .chainLength
            }
            chain.append((next, page))
            next = Int(following)
        }
        var liveChain = false
        for (index, link) in chain.enumerated() where link.page.checkUse && !liveChain && view.isInUse(link.number) {
            // Only the first page can show whose chain this is; the rest follow its links.
            guard index == 0, let rowid, view.isLiveChain(link.number, payload, rowid) else { throw .reused }
            liveChain = true
        }
        var left = count
        var sameMoment = true
        for link in chain {
            let take = min(left, perPage)
            out.append(contentsOf: UnsafeRawBufferPointer(rebasing: link.page.bytes[4 ..< 4 + take]))
            left -= take
            sameMoment = sameMoment && link.page.sameMoment
        }
        return sameMoment
    }
}
