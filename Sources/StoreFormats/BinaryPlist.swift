import Foundation

/// Reads `bplist00` binary property lists into `PlistValue`.
///
/// Written from the file format rather than on top of Foundation because
/// the plists come from devices (they may be damaged or hostile) and because
/// Foundation on Linux cannot expose keyed-archive UIDs. Every offset,
/// reference and length is checked against the file, reference cycles and
/// deep nesting are errors, and the total amount of decoded output is capped,
/// so no input can crash the tool, overflow the stack or exhaust memory.
///
/// Format summary: an 8-byte header (`bplist00`), the objects, a table of
/// object offsets, and a 32-byte trailer giving the offset-table entry width,
/// the object-reference width, the object count, the top object and the
/// offset table's position.
public enum BinaryPlist {
    /// Bounds that keep decoding of hostile input cheap.
    public struct Limits: Sendable, Equatable {
        /// Largest input accepted, in bytes.
        public var maxInputBytes: Int
        /// Largest object count the trailer may declare.
        public var maxObjects: Int
        /// Deepest nesting of arrays and dictionaries accepted.
        public var maxDepth: Int
        /// Most values produced in total. Shared references are counted each
        /// time they are expanded, so this stops "billion laughs" graphs.
        public var maxDecodedValues: Int

        public init(maxInputBytes: Int = 64 << 20, maxObjects: Int = 1 << 22,
                    maxDepth: Int = 512, maxDecodedValues: Int = 1_000_000) {
            self.maxInputBytes = maxInputBytes
            self.maxObjects = maxObjects
            self.maxDepth = maxDepth
            self.maxDecodedValues = maxDecodedValues
        }

        /// Generous enough for any Core Data metadata or model cache.
        public static let `default` = Limits()
    }

    /// The magic bytes every binary plist starts with (the version digits follow).
    public static let magic: [UInt8] = Array("bplist0".utf8)

    /// True when `data` starts like a binary plist; cheap, for sniffing blobs.
    public static func isBinaryPlist(_ data: Data) -> Bool {
        data.count >= 8 && data.prefix(7).elementsEqual(magic)
    }

    /// Decodes a whole binary plist, starting at its top object.
    public static func decode(_ data: Data, limits: Limits = .default) throws(BinaryPlistError) -> PlistValue {
        guard data.count <= limits.maxInputBytes else { throw .tooLarge }
        guard isBinaryPlist(data) else { throw .notBinaryPlist }
        var decoder = try BinaryPlistDecoder(bytes: [UInt8](data), limits: limits)
        return try decoder.decodeTop()
    }
}

/// Why a binary plist could not be decoded.
public enum BinaryPlistError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The data does not start with `bplist0`.
    case notBinaryPlist
    /// The data is too short to hold a header, objects and a trailer, or an object runs past the object area.
    case truncated
    /// The trailer's sizes, counts or positions are impossible for this file.
    case badTrailer
    /// The offset table puts `object` outside the object area.
    case offsetOutOfRange(object: Int)
    /// A container refers to an object number that does not exist.
    case referenceOutOfRange(UInt64)
    /// `object` contains itself, directly or through other containers.
    case cycle(object: Int)
    /// Containers are nested deeper than the depth limit.
    case tooDeep
    /// The input, the object count or the decoded output exceeds a limit.
    case tooLarge
    /// The byte at `offset` (`marker`) does not start a valid object.
    case invalidObject(marker: UInt8, offset: Int)
    /// The string at `offset` is not valid ASCII or UTF-16.
    case invalidString(offset: Int)
    /// A dictionary key (object number `object`) is not a string.
    case nonStringKey(object: Int)
    /// The 16-byte integer at `offset` does not fit in 64 bits.
    case integerOutOfRange(offset: Int)

    public var description: String {
        switch self {
        case .notBinaryPlist:
            return "The data is not a binary property list (no bplist0 header)."
        case .truncated:
            return "The binary property list is truncated."
        case .badTrailer:
            return "The binary property list trailer is inconsistent with the file."
        case .offsetOutOfRange(let object):
            return "Object \(object) has an offset outside the object area."
        case .referenceOutOfRange(let ref):
            return "An object reference (\(ref)) points past the last object."
        case .cycle(let object):
            return "Object \(object) contains itself."
        case .tooDeep:
            return "The property list is nested too deeply."
        case .tooLarge:
            return "The property list exceeds the size limits."
        case .invalidObject(let marker, let offset):
            return "Invalid object marker 0x\(String(marker, radix: 16)) at offset \(offset)."
        case .invalidString(let offset):
            return "The string at offset \(offset) is not valid text."
        case .nonStringKey(let object):
            return "Dictionary key object \(object) is not a string."
        case .integerOutOfRange(let offset):
            return "The integer at offset \(offset) does not fit in 64 bits."
        }
    }
}

