import Foundation
import StoreFormats

/// An index entry read from a page image: which index, the indexed values as stored, the rowid
/// (the record's `Z_PK`), and where it was.
struct IndexEntry: Sendable {
    let shape: Int
    let values: [RecordValue]
    let rowid: Int64
    let area: RecordVersion.Find.Area
    let offset: Int
    /// A rebuilt entry whose rowid bytes could as well be text: where a later cell took the end of
    /// a freeblock (SQLite allocates from a freeblock's end), the bytes left are the start of a
    /// longer entry, and its last bytes read as a key that is not its own. Such an entry names a
    /// record only when something else says the same (`CarvedVersions.forEachRemaining`).
    var weak = false
}

/// Finds the entries of known indexes in one page image of an index b-tree: its cells (when the
/// page is not one of the committed state's own: a WAL frame, a freelist leaf, a `-journal` image)
/// and its free space. A cell SQLite freed keeps its record whole where the freeblock header took
/// only bytes before it (an interior cell's child page number) or where it sat behind another
/// freed cell in a merged freeblock; a leaf cell whose own first bytes the header took has lost
/// its record header, and is not read (docs/recover.md, "Index remnants").
struct IndexCarver {
    let shapes: [IndexShape]
    let usableSize: Int
    /// Largest payload an index cell keeps on its page (SQLite's maxLocal for index pages); an
    /// entry larger than that spills, and is not read.
    var maxLocal: Int { (usableSize - 12) * 64 / 255 - 23 }
    /// The index each page number belongs to in the last state, where SQLite can say
    /// (`dbstat`): an entry two indexes would take is given to the page's own.
    let owners: [Int: Int]
    let widths: Set<Int>
    /// Entries turned away, by rule.
    var rejected: [String: Int] = [:]
    /// Whether a key (of the index numbered so) is a row of the last state: a rebuilt reading
    /// naming one is not the freed entry (its entry is the live index's).
    var isLive: (Int, Int64) -> Bool = { _, _ in false }
    private var types: [UInt64] = []

    init(shapes: [IndexShape], usableSize: Int, owners: [Int: Int]) {
        self.shapes = shapes
        self.usableSize = usableSize
        self.owners = owners
        widths = Set(shapes.map { $0.columns.count + 1 })
        types.reserveCapacity(16)
    }

    /// - Parameter cells: whether the page's cells are read (not the committed state's own page).
    /// - Parameter freelistLeaf: the page is a freelist leaf (its areas are named so).
    mutating func carve(_ page: UnsafeRawBufferPointer, pageNumber: Int, cells: Bool, freelistLeaf: Bool, _ out: (IndexEntry) -> Void) {
        let usable = min(usableSize, page.count)
        let headerOffset = pageNumber == 1 ? 100 : 0
        guard let layout = BTreePageLayout.read(page, headerOffset: headerOffset, usableSize: usable), layout.isIndex else { return }
        let interior = layout.isInterior
        if cells {
            for offset in layout.cells {
                let start = interior ? offset + 4 : offset
                if let (entry, _) = read(page, at: start, limit: usable, pageNumber: pageNumber, area: freelistLeaf ? .freelistLeaf : .cell) {
                    out(IndexEntry(shape: entry.shape, values: entry.values, rowid: entry.rowid, area: entry.area, offset: offset))
                }
            }
        }
        for block in layout.freeblocks {
            scan(page, block, pageNumber: pageNumber, area: freelistLeaf ? .freelistLeaf : .freeblock, isFreeblock: true, rebuild: !interior, out)
        }
        if !layout.unallocated.isEmpty {
            scan(page, layout.unallocated, pageNumber: pageNumber, area: freelistLeaf ? .freelistLeaf : .unallocated, isFreeblock: false, rebuild: !interior, out)
        }
    }

    /// Free bytes: a whole entry wherever one parses, and on a leaf (`rebuild`), the cell a
    /// freeblock header was written over wherever 4 bytes can be one (the freeblock's own start,
    /// or a header left inside a merged freeblock or the unallocated gap): rebuilt (`rebuilt`) from
    /// the bytes the header's size covers, up to the first whole entry inside them.
    mutating func scan(_ page: UnsafeRawBufferPointer, _ range: Range<Int>, pageNumber: Int, area: RecordVersion.Find.Area,
                       isFreeblock: Bool, rebuild: Bool, _ out: (IndexEntry) -> Void) {
        var at = range.lowerBound
        while at < range.upperBound - 2 {
            // A freeblock's own first 4 bytes are its header, never an entry.
            let isHeader = isFreeblock && at == range.lowerBound
            if !isHeader, let (entry, end) = read(page, at: at, limit: range.upperBound, pageNumber: pageNumber, area: area) {
                out(entry)
                at = end
                continue
            }
            if rebuild, let size = headerSize(page, at: at, within: range) {
                // The cell ends where the next one starts: a whole entry, or the header of a
                // freeblock that was merged into this one (a cell freed before it); and a cell that
                // can be rebuilt is at most 128 bytes (its payload length took one byte), which
                // bounds the looking on a page crafted to be all such headers.
                var stop = min(at + size, at + Self.largestRebuiltCell)
                var probe = at + 4
                while probe < stop - 2 {
                    if headerSize(page, at: probe, within: probe ..< at + size) != nil
                        || read(page, at: probe, limit: at + size, pageNumber: pageNumber, area: area) != nil { stop = probe; break }
                    probe += 1
                }
                if let entry = rebuilt(page, from: at + 4, to: stop, at: at, pageNumber: pageNumber, area: area) {
                    out(entry)
                    at = stop
                    continue
                }
            }
            at += 1
        }
    }

