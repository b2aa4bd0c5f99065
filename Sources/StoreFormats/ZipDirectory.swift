/// The records of a zip file that say where its entries are: the end of central directory record
/// (and its ZIP64 locator and record), the central directory's file headers, and the local file
/// header in front of each entry's data (PKWARE APPNOTE 6.3, sections 4.3.7 to 4.3.16).
///
/// Pure byte parsing: the caller reads the bytes (Acquisition's `ZipDirectoryInventory`). Every
/// number in a zip comes from whoever made it, so every count, size and offset is bounded against
/// the file and the buffer it came in, with checked arithmetic; anything the reader does not take
/// (several disks, a record that contradicts another) is a `ZipDirectory.Problem` naming why, and
/// the caller then reads the archive entry by entry instead.
public enum ZipDirectory {
    /// Why the central directory cannot be used.
    public struct Problem: Error, Equatable, Sendable, CustomStringConvertible {
        public let reason: String
        public init(_ reason: String) { self.reason = reason }
        public var description: String { reason }
    }

    /// Where the central directory is, from the end records.
    public struct End: Equatable, Sendable {
        public var entryCount: Int
        public var directoryOffset: Int64
        public var directorySize: Int64
        /// Where the end records start (the ZIP64 record when there is one): the central
        /// directory must end at or before it.
        public var recordsOffset: Int64
        public var isZip64: Bool

        public init(entryCount: Int, directoryOffset: Int64, directorySize: Int64, recordsOffset: Int64, isZip64: Bool) {
            self.entryCount = entryCount
            self.directoryOffset = directoryOffset
            self.directorySize = directorySize
            self.recordsOffset = recordsOffset
            self.isZip64 = isZip64
        }
    }

    /// The end of central directory record, and the ZIP64 record's offset when the locator names one.
    public struct ClassicEnd: Equatable, Sendable {
        public var end: End
        /// Set when a ZIP64 end of central directory locator precedes the record: read the 56-byte
        /// ZIP64 record there and pass it to `zip64End`.
        public var zip64RecordOffset: Int64?
    }

    /// One central directory file header.
    public struct Entry: Equatable, Sendable {
        public var nameBytes: [UInt8]
        public var versionMadeBy: UInt16
        public var flags: UInt16
        public var method: UInt16
        public var crc32: UInt32
        public var compressedSize: Int64
        public var uncompressedSize: Int64
        public var localHeaderOffset: Int64
        public var externalAttributes: UInt32
        /// An Info-ZIP Unicode Path extra field (0x7075): readers may take the name from it.
        public var hasUnicodePathField: Bool

        /// The host system that made the entry (high byte of "version made by": 0 MS-DOS, 3 Unix).
        public var host: UInt8 { UInt8(versionMadeBy >> 8) }
        public var isEncrypted: Bool { flags & 0x0001 != 0 || flags & 0x0040 != 0 || method == 99 }
        public var namesAreUTF8: Bool { flags & 0x0800 != 0 }
    }

    /// A local file header: what it says, and where the entry's data starts.
    public struct LocalHeader: Equatable, Sendable {
        public var nameBytes: [UInt8]
        public var flags: UInt16
        public var method: UInt16
        public var crc32: UInt32
        /// As written (0xFFFFFFFF when a ZIP64 extra field holds the size).
        public var compressedSize32: UInt32
        public var uncompressedSize32: UInt32
        /// Bytes from the header's first byte to the entry's data: 30 + name + extra.
        public var headerLength: Int
        public var hasUnicodePathField: Bool
    }

    public static let endRecordLength = 22
    public static let zip64LocatorLength = 20
    public static let zip64RecordLength = 56
    public static let localHeaderFixedLength = 30
    /// The end record may be followed by a comment of at most 65,535 bytes: the tail to search.
    public static let maxTailLength = endRecordLength + 0xFFFF + zip64LocatorLength

