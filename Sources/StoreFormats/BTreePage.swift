import Foundation

/// Reading the inside of one SQLite b-tree page: its type, its child
/// pages and the overflow chains its cells start. Every read is bounded by
/// the page; nothing here traps on damaged bytes.
///
/// Related SQLite documentation: <https://www.sqlite.org/fileformat2.html#b_tree_pages>
@usableFromInline
enum BTreePage {
    /// Page type bytes.
    static let interiorIndex: UInt8 = 2
    static let interiorTable: UInt8 = 5
    static let leafIndex: UInt8 = 10
    static let leafTable: UInt8 = 13

    /// The first page of an overflow chain and how many pages the chain must have.
    struct OverflowChain: Equatable {
        let firstPage: UInt32
        let pageCount: Int
    }

    /// What a b-tree page points to.
    struct Links {
        /// The page type byte (2, 5, 10 or 13 when valid).
        let type: UInt8
        /// Child pages, for interior pages (left children in cell order, then the right-most pointer).
        var children: [UInt32] = []
        /// Overflow chains started by the page's cells.
        var overflows: [OverflowChain] = []
        /// Why the page could not be read fully, or nil.
        var damage: String?

        var isInterior: Bool { type == BTreePage.interiorIndex || type == BTreePage.interiorTable }
        var isTable: Bool { type == BTreePage.interiorTable || type == BTreePage.leafTable }
        var isValidType: Bool {
            type == BTreePage.interiorIndex || type == BTreePage.interiorTable
                || type == BTreePage.leafIndex || type == BTreePage.leafTable
        }
    }

    /// Geometry shared by every page of one database.
    struct Geometry {
        let pageSize: Int
        /// Page size minus the reserved bytes at the end of each page.
        let usableSize: Int

        /// Largest payload a table-leaf cell keeps on its page.
        var tableMaxLocal: Int { usableSize - 35 }
        /// Largest payload an index cell keeps on its page.
        var indexMaxLocal: Int { (usableSize - 12) * 64 / 255 - 23 }
        /// The minimum payload kept locally when a cell spills.
        var minLocal: Int { (usableSize - 12) * 32 / 255 - 23 }

        /// Bytes of `payload` kept on the page, following `btreeParseCellAdjustSizeForOverflow`.
        func localSize(payload: Int, table: Bool) -> Int {
            let maxLocal = table ? tableMaxLocal : indexMaxLocal
            if payload <= maxLocal { return payload }
            let surplus = minLocal + (payload - minLocal) % (usableSize - 4)
            return surplus <= maxLocal ? surplus : minLocal
        }

        /// Number of overflow pages a payload of `payload` bytes needs beyond `local` bytes.
        func overflowPages(payload: Int, local: Int) -> Int {
            guard payload > local else { return 0 }
            let perPage = usableSize - 4
            return (payload - local + perPage - 1) / perPage
        }
    }

    // MARK: - Reading

    /// A big-endian u16 at `offset`, or nil outside `page`.
    @inline(__always)
    static func u16(_ page: UnsafeRawBufferPointer, _ offset: Int) -> Int? {
        guard offset >= 0, offset + 2 <= page.count else { return nil }
        return Int(page[offset]) << 8 | Int(page[offset + 1])
    }

    /// A big-endian u32 at `offset`, or nil outside `page`.
    @inline(__always)
    static func u32(_ page: UnsafeRawBufferPointer, _ offset: Int) -> UInt32? {
        guard offset >= 0, offset + 4 <= page.count else { return nil }
        return UInt32(page[offset]) << 24 | UInt32(page[offset + 1]) << 16
            | UInt32(page[offset + 2]) << 8 | UInt32(page[offset + 3])
    }

    /// A SQLite varint at `offset`: the value and its length in bytes, or nil when it runs past `limit`.
    @inline(__always) @usableFromInline
    static func varint(_ page: UnsafeRawBufferPointer, _ offset: Int, limit: Int) -> (value: UInt64, length: Int)? {
        var value: UInt64 = 0
        var i = 0
        while i < 9 {
            let at = offset + i
            guard at >= 0, at < limit, at < page.count else { return nil }
            let byte = page[at]
            if i == 8 { return (value << 8 | UInt64(byte), 9) }
            value = value << 7 | UInt64(byte & 0x7f)
            if byte & 0x80 == 0 { return (value, i + 1) }
            i += 1
        }
        return nil
    }