/// One decoding pass over a validated file.
private struct BinaryPlistDecoder {
    let bytes: [UInt8]
    let limits: BinaryPlist.Limits
    let offsetIntSize: Int
    let objectRefSize: Int
    let objectCount: Int
    let topObject: Int
    let offsetTableOffset: Int
    /// Objects on the current path from the top object; finding one again is a cycle.
    var visiting: [Bool]
    var decodedValues = 0

    init(bytes: [UInt8], limits: BinaryPlist.Limits) throws(BinaryPlistError) {
        self.bytes = bytes
        self.limits = limits
        // Header (8) + at least one object byte + one offset entry + trailer (32).
        guard bytes.count >= 8 + 1 + 1 + 32 else { throw .truncated }
        let trailer = bytes.count - 32
        offsetIntSize = Int(bytes[trailer + 6])
        objectRefSize = Int(bytes[trailer + 7])
        guard (1...8).contains(offsetIntSize), (1...8).contains(objectRefSize) else { throw .badTrailer }
        guard let count = Int(exactly: Self.readUInt64(bytes, at: trailer + 8)),
              let top = Int(exactly: Self.readUInt64(bytes, at: trailer + 16)),
              let tableOffset = Int(exactly: Self.readUInt64(bytes, at: trailer + 24))
        else { throw .badTrailer }
        guard count >= 1, top < count else { throw .badTrailer }
        guard count <= limits.maxObjects else { throw .tooLarge }
        // References must be wide enough to name every object.
        if objectRefSize < 8, (1 << (8 * objectRefSize)) < count { throw .badTrailer }
        let (tableSize, overflow) = count.multipliedReportingOverflow(by: offsetIntSize)
        guard !overflow, tableOffset >= 9, tableOffset <= trailer, tableSize <= trailer - tableOffset
        else { throw .badTrailer }
        objectCount = count
        topObject = top
        offsetTableOffset = tableOffset
        visiting = [Bool](repeating: false, count: count)
    }

    mutating func decodeTop() throws(BinaryPlistError) -> PlistValue {
        try value(object: topObject, depth: 0)
    }

    // MARK: - Reading

    static func readUInt64(_ bytes: [UInt8], at offset: Int) -> UInt64 {
        var result: UInt64 = 0
        for index in offset..<(offset + 8) { result = result << 8 | UInt64(bytes[index]) }
        return result
    }

    /// A big-endian unsigned integer of `width` (1...8) bytes inside the object area.
    func readUnsigned(at offset: Int, width: Int) throws(BinaryPlistError) -> UInt64 {
        guard offset >= 0, width >= 1, width <= 8, offset <= offsetTableOffset - width else { throw .truncated }
        var result: UInt64 = 0
        for index in offset..<(offset + width) { result = result << 8 | UInt64(bytes[index]) }
        return result
    }

    /// Where object number `object` starts, checked against the object area.
    func offset(of object: Int) throws(BinaryPlistError) -> Int {
        let entry = offsetTableOffset + object * offsetIntSize  // validated in init: no overflow
        var raw: UInt64 = 0
        for index in entry..<(entry + offsetIntSize) { raw = raw << 8 | UInt64(bytes[index]) }
        guard let offset = Int(exactly: raw), offset >= 8, offset < offsetTableOffset else {
            throw .offsetOutOfRange(object: object)
        }
        return offset
    }

