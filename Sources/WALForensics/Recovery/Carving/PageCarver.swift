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

    mutating func carve(_ page: UnsafeRawBufferPointer, pageNumber: Int, role: Role, _ out: (CarvedRecord) -> Void) {
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
        let readCells: Bool = { if case .btree(let cells) = role { return cells } else { return true } }()
        if readCells && layout.isTableLeaf {
            for offset in layout.cells {
                guard let cell = TableLeafCell.read(page, at: offset, limit: usable, maxLocal: maxLocal) else { continue }
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
    mutating func accept(types: [UInt64], values: [RecordValue], rowid: Int64?) -> Int? {
        var reason: String?
        for (i, shape) in shapes.enumerated() {
            guard let why = shape.rejection(types: types, values: values, rowid: rowid) else { return i }
            if why != "column-count" || reason == nil { reason = why }
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
               cell.rowid > 0, let shape = accept(types: cell.types, values: cell.values, rowid: cell.rowid) {
                out(CarvedRecord(shape: shape, rowid: cell.rowid, values: cell.values, area: area, offset: at, confidence: .whole))
                at = cell.end
                continue
            }
            if looksLikeFreeblockHeader(page, at: at), let record = rebuilt(page, at: at, limit: range.upperBound, area: area) {
                out(record.0)
                at = record.end
                continue
            }
            at += 1
        }
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
                guard body <= limit - cursor, cursor + body <= at + size else { continue }
                if lost == 1 {
                    // Payload length, rowid and header length took one byte each: a payload under 128 bytes.
                    guard headerLength + body < 128 else { continue }
                }
                let read = Array(types)
                guard let values = SQLiteRecord.values(page, types: read, bodyAt: cursor, limit: limit),
                      shapes[index].rejection(types: read, values: values, rowid: nil, rebuilt: true) == nil else { continue }
                found.append((CarvedRecord(shape: index, rowid: nil, values: values, area: area, offset: at, confidence: .headerRebuilt),
                              cursor + body))
            }
        }
        guard let first = found.first else { return nil }
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
        types.removeAll(keepingCapacity: true)
        var at = start + header.length
        var body = 0
        while at < headerEnd {
            // Wider than every table: not a record of one (and no need to read further).
            guard types.count < maxColumnCount, let type = PageBytes.varint(page, at, limit: headerEnd),
                  let length = SQLiteRecord.contentLength(type.value) else { return false }
            types.append(type.value)
            body += length
            at += type.length
        }
        guard headerEnd + body == end, columnCounts.contains(types.count) else { return false }
        return layouts.contains { layout in
            layout.count == types.count && types[layout.pk] == 0 && Self.isInteger(types[layout.ent])
                && (layout.opt < 0 || Self.isInteger(types[layout.opt]))
        }
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