    /// The links of the b-tree page in `page`. `headerOffset` is 100 for page 1, otherwise 0.
    /// `maxPayload` bounds a cell's payload size (larger ones are reported as damage).
    static func links(_ page: UnsafeRawBufferPointer, headerOffset: Int, geometry: Geometry, maxPayload: Int) -> Links {
        let usable = min(geometry.usableSize, page.count)
        guard headerOffset < usable else { return Links(type: 0, damage: "the page is too short for a b-tree header") }
        var links = Links(type: page[headerOffset])
        guard links.isValidType else {
            links.damage = "it is not a b-tree page (type byte \(links.type))"
            return links
        }
        let interior = links.isInterior
        let headerSize = interior ? 12 : 8
        guard let cellCount = u16(page, headerOffset + 3) else {
            links.damage = "its header is cut off"
            return links
        }
        let pointers = headerOffset + headerSize
        guard pointers + 2 * cellCount <= usable else {
            links.damage = "its cell count \(cellCount) does not fit in the page"
            return links
        }
        if interior { links.children.reserveCapacity(cellCount + 1) }
        let table = links.isTable
        for index in 0..<cellCount {
            guard let cell = u16(page, pointers + 2 * index), cell >= pointers + 2 * cellCount, cell < usable else {
                links.damage = "cell \(index) points outside the page"
                return links
            }
            var payloadAt = cell
            switch links.type {
            case interiorTable:
                guard let child = u32(page, cell), cell + 4 <= usable else {
                    links.damage = "cell \(index) is cut off"
                    return links
                }
                links.children.append(child)
                continue
            case interiorIndex:
                guard let child = u32(page, cell), cell + 4 <= usable else {
                    links.damage = "cell \(index) is cut off"
                    return links
                }
                links.children.append(child)
                payloadAt = cell + 4
            default:
                break
            }
            guard let size = varint(page, payloadAt, limit: usable) else {
                links.damage = "cell \(index) has an unreadable payload size"
                return links
            }
            var bodyAt = payloadAt + size.length
            if links.type == leafTable {
                guard let rowid = varint(page, bodyAt, limit: usable) else {
                    links.damage = "cell \(index) has an unreadable rowid"
                    return links
                }
                bodyAt += rowid.length
            }
            guard size.value <= UInt64(maxPayload) else {
                links.damage = "cell \(index) claims a \(size.value)-byte payload, more than the database can hold"
                return links
            }
            let payload = Int(size.value)
            let local = geometry.localSize(payload: payload, table: table)
            let overflowCount = geometry.overflowPages(payload: payload, local: local)
            if overflowCount > 0 {
                guard bodyAt + local + 4 <= usable, let first = u32(page, bodyAt + local) else {
                    links.damage = "cell \(index) overflows its page"
                    return links
                }
                links.overflows.append(OverflowChain(firstPage: first, pageCount: overflowCount))
            } else if bodyAt + local > usable {
                links.damage = "cell \(index) overflows its page"
                return links
            }
        }
        if interior {
            guard let right = u32(page, headerOffset + 8) else {
                links.damage = "its right-most pointer is cut off"
                return links
            }
            links.children.append(right)
        }
        return links
    }
}

/// Decoding the records of `sqlite_schema` (type, name, tbl_name, rootpage).
enum SchemaRecord {
    /// The first four columns of one `sqlite_schema` row, or nil when the record is unreadable.
    static func decode(_ payload: [UInt8], textEncoding: UInt32) -> (type: String, name: String, tableName: String, rootPage: Int64)? {
        payload.withUnsafeBytes { raw -> (String, String, String, Int64)? in
            guard let headerSize = BTreePage.varint(raw, 0, limit: raw.count), headerSize.value <= UInt64(raw.count) else { return nil }
            var serialTypes: [UInt64] = []
            var at = headerSize.length
            let headerEnd = Int(headerSize.value)
            while at < headerEnd, serialTypes.count < 5 {
                guard let type = BTreePage.varint(raw, at, limit: headerEnd) else { return nil }
                serialTypes.append(type.value)
                at += type.length
            }
            guard serialTypes.count >= 4 else { return nil }
            var body = headerEnd
            var values: [Any?] = []
            for type in serialTypes.prefix(4) {
                let length = contentLength(type)
                guard length >= 0, body + length <= raw.count else { return nil }
                let bytes = UnsafeRawBufferPointer(rebasing: raw[body ..< body + length])
                switch type {
                case 0: values.append(nil)
                case 1...6: values.append(integer(bytes))
                case 8: values.append(Int64(0))
                case 9: values.append(Int64(1))
                case let t where t >= 13 && t % 2 == 1: values.append(text(bytes, encoding: textEncoding))
                default: values.append(nil)
                }
                body += length
            }
            return ((values[0] as? String) ?? "", (values[1] as? String) ?? "", (values[2] as? String) ?? "",
                    (values[3] as? Int64) ?? 0)
        }
    }

    /// The number of content bytes of a serial type, or -1 for a reserved type.
    static func contentLength(_ type: UInt64) -> Int {
        switch type {
        case 0, 8, 9: return 0
        case 1: return 1
        case 2: return 2
        case 3: return 3
        case 4: return 4
        case 5: return 6
        case 6, 7: return 8
        case 10, 11: return -1
        default:
            guard type < UInt64(Int32.max) else { return -1 }
            return Int((type - (type % 2 == 0 ? 12 : 13)) / 2)
        }
    }

    /// A big-endian two's-complement integer of 1...8 bytes.
    static func integer(_ bytes: UnsafeRawBufferPointer) -> Int64 {
        guard let first = bytes.first else { return 0 }
        var value: Int64 = first & 0x80 != 0 ? -1 : 0
        for byte in bytes { value = value << 8 | Int64(byte) }
        return value
    }

    static func text(_ bytes: UnsafeRawBufferPointer, encoding: UInt32) -> String {
        switch encoding {
        case 2, 3:
            var units: [UInt16] = []
            units.reserveCapacity(bytes.count / 2)
            var i = 0
            while i + 1 < bytes.count {
                let a = UInt16(bytes[i]), b = UInt16(bytes[i + 1])
                units.append(encoding == 2 ? (b << 8 | a) : (a << 8 | b))
                i += 2
            }
            return String(decoding: units, as: UTF16.self)
        default:
            return String(decoding: bytes, as: UTF8.self)
        }
    }
}