    /// Finds the end of central directory record in `tail`, the last bytes of a file of
    /// `fileSize` bytes (at most `maxTailLength` are needed). The record must end the file
    /// exactly with its comment; a signature found elsewhere is not a record.
    public static func classicEnd(tail: [UInt8], fileSize: Int64) throws(Problem) -> ClassicEnd {
        guard fileSize >= Int64(endRecordLength), tail.count >= endRecordLength, Int64(tail.count) <= fileSize else {
            throw Problem("the file is too short to hold an end of central directory record")
        }
        let tailStart = fileSize - Int64(tail.count)
        var at = tail.count - endRecordLength
        while at >= 0 {
            if tail[at] == 0x50, tail[at + 1] == 0x4B, tail[at + 2] == 0x05, tail[at + 3] == 0x06 {
                let commentLength = Int(le16(tail, at + 20))
                if at + endRecordLength + commentLength == tail.count { break }
            }
            at -= 1
        }
        guard at >= 0 else { throw Problem("no end of central directory record at the end of the file") }
        let recordOffset = tailStart + Int64(at)
        let disk = le16(tail, at + 4), directoryDisk = le16(tail, at + 6)
        let onDisk = le16(tail, at + 8), total = le16(tail, at + 10)
        let size32 = le32(tail, at + 12), offset32 = le32(tail, at + 16)
        var zip64RecordOffset: Int64?
        if at >= zip64LocatorLength, tail[at - 20] == 0x50, tail[at - 19] == 0x4B, tail[at - 18] == 0x06, tail[at - 17] == 0x07 {
            let l = at - zip64LocatorLength
            let locatorDisk = le32(tail, l + 4), disks = le32(tail, l + 16)
            let recordAt = le64(tail, l + 8)
            guard locatorDisk == 0, disks <= 1 else { throw Problem("the zip spans several disks (multi-disk archives are not read through the central directory)") }
            guard recordAt <= UInt64(recordOffset) - UInt64(zip64LocatorLength),
                  Int64(recordAt) + Int64(zip64RecordLength) <= recordOffset - Int64(zip64LocatorLength) else {
                throw Problem("the ZIP64 end of central directory locator points outside the file")
            }
            zip64RecordOffset = Int64(recordAt)
        } else if disk == 0xFFFF || directoryDisk == 0xFFFF || onDisk == 0xFFFF || total == 0xFFFF || size32 == 0xFFFF_FFFF || offset32 == 0xFFFF_FFFF {
            throw Problem("the end of central directory record defers to a ZIP64 record that is missing")
        }
        if zip64RecordOffset == nil {
            guard disk == 0, directoryDisk == 0, onDisk == total else {
                throw Problem("the zip spans several disks (multi-disk archives are not read through the central directory)")
            }
        }
        let end = End(entryCount: Int(total), directoryOffset: Int64(offset32), directorySize: Int64(size32),
                      recordsOffset: recordOffset, isZip64: false)
        if zip64RecordOffset == nil { try check(end) }
        return ClassicEnd(end: end, zip64RecordOffset: zip64RecordOffset)
    }

    /// The ZIP64 end of central directory record (`bytes`: the 56 bytes at `offset`), which
    /// replaces the classic record's counts and offsets.
    public static func zip64End(_ bytes: [UInt8], at offset: Int64, classic: End) throws(Problem) -> End {
        guard bytes.count >= zip64RecordLength, bytes[0] == 0x50, bytes[1] == 0x4B, bytes[2] == 0x06, bytes[3] == 0x06 else {
            throw Problem("no ZIP64 end of central directory record where its locator points")
        }
        let disk = le32(bytes, 16), directoryDisk = le32(bytes, 20)
        let onDisk = le64(bytes, 24), total = le64(bytes, 32)
        let size = le64(bytes, 40), directoryOffset = le64(bytes, 48)
        guard disk == 0, directoryDisk == 0, onDisk == total else {
            throw Problem("the zip spans several disks (multi-disk archives are not read through the central directory)")
        }
        guard total <= UInt64(Int32.max), size <= UInt64(Int64.max), directoryOffset <= UInt64(Int64.max) else {
            throw Problem("the ZIP64 end of central directory record holds impossible counts or offsets")
        }
        let end = End(entryCount: Int(total), directoryOffset: Int64(directoryOffset), directorySize: Int64(size),
                      recordsOffset: offset, isZip64: true)
        try check(end)
        return end
    }

