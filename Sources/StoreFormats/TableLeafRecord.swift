import Foundation

/// One value of a SQLite record, as stored (text and blobs as their bytes: the database's text
/// encoding is applied by the caller).
public enum RecordValue: Equatable, Hashable, Sendable {
    case null
    case integer(Int64)
    case real(Double)
    case text([UInt8])
    case blob([UInt8])
}

/// Reading SQLite records and table-leaf cells out of page bytes, live or freed.
///
/// Everything is bounded by a caller's limit inside the buffer and every size is checked before it
/// is used, so hostile or half-overwritten bytes give nil, never a trap. Nothing here allocates more
/// than the bytes it has been shown.
///
/// Related SQLite documentation: <https://www.sqlite.org/fileformat2.html#record_format>
public enum SQLiteRecord {
    /// Largest column count read from one record header (SQLite's own limit is 32767).
    public static let maxColumns = 32767

    /// The number of content bytes of serial type `type`, or nil for a reserved or absurd type.
    @inline(__always)
    public static func contentLength(_ type: UInt64) -> Int? {
        switch type {
        case 0, 8, 9: return 0
        case 1: return 1
        case 2: return 2
        case 3: return 3
        case 4: return 4
        case 5: return 6
        case 6, 7: return 8
        case 10, 11: return nil
        default:
            // A page holds at most 64 KiB; a larger value could only come from an overflow chain.
            guard type < UInt64(1) << 32 else { return nil }
            return Int((type - 12) / 2)
        }
    }

    /// The serial types in `buffer[from..<headerEnd]`, at most `maxCount` of them; nil when a varint
    /// runs past `headerEnd` or a type is reserved.
    public static func serialTypes(_ buffer: UnsafeRawBufferPointer, from: Int, headerEnd: Int, maxCount: Int = maxColumns) -> [UInt64]? {
        guard from >= 0, headerEnd <= buffer.count, from <= headerEnd else { return nil }
        var types: [UInt64] = []
        var at = from
        while at < headerEnd {
            guard types.count < maxCount, let type = BTreePage.varint(buffer, at, limit: headerEnd),
                  contentLength(type.value) != nil else { return nil }
            types.append(type.value)
            at += type.length
        }
        return types
    }

    /// Bytes the values of `types` take.
    public static func bodyLength(_ types: [UInt64]) -> Int? {
        var total = 0
        for type in types {
            guard let length = contentLength(type) else { return nil }
            let (sum, overflow) = total.addingReportingOverflow(length)
            guard !overflow else { return nil }
            total = sum
        }
        return total
    }

    /// The values of `types` read from `bodyAt`, which must end at or before `limit`.
    public static func values(_ buffer: UnsafeRawBufferPointer, types: [UInt64], bodyAt: Int, limit: Int) -> [RecordValue]? {
        guard bodyAt >= 0, limit <= buffer.count, let length = bodyLength(types), length <= limit - bodyAt else { return nil }
        var out: [RecordValue] = []
        out.reserveCapacity(types.count)
        var at = bodyAt
        for type in types {
            guard let n = contentLength(type) else { return nil }
            let bytes = UnsafeRawBufferPointer(rebasing: buffer[at ..< at + n])
            switch type {
            case 0: out.append(.null)
            case 1...6: out.append(.integer(SchemaRecord.integer(bytes)))
            case 7:
                var bits: UInt64 = 0
                for byte in bytes { bits = bits << 8 | UInt64(byte) }
                out.append(.real(Double(bitPattern: bits)))
            case 8: out.append(.integer(0))
            case 9: out.append(.integer(1))
            default: out.append(type % 2 == 0 ? .blob(Array(bytes)) : .text(Array(bytes)))
            }
            at += n
        }
        return out
    }

    /// Text bytes as a string in the database's text encoding (header offset 56: 1 UTF-8,
    /// 2 UTF-16le, 3 UTF-16be); invalid sequences become U+FFFD.
    public static func text(_ bytes: [UInt8], encoding: UInt32) -> String {
        bytes.withUnsafeBytes { SchemaRecord.text($0, encoding: encoding) }
    }

    /// A whole record (header length, serial types, values) starting at `at` and ending at or before
    /// `limit`: its serial types, values and end offset. The header length must count itself and end
    /// exactly where its last serial type does.
    public static func parse(_ buffer: UnsafeRawBufferPointer, at: Int, limit: Int, maxCount: Int = maxColumns)
        -> (types: [UInt64], values: [RecordValue], end: Int)? {
        guard at >= 0, limit <= buffer.count, let header = BTreePage.varint(buffer, at, limit: limit),
              header.value >= UInt64(header.length), header.value <= UInt64(limit - at) else { return nil }
        let headerEnd = at + Int(header.value)
        guard let types = serialTypes(buffer, from: at + header.length, headerEnd: headerEnd, maxCount: maxCount),
              let values = values(buffer, types: types, bodyAt: headerEnd, limit: limit),
              let body = bodyLength(types) else { return nil }
        return (types, values, headerEnd + body)
    }
}

/// A table b-tree leaf cell whose whole payload is on the page: rowid and record.
public struct TableLeafCell: Sendable, Equatable {
    /// Where the cell starts in the page and where it ends.
    public let offset: Int
    public let end: Int
    public let rowid: Int64
    public let types: [UInt64]
    public let values: [RecordValue]