    /// Reads the object reference at `offset`, checked against the object count.
    func reference(at offset: Int) throws(BinaryPlistError) -> Int {
        let raw = try readUnsigned(at: offset, width: objectRefSize)
        guard let ref = Int(exactly: raw), ref < objectCount else { throw .referenceOutOfRange(raw) }
        return ref
    }

    /// The element count of a variable-length object and where its payload starts.
    ///
    /// A low nibble of 0xF means the count follows as an integer object.
    func lengthAndStart(marker: UInt8, at offset: Int) throws(BinaryPlistError) -> (count: Int, start: Int) {
        let nibble = Int(marker & 0x0F)
        if nibble != 0x0F { return (nibble, offset + 1) }
        let intOffset = offset + 1
        guard intOffset < offsetTableOffset else { throw .truncated }
        let intMarker = bytes[intOffset]
        guard intMarker & 0xF0 == 0x10, intMarker & 0x0F <= 3 else {
            throw .invalidObject(marker: intMarker, offset: intOffset)
        }
        let width = 1 << Int(intMarker & 0x0F)
        let raw = try readUnsigned(at: intOffset + 1, width: width)
        // Callers check count × element size against the object area before allocating.
        guard let count = Int(exactly: raw) else { throw .tooLarge }
        return (count, intOffset + 1 + width)
    }

    /// Checks that `count` elements of `size` bytes starting at `start` lie inside the object area.
    func payloadEnd(start: Int, count: Int, size: Int) throws(BinaryPlistError) -> Int {
        let (length, overflow) = count.multipliedReportingOverflow(by: size)
        guard !overflow, start <= offsetTableOffset, length <= offsetTableOffset - start else { throw .truncated }
        return start + length
    }

    // MARK: - Objects

    mutating func value(object: Int, depth: Int) throws(BinaryPlistError) -> PlistValue {
        decodedValues += 1
        guard decodedValues <= limits.maxDecodedValues else { throw .tooLarge }
        let start = try offset(of: object)
        let marker = bytes[start]
        switch marker >> 4 {
        case 0x0:
            switch marker {
            case 0x08: return .bool(false)
            case 0x09: return .bool(true)
            // 0x00 (null) and 0x0F (fill) have no place in a bplist00 value tree.
            default: throw .invalidObject(marker: marker, offset: start)
            }
        case 0x1:
            return try integer(marker: marker, at: start)
        case 0x2:
            switch marker & 0x0F {
            case 2: return .real(Double(Float(bitPattern: UInt32(try readUnsigned(at: start + 1, width: 4)))))
            case 3: return .real(Double(bitPattern: try readUnsigned(at: start + 1, width: 8)))
            default: throw .invalidObject(marker: marker, offset: start)
            }
        case 0x3:
            guard marker == 0x33 else { throw .invalidObject(marker: marker, offset: start) }
            return .date(Double(bitPattern: try readUnsigned(at: start + 1, width: 8)))
        case 0x4:
            let (count, payload) = try lengthAndStart(marker: marker, at: start)
            let end = try payloadEnd(start: payload, count: count, size: 1)
            return .data(Data(bytes[payload..<end]))
        case 0x5:
            let (count, payload) = try lengthAndStart(marker: marker, at: start)
            let end = try payloadEnd(start: payload, count: count, size: 1)
            let slice = bytes[payload..<end]
            guard slice.allSatisfy({ $0 < 0x80 }) else { throw .invalidString(offset: start) }
            return .string(String(decoding: slice, as: UTF8.self))
        case 0x6:
            let (count, payload) = try lengthAndStart(marker: marker, at: start)
            let end = try payloadEnd(start: payload, count: count, size: 2)
            return .string(try utf16String(from: payload, to: end, objectOffset: start))
        case 0x8:
            let width = Int(marker & 0x0F) + 1
            if width > 8 {
                // Wider UIDs are allowed only with leading zero bytes.
                let extra = width - 8
                _ = try payloadEnd(start: start + 1, count: width, size: 1)
                guard bytes[(start + 1)..<(start + 1 + extra)].allSatisfy({ $0 == 0 }) else {
                    throw .integerOutOfRange(offset: start)
                }
                return .uid(try readUnsigned(at: start + 1 + extra, width: 8))
            }
            return .uid(try readUnsigned(at: start + 1, width: width))
        case 0xA, 0xC:
            let (count, payload) = try lengthAndStart(marker: marker, at: start)
            _ = try payloadEnd(start: payload, count: count, size: objectRefSize)
            return try container(object: object, depth: depth) { (decoder) throws(BinaryPlistError) in
                var elements: [PlistValue] = []
                elements.reserveCapacity(count)
                for index in 0..<count {
                    let ref = try decoder.reference(at: payload + index * decoder.objectRefSize)
                    elements.append(try decoder.value(object: ref, depth: depth + 1))
                }
                return .array(elements)
            }
        case 0xD:
            let (count, payload) = try lengthAndStart(marker: marker, at: start)
            _ = try payloadEnd(start: payload, count: count, size: 2 * objectRefSize)
            return try container(object: object, depth: depth) { (decoder) throws(BinaryPlistError) in
                var entries: [String: PlistValue] = [:]
                entries.reserveCapacity(count)
                let valuesStart = payload + count * decoder.objectRefSize
                for index in 0..<count {
                    let keyRef = try decoder.reference(at: payload + index * decoder.objectRefSize)
                    let valueRef = try decoder.reference(at: valuesStart + index * decoder.objectRefSize)
                    guard case .string(let key) = try decoder.value(object: keyRef, depth: depth + 1) else {
                        throw .nonStringKey(object: keyRef)
                    }
                    entries[key] = try decoder.value(object: valueRef, depth: depth + 1)
                }
                return .dictionary(entries)
            }
        default:
            throw .invalidObject(marker: marker, offset: start)
        }
    }