    /// A rebuilt cell's payload is under 128 bytes (the 4 lost bytes hold a one-byte length).
    static let largestRebuiltCell = 128

    /// The size of the freeblock whose header 4 bytes at `at` can be: the next freeblock further
    /// on (or none), a size of at least a rebuildable cell that stays inside `range`.
    func headerSize(_ page: UnsafeRawBufferPointer, at: Int, within range: Range<Int>) -> Int? {
        guard let next = PageBytes.u16(page, at), let size = PageBytes.u16(page, at + 2),
              next == 0 || (next > at && next < usableSize), size >= 6, at + size <= range.upperBound else { return nil }
        return size
    }

    /// The leaf cell a freeblock header was written over, from the bytes after the header up to
    /// `end`: its payload length, header length and first serial types are gone. Read only for
    /// an index of one text column, whose cell is `[payload][header][text type][rowid type]`, then
    /// the text and the rowid: the lost 4 bytes are either those four (text up to 57 bytes), or
    /// all but the rowid's type, which then starts the bytes (a text type of two bytes). The
    /// rowid's width is read from its type, or tried at every width SQLite uses but none, keeping only
    /// readings where the lost bytes are exactly 4, the rowid takes exactly that width (SQLite
    /// writes the smallest), passes the index's rules, and the text holds no control character (a
    /// freeblock header's bytes, where two freed cells merged, always hold some). Kept only when
    /// exactly one reading passes, over every such index.
    mutating func rebuilt(_ page: UnsafeRawBufferPointer, from start: Int, to end: Int, at offset: Int, pageNumber: Int,
                          area: RecordVersion.Find.Area) -> IndexEntry? {
        guard start < end, end <= min(usableSize, page.count) else { return nil }
        var readings: [IndexEntry] = []
        for (i, shape) in shapes.enumerated() where shape.columns.count == 1 && shape.columns[0].kind == .text {
            // The rowid's type survives as the first byte (a text type of two bytes was lost with the rest).
            if (1 ... 6).contains(page[start]), let width = SQLiteRecord.contentLength(UInt64(page[start])) {
                let textLength = end - start - 1 - width
                if textLength >= 58, lostBytes(textLength: textLength, width: width) == 4,
                   let entry = reading(page, shape: i, text: start + 1 ..< end - width, rowidAt: end - width, width: width, offset: offset, area: area) {
                    readings.append(entry)
                }
            }
            // Not width 0 (Z_PK 1, written as type 9 with no bytes): every body would read as a
            // text and that key, so such a reading tells nothing.
            for width in [1, 2, 3, 4, 6, 8] {
                let textLength = end - start - width
                guard textLength >= 1, textLength <= 57, lostBytes(textLength: textLength, width: width) == 4,
                      let entry = reading(page, shape: i, text: start ..< end - width, rowidAt: end - width, width: width, offset: offset, area: area)
                else { continue }
                readings.append(entry)
            }
        }
        guard readings.count == 1 else {
            if readings.count > 1 { rejected["index-ambiguous-rebuild", default: 0] += 1 }
            return nil
        }
        if let owner = owners[pageNumber], owner != readings[0].shape, shapes[owner].columns.count == 1 { return nil }
        return readings[0]
    }

    /// The bytes a freeblock header took from a cell of one text and a rowid: payload length,
    /// header length and the text's type (and the rowid's type, when the text's is one byte).
    func lostBytes(textLength: Int, width: Int) -> Int {
        let textType = 13 + 2 * textLength
        let textTypeBytes = textType < 128 ? 1 : 2
        let header = 1 + textTypeBytes + 1
        let payload = header + textLength + width
        guard header < 128 else { return 0 }
        return (payload < 128 ? 1 : 2) + 1 + textTypeBytes + (textTypeBytes == 1 ? 1 : 0)
    }