    /// The cell at `offset`, when its payload length, rowid and record all parse, the record takes
    /// exactly the payload length, and the payload is small enough to be on the page alone (cells
    /// that spill to overflow pages are not read here). The cell must end at or before `limit`.
    public static func read(_ page: UnsafeRawBufferPointer, at offset: Int, limit: Int, maxLocal: Int,
                            maxColumns: Int = SQLiteRecord.maxColumns) -> TableLeafCell? {
        guard offset >= 0, limit <= page.count, offset < limit,
              let size = BTreePage.varint(page, offset, limit: limit), size.value <= UInt64(maxLocal),
              let rowid = BTreePage.varint(page, offset + size.length, limit: limit) else { return nil }
        let start = offset + size.length + rowid.length
        let payload = Int(size.value)
        guard payload <= limit - start,
              let record = SQLiteRecord.parse(page, at: start, limit: start + payload, maxCount: maxColumns),
              record.end == start + payload else { return nil }
        return TableLeafCell(offset: offset, end: record.end, rowid: Int64(bitPattern: rowid.value), types: record.types, values: record.values)
    }
}

/// The parts of one b-tree page: its header, cell pointers, freeblock chain and unallocated gap.
public struct BTreePageLayout: Sendable, Equatable {
    /// Where the page header starts (100 on page 1).
    public let headerOffset: Int
    public let type: UInt8
    /// Cell offsets from the cell pointer array, each inside the page.
    public let cells: [Int]
    /// Freeblocks as byte ranges, in chain order (a chain that loops, leaves the page or runs
    /// backwards ends where it goes wrong).
    public let freeblocks: [Range<Int>]
    /// Between the end of the cell pointer array and the start of the cell content area.
    public let unallocated: Range<Int>
    /// The bytes of the page that are used (page size minus reserved bytes).
    public let usable: Int

    public var isTableLeaf: Bool { type == BTreePage.leafTable }
    /// A page of an index b-tree (leaf or interior).
    public var isIndex: Bool { type == BTreePage.leafIndex || type == BTreePage.interiorIndex }
    /// An interior page: each cell starts with its child's 4-byte page number.
    public var isInterior: Bool { type == BTreePage.interiorIndex || type == BTreePage.interiorTable }

    /// The layout of the b-tree page in `page`, or nil when its header is not one.
    public static func read(_ page: UnsafeRawBufferPointer, headerOffset: Int, usableSize: Int) -> BTreePageLayout? {
        let usable = min(usableSize, page.count)
        guard headerOffset >= 0, headerOffset + 8 <= usable else { return nil }
        let type = page[headerOffset]
        guard [BTreePage.interiorIndex, BTreePage.interiorTable, BTreePage.leafIndex, BTreePage.leafTable].contains(type),
              let firstFree = BTreePage.u16(page, headerOffset + 1),
              let count = BTreePage.u16(page, headerOffset + 3),
              let rawContent = BTreePage.u16(page, headerOffset + 5) else { return nil }
        let headerSize = type == BTreePage.interiorIndex || type == BTreePage.interiorTable ? 12 : 8
        let pointers = headerOffset + headerSize
        let pointersEnd = pointers + 2 * count
        guard pointersEnd <= usable else { return nil }
        let content = rawContent == 0 ? 65536 : rawContent
        var cells: [Int] = []
        cells.reserveCapacity(count)
        for i in 0 ..< count {
            guard let cell = BTreePage.u16(page, pointers + 2 * i), cell >= pointersEnd, cell < usable else { continue }
            cells.append(cell)
        }
        var freeblocks: [Range<Int>] = []
        var next = firstFree
        var previousEnd = pointersEnd
        // Freeblocks are kept in ascending order; anything else is damage and ends the chain.
        while next != 0, next >= previousEnd, next + 4 <= usable, freeblocks.count < usable / 4 {
            guard let link = BTreePage.u16(page, next), let size = BTreePage.u16(page, next + 2),
                  size >= 4, next + size <= usable else { break }
            freeblocks.append(next ..< next + size)
            previousEnd = next + size
            guard link > next else { break }
            next = link
        }
        let gapEnd = min(max(content, pointersEnd), usable)
        return BTreePageLayout(headerOffset: headerOffset, type: type, cells: cells, freeblocks: freeblocks,
                               unallocated: pointersEnd ..< gapEnd, usable: usable)
    }
}

/// Bounded reads of page bytes for code outside this module (carving): nil outside the buffer.
public enum PageBytes {
    public static func u16(_ page: UnsafeRawBufferPointer, _ offset: Int) -> Int? { BTreePage.u16(page, offset) }
    public static func u32(_ page: UnsafeRawBufferPointer, _ offset: Int) -> UInt32? { BTreePage.u32(page, offset) }
    /// A SQLite varint at `offset` that ends before `limit`. Inlinable: carving reads one per
    /// serial type, and a call across modules per varint was measurable.
    @inlinable @inline(__always)
    public static func varint(_ page: UnsafeRawBufferPointer, _ offset: Int, limit: Int) -> (value: UInt64, length: Int)? {
        BTreePage.varint(page, offset, limit: limit)
    }
}