    /// The central directory must lie before the end records, and hold room for its entries.
    private static func check(_ end: End) throws(Problem) {
        let (directoryEnd, overflow) = end.directoryOffset.addingReportingOverflow(end.directorySize)
        guard !overflow, end.directoryOffset >= 0, end.directorySize >= 0, directoryEnd <= end.recordsOffset else {
            throw Problem("the central directory the end record names lies outside the file")
        }
        // Every file header takes at least 46 bytes.
        guard Int64(end.entryCount).multipliedReportingOverflow(by: 46).partialValue <= end.directorySize,
              end.entryCount <= Int(Int32.max) else {
            throw Problem("the end record counts \(end.entryCount) entries, more than its central directory of \(end.directorySize) bytes can hold")
        }
    }

    /// Parses the `end.entryCount` file headers of `directory` (the central directory's bytes),
    /// which must fill it exactly. Offsets and sizes are checked against `fileSize`.
    public static func entries(_ directory: [UInt8], end: End, fileSize: Int64) throws(Problem) -> [Entry] {
        guard Int64(directory.count) == end.directorySize else { throw Problem("the central directory could not be read whole") }
        var entries: [Entry] = []
        entries.reserveCapacity(end.entryCount)
        var at = 0
        for index in 0..<end.entryCount {
            guard directory.count - at >= 46, le32(directory, at) == 0x0201_4B50 else {
                throw Problem("central directory entry \(index + 1) of \(end.entryCount) is damaged (no file header signature)")
            }
            let nameLength = Int(le16(directory, at + 28)), extraLength = Int(le16(directory, at + 30))
            let commentLength = Int(le16(directory, at + 32))
            let recordLength = 46 + nameLength + extraLength + commentLength
            guard directory.count - at >= recordLength else {
                throw Problem("central directory entry \(index + 1) of \(end.entryCount) runs past the directory's end")
            }
            let diskStart = le16(directory, at + 34)
            var entry = Entry(nameBytes: Array(directory[(at + 46)..<(at + 46 + nameLength)]),
                              versionMadeBy: le16(directory, at + 4), flags: le16(directory, at + 8),
                              method: le16(directory, at + 10), crc32: le32(directory, at + 16),
                              compressedSize: Int64(le32(directory, at + 20)), uncompressedSize: Int64(le32(directory, at + 24)),
                              localHeaderOffset: Int64(le32(directory, at + 42)), externalAttributes: le32(directory, at + 38),
                              hasUnicodePathField: false)
            var diskNumber = UInt32(diskStart)
            // Extra fields: the ZIP64 one holds, in this order, the values whose 32-bit field is saturated.
            let extra = (at + 46 + nameLength)..<(at + 46 + nameLength + extraLength)
            var sawZip64 = false
            try walkExtra(directory, extra) { (id: UInt16, field: Range<Int>) throws(Problem) in
                if id == 0x7075 { entry.hasUnicodePathField = true }
                guard id == 0x0001, !sawZip64 else { return }
                sawZip64 = true
                var p = field.lowerBound
                func next64() throws(Problem) -> Int64 {
                    guard field.upperBound - p >= 8 else { throw Problem("central directory entry \(index + 1) has a short ZIP64 extra field") }
                    let v = le64(directory, p)
                    p += 8
                    guard v <= UInt64(Int64.max) else { throw Problem("central directory entry \(index + 1) holds an impossible ZIP64 size or offset") }
                    return Int64(v)
                }
                if entry.uncompressedSize == 0xFFFF_FFFF { entry.uncompressedSize = try next64() }
                if entry.compressedSize == 0xFFFF_FFFF { entry.compressedSize = try next64() }
                if entry.localHeaderOffset == 0xFFFF_FFFF { entry.localHeaderOffset = try next64() }
                if diskStart == 0xFFFF {
                    guard field.upperBound - p >= 4 else { throw Problem("central directory entry \(index + 1) has a short ZIP64 extra field") }
                    diskNumber = le32(directory, p)
                }
            }
            guard diskNumber == 0 else { throw Problem("the zip spans several disks (multi-disk archives are not read through the central directory)") }
            // Any size still saturated had no ZIP64 value where the format requires one.
            guard sawZip64 || (entry.uncompressedSize != 0xFFFF_FFFF && entry.compressedSize != 0xFFFF_FFFF && entry.localHeaderOffset != 0xFFFF_FFFF) else {
                throw Problem("central directory entry \(index + 1) defers a size or offset to a ZIP64 field it lacks")
            }
            let (dataEnd, overflow) = entry.localHeaderOffset.addingReportingOverflow(Int64(localHeaderFixedLength) + Int64(nameLength))
            guard !overflow, dataEnd <= end.directoryOffset,
                  entry.compressedSize <= end.directoryOffset - dataEnd, entry.compressedSize <= fileSize else {
                throw Problem("central directory entry \(index + 1) places its data outside the file (past the central directory)")
            }
            entries.append(entry)
            at += recordLength
        }
        guard at == directory.count else {
            throw Problem("the central directory holds \(directory.count - at) bytes after its \(end.entryCount) entries")
        }
        return entries
    }