    /// Runs `body` with `object` marked as being on the current path.
    mutating func container(
        object: Int, depth: Int, _ body: (inout BinaryPlistDecoder) throws(BinaryPlistError) -> PlistValue
    ) throws(BinaryPlistError) -> PlistValue {
        guard !visiting[object] else { throw .cycle(object: object) }
        guard depth < limits.maxDepth else { throw .tooDeep }
        visiting[object] = true
        defer { visiting[object] = false }
        return try body(&self)
    }

    func integer(marker: UInt8, at start: Int) throws(BinaryPlistError) -> PlistValue {
        switch marker & 0x0F {
        case 0: return .integer(Int64(try readUnsigned(at: start + 1, width: 1)))
        case 1: return .integer(Int64(try readUnsigned(at: start + 1, width: 2)))
        case 2: return .integer(Int64(try readUnsigned(at: start + 1, width: 4)))
        case 3: return .integer(Int64(bitPattern: try readUnsigned(at: start + 1, width: 8)))
        case 4:
            // A signed 128-bit integer; CoreFoundation uses it for unsigned 64-bit values.
            let high = try readUnsigned(at: start + 1, width: 8)
            let low = try readUnsigned(at: start + 9, width: 8)
            if high == 0 {
                if let small = Int64(exactly: low) { return .integer(small) }
                return .unsignedInteger(low)
            }
            if high == UInt64.max, low >= 1 << 63 { return .integer(Int64(bitPattern: low)) }
            throw .integerOutOfRange(offset: start)
        default:
            throw .invalidObject(marker: marker, offset: start)
        }
    }

    func utf16String(from start: Int, to end: Int, objectOffset: Int) throws(BinaryPlistError) -> String {
        var units: [UInt16] = []
        units.reserveCapacity((end - start) / 2)
        var index = start
        while index < end {
            units.append(UInt16(bytes[index]) << 8 | UInt16(bytes[index + 1]))
            index += 2
        }
        var scalars = String.UnicodeScalarView()
        var iterator = units.makeIterator()
        var codec = UTF16()
        decoding: while true {
            switch codec.decode(&iterator) {
            case .scalarValue(let scalar): scalars.append(scalar)
            case .emptyInput: break decoding
            case .error: throw .invalidString(offset: objectOffset)
            }
        }
        return String(scalars)
    }
}
