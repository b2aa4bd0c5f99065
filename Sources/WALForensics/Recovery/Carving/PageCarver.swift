import Foundation
import StoreFormats

/// A record read from a page image outside the committed states: its table, rowid when the bytes
/// still hold it, values as stored, and where it was.
struct CarvedRecord: Sendable {
    let shape: Int
    let rowid: Int64?
    let values: [RecordValue]
    let area: RecordVersion.Find.Area
    let offset: Int
    let confidence: RecordVersion.Confidence
    /// Columns whose bytes came from overflow pages nothing proves are still this record's
    /// (a freed cell's chain: SQLite may have reused and freed those pages since).
    var uncertainColumns: [Int] = []
}

/// Finds the records of known tables in one page image: its cells (when asked), its freeblocks and
/// its unallocated gap, or the free part of a freelist trunk page. Every candidate must pass a
/// table's rules (`CarvingShape.rejection`); a freed cell whose first 4 bytes are gone is rebuilt
/// by trying where its record header can resume, and kept only when exactly one reading passes.
struct PageCarver {
    let shapes: [CarvingShape]
    let usableSize: Int
    /// Largest payload a table-leaf cell keeps on its page.
    var maxLocal: Int { usableSize - 35 }
    /// Counts of candidates turned away, by rule (for the docs and tests): those that reached the
    /// rules, not the places a cheap check (column count, key and entity types) already turned away.
    var rejected: [String: Int] = [:]

    /// The column counts of the shapes: a record of any other width is no table's (the first rule
    /// `accept` applies), so it is turned away before its values are read.
    let columnCounts: Set<Int>
    let maxColumnCount: Int
    /// Each shape's width and `Z_PK`, `Z_ENT`, `Z_OPT` columns (-1: none), as plain numbers: the
    /// checks made at every place read these without touching the shapes' arrays and sets.
    struct Layout {
        let count: Int
        let pk: Int
        let ent: Int
        let opt: Int
    }
    let layouts: [Layout]
    /// Serial types of the candidate being looked at, reused so that trying a reading allocates nothing.
    private var types: [UInt64] = []
    /// The state the page being carved belongs to, for overflow chains (set by `carve`).
    private var view: OverflowView?
    /// Where the cells the page points to start, ascending (set by `carve` for a b-tree page): free
    /// bytes are only what lies between them, whatever the page header claims.
    private var liveCells: [Int] = []

    init(shapes: [CarvingShape], usableSize: Int) {
        self.shapes = shapes
        self.usableSize = usableSize
        layouts = shapes.map { Layout(count: $0.columns.count, pk: $0.pkIndex, ent: $0.entIndex, opt: $0.optIndex ?? -1) }
        columnCounts = Set(shapes.map(\.columns.count))
        maxColumnCount = shapes.map(\.columns.count).max() ?? 0
        types.reserveCapacity(maxColumnCount + 1)
    }

    enum Role {
        case btree(cells: Bool)
        case freelistTrunk
        case freelistLeaf
    }

    /// `view`: the state overflow chains of this page's cells are read in; nil leaves spilled cells out.
    mutating func carve(_ page: UnsafeRawBufferPointer, pageNumber: Int, role: Role, view: OverflowView? = nil,
                        _ out: (CarvedRecord) -> Void) {
        self.view = view
        defer { self.view = nil; liveCells.removeAll(keepingCapacity: true) }
        let usable = min(usableSize, page.count)
        let headerOffset = pageNumber == 1 ? 100 : 0
        switch role {
        case .freelistTrunk:
            // Next trunk (4), leaf count (4), leaf numbers: whatever follows is old page content.
            guard let count = PageBytes.u32(page, 4) else { return }
            let start = 8 + 4 * Int(min(count, UInt32(usable / 4)))
            if start < usable { scan(page, start ..< usable, freeblock: false, area: .freelistTrunk, out) }
            return
        case .btree, .freelistLeaf:
            break
        }
        // Every b-tree page's free space: an interior or index page may hold a table leaf's old cells
        // (a root leaf that split keeps its former cells in its unallocated gap).
        guard let layout = BTreePageLayout.read(page, headerOffset: headerOffset, usableSize: usable) else { return }
        let leaf: Bool = { if case .freelistLeaf = role { return true } else { return false } }()
        // A freelist leaf's cells are as free as the rest of it; a b-tree page's are another record's.
        if !leaf { liveCells = layout.cells.sorted() }
        let readCells: Bool = { if case .btree(let cells) = role { return cells } else { return true } }()
        if readCells && layout.isTableLeaf {
            for offset in layout.cells {
                guard let cell = TableLeafCell.read(page, at: offset, limit: usable, maxLocal: maxLocal) else {
                    if view != nil, let spilled = spilledCell(page, at: offset, limit: usable, area: leaf ? .freelistLeaf : .cell) {
                        out(spilled.record)
                    }
                    continue
                }
                if let shape = accept(types: cell.types, values: cell.values, rowid: cell.rowid) {
                    out(CarvedRecord(shape: shape, rowid: cell.rowid, values: cell.values, area: leaf ? .freelistLeaf : .cell,
                                     offset: offset, confidence: .whole))
                }
            }
        }
        for block in layout.freeblocks {
            scan(page, block, freeblock: true, area: leaf ? .freelistLeaf : .freeblock, out)
        }
        if !layout.unallocated.isEmpty {
            scan(page, layout.unallocated, freeblock: false, area: leaf ? .freelistLeaf : .unallocated, out)
        }
    }