    /// Parses the local file header at the start of `bytes` (its fixed 30 bytes, then as much of
    /// its name and extra field as `bytes` holds). Throws when the header is not there, or when
    /// `bytes` is too short for its name and extra field (`needed` says how many bytes to read).
    public static func localHeader(_ bytes: [UInt8]) throws(Problem) -> LocalHeader {
        guard bytes.count >= localHeaderFixedLength, le32(bytes, 0) == 0x0403_4B50 else {
            throw Problem("no local file header where the central directory points")
        }
        let nameLength = Int(le16(bytes, 26)), extraLength = Int(le16(bytes, 28))
        let length = localHeaderFixedLength + nameLength + extraLength
        guard bytes.count >= length else { throw Problem("short local header: \(length) bytes needed") }
        var header = LocalHeader(nameBytes: Array(bytes[30..<(30 + nameLength)]), flags: le16(bytes, 6), method: le16(bytes, 8),
                                 crc32: le32(bytes, 14), compressedSize32: le32(bytes, 18), uncompressedSize32: le32(bytes, 22),
                                 headerLength: length, hasUnicodePathField: false)
        try walkExtra(bytes, (30 + nameLength)..<length) { (id: UInt16, _: Range<Int>) throws(Problem) in
            if id == 0x7075 { header.hasUnicodePathField = true }
        }
        return header
    }

    /// The length a local header at the start of `bytes` needs (nil when its fixed part is incomplete).
    public static func localHeaderLength(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= localHeaderFixedLength else { return nil }
        return localHeaderFixedLength + Int(le16(bytes, 26)) + Int(le16(bytes, 28))
    }

    /// Calls `body` with each extra field's id and data range; a field running past `range` is a problem.
    private static func walkExtra(_ bytes: [UInt8], _ range: Range<Int>, _ body: (UInt16, Range<Int>) throws(Problem) -> Void) throws(Problem) {
        var p = range.lowerBound
        while range.upperBound - p >= 4 {
            let id = le16(bytes, p), size = Int(le16(bytes, p + 2))
            guard range.upperBound - (p + 4) >= size else { throw Problem("an extra field runs past the end of its header") }
            try body(id, (p + 4)..<(p + 4 + size))
            p += 4 + size
        }
    }

    static func le16(_ b: [UInt8], _ at: Int) -> UInt16 { UInt16(b[at]) | UInt16(b[at + 1]) << 8 }
    static func le32(_ b: [UInt8], _ at: Int) -> UInt32 {
        UInt32(b[at]) | UInt32(b[at + 1]) << 8 | UInt32(b[at + 2]) << 16 | UInt32(b[at + 3]) << 24
    }
    static func le64(_ b: [UInt8], _ at: Int) -> UInt64 { UInt64(le32(b, at)) | UInt64(le32(b, at + 4)) << 32 }
}
