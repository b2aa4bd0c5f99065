import Foundation

/// Writes `PlistValue` trees as `bplist00` binary property lists.
///
/// Foundation cannot write keyed-archive UIDs, and the store builder needs
/// them to produce `Z_MODELCACHE` archives in Apple's layout. Scalars that
/// are equal byte for byte (strings, numbers, dates, data, UIDs) are written
/// once and shared, as CoreFoundation does. Dictionary keys are written in
/// sorted order so the output is deterministic.
public enum BinaryPlistWriter {
    /// Encodes `value` as the top object of a binary plist.
    public static func encode(_ value: PlistValue) -> Data {
        var builder = Builder()
        let top = builder.add(value)
        return builder.finish(top: top)
    }

    /// Scalars are shared only when their encodings are identical; strings
    /// compare by UTF-8 bytes so canonically-equal but different strings stay distinct.
    private enum ScalarKey: Hashable {
        case string([UInt8])
        case integer(Int64)
        case unsignedInteger(UInt64)
        case real(UInt64)
        case date(UInt64)
        case data(Data)
        case bool(Bool)
        case uid(UInt64)
    }

    private struct Builder {
        /// Encoded objects without their references resolved: containers keep object numbers.
        enum Object {
            case bytes([UInt8])
            case array([Int])
            case dictionary(keys: [Int], values: [Int])
        }

        var objects: [Object] = []
        var shared: [ScalarKey: Int] = [:]

        mutating func add(_ value: PlistValue) -> Int {
            switch value {
            case .array(let elements):
                let index = objects.count
                objects.append(.array([]))
                let refs = elements.map { add($0) }
                objects[index] = .array(refs)
                return index
            case .dictionary(let entries):
                let index = objects.count
                objects.append(.dictionary(keys: [], values: []))
                var keys: [Int] = []
                var values: [Int] = []
                for key in entries.keys.sorted() {
                    keys.append(add(.string(key)))
                }
                for key in entries.keys.sorted() {
                    // Force-unwrap free: the key came from the dictionary itself.
                    if let entry = entries[key] { values.append(add(entry)) }
                }
                objects[index] = .dictionary(keys: keys, values: values)
                return index
            default:
                let key = Self.scalarKey(value)
                if let existing = shared[key] { return existing }
                let index = objects.count
                objects.append(.bytes(Self.encodeScalar(value)))
                shared[key] = index
                return index
            }
        }

        static func scalarKey(_ value: PlistValue) -> ScalarKey {
            switch value {
            case .string(let string): return .string(Array(string.utf8))
            case .integer(let int): return .integer(int)
            case .unsignedInteger(let uint):
                if let int = Int64(exactly: uint) { return .integer(int) }
                return .unsignedInteger(uint)
            case .real(let real): return .real(real.bitPattern)
            case .date(let seconds): return .date(seconds.bitPattern)
            case .data(let data): return .data(data)
            case .bool(let bool): return .bool(bool)
            case .uid(let uid): return .uid(uid)
            case .array, .dictionary: return .uid(0)  // never used: containers are not shared
            }
        }

        static func encodeScalar(_ value: PlistValue) -> [UInt8] {
            switch value {
            case .string(let string):
                if string.utf8.allSatisfy({ $0 < 0x80 }) {
                    let utf8 = Array(string.utf8)
                    return header(0x50, count: utf8.count) + utf8
                }
                let units = Array(string.utf16)
                var out = header(0x60, count: units.count)
                out.reserveCapacity(out.count + 2 * units.count)
                for unit in units { out += [UInt8(unit >> 8), UInt8(unit & 0xFF)] }
                return out
            case .integer(let int):
                return encodeInteger(int)
            case .unsignedInteger(let uint):
                if let int = Int64(exactly: uint) { return encodeInteger(int) }
                return [0x14] + [UInt8](repeating: 0, count: 8) + bigEndian(uint, width: 8)
            case .real(let real):
                return [0x23] + bigEndian(real.bitPattern, width: 8)
            case .date(let seconds):
                return [0x33] + bigEndian(seconds.bitPattern, width: 8)
            case .data(let data):
                return header(0x40, count: data.count) + [UInt8](data)
            case .bool(let bool):
                return [bool ? 0x09 : 0x08]
            case .uid(let uid):
                let width = byteWidth(uid)
                // UIDs use n+1 bytes; keep to 1, 2, 4 or 8 like CoreFoundation.
                return [0x80 | UInt8(width - 1)] + bigEndian(uid, width: width)
            case .array, .dictionary:
                return []
            }
        }

        static func encodeInteger(_ int: Int64) -> [UInt8] {
            if int < 0 { return [0x13] + bigEndian(UInt64(bitPattern: int), width: 8) }
            let uint = UInt64(int)
            let width = byteWidth(uint)
            let exponent: UInt8 = width == 1 ? 0 : width == 2 ? 1 : width == 4 ? 2 : 3
            return [0x10 | exponent] + bigEndian(uint, width: width)
        }

        /// A marker with its count, using the 0xF escape and an integer object for counts of 15 and more.
        static func header(_ marker: UInt8, count: Int) -> [UInt8] {
            if count < 15 { return [marker | UInt8(count)] }
            return [marker | 0x0F] + encodeInteger(Int64(count))
        }

        /// The smallest of 1, 2, 4 or 8 bytes that holds `value`.
        static func byteWidth(_ value: UInt64) -> Int {
            if value <= 0xFF { return 1 }
            if value <= 0xFFFF { return 2 }
            if value <= 0xFFFF_FFFF { return 4 }
            return 8
        }

        static func bigEndian(_ value: UInt64, width: Int) -> [UInt8] {
            (0..<width).map { UInt8(truncatingIfNeeded: value >> (8 * UInt64(width - 1 - $0))) }
        }

        func finish(top: Int) -> Data {
            let refSize = Self.byteWidth(UInt64(objects.count))
            var out: [UInt8] = Array("bplist00".utf8)
            var offsets: [Int] = []
            offsets.reserveCapacity(objects.count)
            for object in objects {
                offsets.append(out.count)
                switch object {
                case .bytes(let bytes):
                    out += bytes
                case .array(let refs):
                    out += Self.header(0xA0, count: refs.count)
                    for ref in refs { out += Self.bigEndian(UInt64(ref), width: refSize) }
                case .dictionary(let keys, let values):
                    out += Self.header(0xD0, count: keys.count)
                    for ref in keys + values { out += Self.bigEndian(UInt64(ref), width: refSize) }
                }
            }
            let tableOffset = out.count
            let offsetSize = Self.byteWidth(UInt64(tableOffset))
            for offset in offsets { out += Self.bigEndian(UInt64(offset), width: offsetSize) }
            out += [UInt8](repeating: 0, count: 6)
            out += [UInt8(offsetSize), UInt8(refSize)]
            out += Self.bigEndian(UInt64(objects.count), width: 8)
            out += Self.bigEndian(UInt64(top), width: 8)
            out += Self.bigEndian(UInt64(tableOffset), width: 8)
            return Data(out)
        }
    }
}