    /// The first shape the record passes, counting why the others turned it away.
    /// `freeBytes`: the record was read from free bytes, not from a cell its page points to.
    mutating func accept(types: [UInt64], values: [RecordValue], rowid: Int64?, freeBytes: Bool = false) -> Int? {
        var reason: String?
        // The reason of the table the record is most like: one whose width and entity it has
        // ("column-count" and "entity" only say it is another table's).
        func rank(_ why: String) -> Int { why == "column-count" ? 0 : why == "entity" ? 1 : 2 }
        for (i, shape) in shapes.enumerated() {
            guard let why = shape.rejection(types: types, values: values, rowid: rowid, rebuilt: freeBytes) else { return i }
            if reason == nil || rank(why) > rank(reason!) { reason = why }
        }
        rejected[reason.map { String($0.prefix(while: { $0 != ":" })) } ?? "no-table", default: 0] += 1
        return nil
    }

    /// Free bytes: whole cells wherever they parse, and a rebuilt cell wherever the bytes can be a
    /// freeblock header written over a cell (the start of a freeblock, or one left inside a
    /// merged freeblock or a defragmented page).
    mutating func scan(_ page: UnsafeRawBufferPointer, _ range: Range<Int>, freeblock: Bool, area: RecordVersion.Find.Area,
                       _ out: (CarvedRecord) -> Void) {
        var at = range.lowerBound
        while at < range.upperBound - 2 {
            // A freeblock's own header is never the start of a whole cell.
            if !(freeblock && at == range.lowerBound), mayHoldCell(page, at: at, limit: range.upperBound),
               let cell = TableLeafCell.read(page, at: at, limit: range.upperBound, maxLocal: maxLocal),
               cell.rowid > 0, let shape = accept(types: cell.types, values: cell.values, rowid: cell.rowid, freeBytes: true),
               !overlapsLiveCell(at, cell.end) {
                out(CarvedRecord(shape: shape, rowid: cell.rowid, values: cell.values, area: area, offset: at, confidence: .whole))
                at = cell.end
                continue
            }
            // A whole cell whose payload spills: its payload length takes at least two bytes.
            if view != nil, page[at] >= 0x80, !(freeblock && at == range.lowerBound),
               let spilled = spilledCell(page, at: at, limit: range.upperBound, area: area), !overlapsLiveCell(at, spilled.end) {
                out(spilled.record)
                at = spilled.end
                continue
            }
            if looksLikeFreeblockHeader(page, at: at), let record = rebuilt(page, at: at, limit: range.upperBound, area: area),
               !overlapsLiveCell(at, record.end) {
                out(record.0)
                at = record.end
                continue
            }
            at += 1
        }
    }

    /// Whether a candidate read from free bytes at `start ..< end` takes in the start of a cell the
    /// page points to (a header claiming free space over live cells, a freeblock size that runs
    /// into the next cell): then it is another record's bytes, not a version (`overlaps-cell`).
    mutating func overlapsLiveCell(_ start: Int, _ end: Int) -> Bool {
        guard !liveCells.isEmpty else { return false }
        // The first live cell at or after `start`, by binary search.
        var low = 0, high = liveCells.count
        while low < high {
            let mid = (low + high) / 2
            if liveCells[mid] < start { low = mid + 1 } else { high = mid }
        }
        guard low < liveCells.count, liveCells[low] < end else { return false }
        rejected["overlaps-cell", default: 0] += 1
        return true
    }