    /// One reading of a rebuilt cell: the rowid at the width SQLite would have written it in.
    mutating func reading(_ page: UnsafeRawBufferPointer, shape: Int, text: Range<Int>, rowidAt: Int, width: Int, offset: Int,
                          area: RecordVersion.Find.Area) -> IndexEntry? {
        var rowid: Int64 = 1
        if width > 0 {
            var v: Int64 = Int64(Int8(bitPattern: page[rowidAt]))
            for k in 1 ..< width { v = v << 8 | Int64(page[rowidAt + k]) }
            rowid = v
            // The smallest width that holds the value (0 and 1 are written as types 8 and 9).
            let smallest = rowid == 0 || rowid == 1 ? 0 : [1, 2, 3, 4, 6, 8].first { w in
                let bits = Int64(w * 8 - 1)
                return w == 8 || (rowid >= -(1 << bits) && rowid < (1 << bits))
            }!
            guard smallest == width else { return nil }
        }
        let bytes = Array(UnsafeRawBufferPointer(rebasing: page[text]))
        guard !bytes.contains(where: { $0 < 0x20 || $0 == 0x7F }) else { return nil }
        let values: [RecordValue] = [.text(bytes), .integer(rowid)]
        guard shapes[shape].rejection(values) == nil, !isLive(shape, rowid) else { return nil }
        // Bytes of text: printable ASCII, or part of a multi-byte character.
        let textLike = (rowidAt ..< rowidAt + width).allSatisfy { (0x20 ... 0x7E).contains(page[$0]) || page[$0] >= 0x80 }
        return IndexEntry(shape: shape, values: [.text(bytes)], rowid: rowid, area: area, offset: offset, weak: textLike)
    }

    /// The entry whose payload length varint is at `at`, when its record is whole, fits exactly
    /// one index (or the page's own), and passes that index's rules.
    mutating func read(_ page: UnsafeRawBufferPointer, at: Int, limit: Int, pageNumber: Int, area: RecordVersion.Find.Area)
        -> (IndexEntry, end: Int)? {
        let limit = min(limit, page.count)
        guard at >= 0, at < limit, let size = PageBytes.varint(page, at, limit: limit), size.value >= 3,
              size.value <= UInt64(maxLocal) else { return nil }
        let start = at + size.length
        let payload = Int(size.value)
        guard payload <= limit - start, let header = PageBytes.varint(page, start, limit: start + payload),
              header.value >= UInt64(header.length) + 2, header.value <= UInt64(payload) else { return nil }
        let headerEnd = start + Int(header.value)
        types.removeAll(keepingCapacity: true)
        var cursor = start + header.length
        var body = 0
        while cursor < headerEnd {
            guard types.count < 64, let type = PageBytes.varint(page, cursor, limit: headerEnd),
                  let length = SQLiteRecord.contentLength(type.value) else { return nil }
            types.append(type.value)
            body += length
            cursor += type.length
        }
        guard widths.contains(types.count), headerEnd + body == start + payload,
              let last = types.last, PageCarver.isInteger(last) else { return nil }
        guard let values = SQLiteRecord.values(page, types: types, bodyAt: headerEnd, limit: limit),
              case .integer(let rowid) = values[values.count - 1] else { return nil }
        var accepted: [Int] = []
        var reason: String?
        for (i, shape) in shapes.enumerated() where shape.columns.count + 1 == values.count {
            if let why = shape.rejection(values) { reason = reason ?? why } else { accepted.append(i) }
        }
        let chosen: Int
        if let owner = owners[pageNumber], accepted.contains(owner) {
            chosen = owner
        } else if accepted.count == 1 {
            chosen = accepted[0]
        } else {
            rejected[accepted.isEmpty ? reason ?? "index-none" : "index-ambiguous", default: 0] += 1
            return nil
        }
        return (IndexEntry(shape: chosen, values: Array(values.dropLast()), rowid: rowid, area: area, offset: at), start + payload)
    }

    /// Which index owns each page of the state, as SQLite's `dbstat` says (empty where SQLite was
    /// built without it: entries two indexes could take are then left out).
    static func owners(_ state: StateReader, shapes: [IndexShape]) -> [Int: Int] {
        guard !shapes.isEmpty else { return [:] }
        var byName: [String: Int] = [:]
        for (i, s) in shapes.enumerated() { byName[s.index] = i }
        var out: [Int: Int] = [:]
        guard let rows = try? state.connection.rows("SELECT name, pageno FROM dbstat WHERE name IN (" + shapes.map { _ in "?" }.joined(separator: ", ") + ")",
                                                    shapes.map { .text($0.index) }) else { return [:] }
        for row in rows {
            if let name = row[0].string, let page = row[1].int, let i = byName[name] { out[page] = i }
        }
        return out
    }
}