    /// Whether 4 bytes can be a freeblock header: the next freeblock is further on (or none) and the
    /// size fits the page.
    func looksLikeFreeblockHeader(_ page: UnsafeRawBufferPointer, at: Int) -> Bool {
        guard let next = PageBytes.u16(page, at), let size = PageBytes.u16(page, at + 2) else { return false }
        return (next == 0 || (next > at && next < usableSize)) && size >= 4 && at + size <= usableSize
    }

    /// A cell at `at` whose first 4 bytes were overwritten by a freeblock header (next offset, size):
    /// the payload length, the rowid and the start of the record header are gone. The record header
    /// resumes at one of a few places (docs/recover.md); each reading that passes a table's rules is
    /// a candidate, and only a single one is kept.
    ///
    /// Each reading's serial types are read into a reused buffer and checked against what costs
    /// nothing to check (the header-length byte, the freeblock's size, the key, entity and `Z_OPT`
    /// types) before its values are read: most readings of most places fail there.
    mutating func rebuilt(_ page: UnsafeRawBufferPointer, at: Int, limit: Int, area: RecordVersion.Find.Area)
        -> (CarvedRecord, end: Int)? {
        let resume = at + 4
        guard resume < limit, let size = PageBytes.u16(page, at + 2) else { return nil }
        let bound = min(limit, page.count)
        var found: [(CarvedRecord, Int)] = []
        // The rule of the entity's that turned a format-valid reading away, if one did.
        var entityRule: String?
        func passes(_ index: Int, _ types: [UInt64], _ values: [RecordValue]) -> Bool {
            guard let why = shapes[index].rejection(types: types, values: values, rowid: nil, rebuilt: true) else { return true }
            let rule = String(why.prefix { $0 != ":" })
            if CarvingShape.entityRules.contains(rule) { entityRule = rule }
            return false
        }
        for (index, layout) in layouts.enumerated() {
            let n = layout.count
            // Readings (columns whose serial type was lost, bytes of rowid/header-length tail still
            // present), in this order: (1, 0) when Z_PK is the first column, then (0, 0) … (0, 4).
            for r in (layout.pk == 0 ? 0 : 1) ... 5 {
                let lost = r == 0 ? 1 : 0
                let skip = r == 0 ? 0 : r - 1
                let start = resume + skip
                // Every serial type takes at least a byte: a table wider than the bytes left cannot be here.
                guard n - lost <= limit - start else { continue }
                types.removeAll(keepingCapacity: true)
                if lost == 1 { types.append(0) }
                var cursor = start
                var typeBytes = lost  // the lost Z_PK type 0 took a byte of the header
                var body = 0
                var fits = true
                while types.count < n {
                    guard let v = PageBytes.varint(page, cursor, limit: bound), let length = SQLiteRecord.contentLength(v.value) else { break }
                    // The shape's first rules on the types alone (Z_PK NULL, Z_ENT and Z_OPT integers),
                    // as each is read: most readings fail within their first few types.
                    let column = types.count
                    if column == layout.pk ? v.value != 0
                        : (column == layout.ent || column == layout.opt) && !Self.isInteger(v.value) {
                        fits = false
                        break
                    }
                    types.append(v.value)
                    cursor += v.length
                    typeBytes += varintLength(v.value)
                    body += length
                }
                guard fits, types.count == n else { continue }
                // Header length: the varint plus every serial type's varint.
                let headerLength = typeBytes + (typeBytes + 1 < 128 ? 1 : 2)
                if skip > 0 {
                    // The byte just before the first intact serial type is the header length's last byte.
                    guard headerLength < 128, start - 1 < bound, page[start - 1] == UInt8(headerLength) else { continue }
                }
                // The header's size covers the cell it was written over (and any it merged with); a cell
                // that runs past it had its tail reused by a later cell.
                let payload = headerLength + body
                if payload > maxLocal {
                    // A spilled cell: the payload length and rowid took the lost bytes (so the record
                    // header is all there, lost == 0); its local part and first overflow page number
                    // must lie inside the freeblock.
                    guard lost == 0, view != nil else { continue }
                    let payloadStart = start - (headerLength - typeBytes)
                    let localEnd = payloadStart + OverflowChain.localSize(payload: payload, usable: usableSize)
                    guard payloadStart - at >= varintLength(UInt64(payload)) + 1, cursor <= localEnd,
                          localEnd + 4 <= limit, localEnd + 4 <= at + size else { continue }
                    let read = Array(types)
                    guard let spilled = reassembled(page, types: read, bodyAt: cursor, localEnd: localEnd, payload: payload,
                                                    rowid: nil, area: area),
                          passes(index, read, spilled.values) else { continue }
                    found.append((CarvedRecord(shape: index, rowid: nil, values: spilled.values, area: area, offset: at,
                                               confidence: .headerRebuilt, uncertainColumns: spilled.uncertain), localEnd + 4))
                    continue
                }
                guard body <= limit - cursor, cursor + body <= at + size else { continue }
                if lost == 1 {
                    // Payload length, rowid and header length took one byte each: a payload under 128 bytes.
                    guard headerLength + body < 128 else { continue }
                }
                let read = Array(types)
                guard let values = SQLiteRecord.values(page, types: read, bodyAt: cursor, limit: limit),
                      passes(index, read, values) else { continue }
                found.append((CarvedRecord(shape: index, rowid: nil, values: values, area: area, offset: at, confidence: .headerRebuilt),
                              cursor + body))
            }
        }
        guard let first = found.first else {
            // A reading the record format allowed, turned away as nothing Core Data could have
            // written, is counted once for the place (`recover --format json`'s `turnedAway`).
            if let entityRule { rejected[entityRule, default: 0] += 1 }
            return nil
        }
        // Two readings that disagree: the bytes do not say which record this was.
        guard found.allSatisfy({ $0.0.shape == first.0.shape && $0.0.values == first.0.values }) else {
            rejected["ambiguous-rebuild", default: 0] += 1
            return nil
        }
        return (first.0, first.1)
    }

    /// Whether the bytes at `at` can be a whole table-leaf cell of some shape: what
    /// `TableLeafCell.read` requires (payload on the page, a record header that counts itself and
    /// ends at its last serial type, values ending where the payload does), a positive rowid, a
    /// column count some table has, and that table's `Z_PK`, `Z_ENT` and `Z_OPT` serial types;
    /// read without allocating. Only places that pass are read as cells.
    mutating func mayHoldCell(_ page: UnsafeRawBufferPointer, at offset: Int, limit: Int) -> Bool {
        guard offset >= 0, limit <= page.count, offset < limit,
              let size = PageBytes.varint(page, offset, limit: limit), size.value <= UInt64(maxLocal),
              let rowid = PageBytes.varint(page, offset + size.length, limit: limit), Int64(bitPattern: rowid.value) > 0 else { return false }
        let start = offset + size.length + rowid.length
        let payload = Int(size.value)
        guard payload <= limit - start else { return false }
        let end = start + payload
        guard let header = PageBytes.varint(page, start, limit: end), header.value >= UInt64(header.length),
              header.value <= UInt64(end - start) else { return false }
        let headerEnd = start + Int(header.value)
        guard let body = readTypes(page, from: start + header.length, headerEnd: headerEnd) else { return false }
        return headerEnd + body == end && typesFitATable
    }

    /// Reads the serial types between `from` and `headerEnd` into `types` (reused, nothing
    /// allocated) and returns the body length they make, or nil when one does not parse or the
    /// record is wider than every table (no need to read further).
    mutating func readTypes(_ page: UnsafeRawBufferPointer, from: Int, headerEnd: Int) -> Int? {
        types.removeAll(keepingCapacity: true)
        var at = from
        var body = 0
        while at < headerEnd {
            guard types.count < maxColumnCount, let type = PageBytes.varint(page, at, limit: headerEnd),
                  let length = SQLiteRecord.contentLength(type.value) else { return nil }
            types.append(type.value)
            body += length
            at += type.length
        }
        return body
    }

    /// Whether `types` has the width of some table, with its `Z_PK` NULL and its `Z_ENT` (and
    /// `Z_OPT`) integers.
    var typesFitATable: Bool {
        columnCounts.contains(types.count) && layouts.contains { layout in
            layout.count == types.count && types[layout.pk] == 0 && Self.isInteger(types[layout.ent])
                && (layout.opt < 0 || Self.isInteger(types[layout.opt]))
        }
    }

    /// A whole table-leaf cell at `offset` whose payload spills to overflow pages: payload length
    /// over maxLocal, a positive rowid, a record header inside the local part whose types make
    /// exactly the payload and fit some table, then the chain read in the page's state. Nothing is
    /// allocated before the header fits a table; a candidate that gets that far and fails is counted.
    mutating func spilledCell(_ page: UnsafeRawBufferPointer, at offset: Int, limit: Int, area: RecordVersion.Find.Area)
        -> (record: CarvedRecord, end: Int)? {
        guard offset >= 0, limit <= page.count, offset < limit,
              let size = PageBytes.varint(page, offset, limit: limit), size.value > UInt64(maxLocal),
              size.value <= UInt64(OverflowChain.maxPayload),
              let rowid = PageBytes.varint(page, offset + size.length, limit: limit), Int64(bitPattern: rowid.value) > 0 else { return nil }
        let payload = Int(size.value)
        let start = offset + size.length + rowid.length
        let localEnd = start + OverflowChain.localSize(payload: payload, usable: usableSize)
        guard localEnd <= limit - 4, let header = PageBytes.varint(page, start, limit: localEnd),
              header.value >= UInt64(header.length), header.value <= UInt64(localEnd - start) else { return nil }
        let headerEnd = start + Int(header.value)
        guard let body = readTypes(page, from: start + header.length, headerEnd: headerEnd),
              Int(header.value) + body == payload, typesFitATable else { return nil }
        let read = Array(types)
        let key = Int64(bitPattern: rowid.value)
        guard let spilled = reassembled(page, types: read, bodyAt: headerEnd, localEnd: localEnd, payload: payload, rowid: key,
                                        area: area),
              let shape = accept(types: read, values: spilled.values, rowid: key) else { return nil }
        return (CarvedRecord(shape: shape, rowid: key, values: spilled.values, area: area, offset: offset, confidence: .whole,
                             uncertainColumns: spilled.uncertain), localEnd + 4)
    }

    /// The values of a spilled record: the body's local bytes (`bodyAt ..< localEnd`), then the
    /// rest of the payload from the overflow chain whose first page number follows the local part.
    /// A chain that fails (`OverflowChain.read`) is counted under its reason. The columns whose
    /// bytes came from the chain are uncertain unless the cell was a live cell of its page and
    /// every chain page was read from the same moment.
    mutating func reassembled(_ page: UnsafeRawBufferPointer, types: [UInt64], bodyAt: Int, localEnd: Int, payload: Int,
                              rowid: Int64?, area: RecordVersion.Find.Area) -> (values: [RecordValue], uncertain: [Int])? {
        guard let view, bodyAt <= localEnd, let first = PageBytes.u32(page, localEnd),
              let bodyLength = SQLiteRecord.bodyLength(types) else { return nil }
        let local = localEnd - bodyAt
        let overflow = payload - OverflowChain.localSize(payload: payload, usable: usableSize)
        guard overflow > 0, bodyLength - local == overflow else {
            rejected[OverflowRejection.chainLength.rawValue, default: 0] += 1
            return nil
        }
        // Grown as pages are read (not reserved from the declared length): a crafted length costs
        // only the pages that really follow.
        var bytes: [UInt8] = []
        bytes.reserveCapacity(min(bodyLength, local + 16 * usableSize))
        bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: page[bodyAt ..< localEnd]))
        let sameMoment: Bool
        do {
            sameMoment = try OverflowChain.read(first: first, count: overflow, usable: usableSize, payload: payload, rowid: rowid,
                                                freed: area != .cell, view: view, into: &bytes)
        } catch {
            rejected[error.rawValue, default: 0] += 1
            return nil
        }
        guard let values = bytes.withUnsafeBytes({ SQLiteRecord.values($0, types: types, bodyAt: 0, limit: $0.count) }) else {
            rejected[OverflowRejection.chainLength.rawValue, default: 0] += 1
            return nil
        }
        var uncertain: [Int] = []
        if !(area == .cell && sameMoment) {
            // Columns whose value ends past the local bytes were read (at least in part) from the chain.
            var end = 0
            for (i, type) in types.enumerated() {
                let length = SQLiteRecord.contentLength(type) ?? 0
                end += length
                if length > 0, end > local { uncertain.append(i) }
            }
        }
        return (values, uncertain)
    }

    /// Serial types whose value reads as an integer (1…6, and the constants 0 and 1).
    @inline(__always)
    static func isInteger(_ type: UInt64) -> Bool {
        (1 ... 6).contains(type) || type == 8 || type == 9
    }

    func varintLength(_ v: UInt64) -> Int {
        var n = 1
        var x = v >> 7
        while x != 0 && n < 9 { n += 1; x >>= 7 }
        return v > 0x00ff_ffff_ffff_ffff ? 9 : n
    }
}
