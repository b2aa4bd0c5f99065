import Acquisition
import Foundation
import SQLiteAccess
import StoreFormats

/// A stored value read through its attribute's type: what the app saw, not what SQLite holds.
public indirect enum FieldValue: Sendable {
    case null
    case integer(Int64)
    case real(Double)
    case bool(Bool)
    case text(String)
    /// A text longer than `LongValue.window`, left in the store to be read in pieces.
    case longText(LongText)
    /// A Date: ISO 8601 UTC, and the stored seconds since 2001-01-01.
    case date(iso: String, referenceSeconds: Double)
    /// A 16-byte UUID as its canonical uppercase string.
    case uuid(String)
    /// A Decimal, as the text of the stored number (no precision is lost in printing).
    case decimal(String)
    case binary(BinaryValue)
    /// A transformable value whose bytes are a keyed archive of Foundation types, rendered as a tree.
    case archived(PlistValue)
    /// A composite attribute's elements, in model order.
    case composite([CompositeElement])
    /// A to-one relationship: the destination entity and primary key.
    case object(entity: String, pk: Int64)

    public struct CompositeElement: Sendable {
        public let name: String
        public let value: FieldValue
        public init(name: String, value: FieldValue) {
            self.name = name
            self.value = value
        }
    }
}

/// Bytes, summarised: size and a short hex prefix, and where an external-storage attribute keeps them.
public struct BinaryValue: Sendable, Equatable {
    public enum Storage: Sendable, Equatable {
        /// Plain bytes in the column.
        case plain
        /// External storage enabled, bytes kept in the row after the `0x01` marker.
        case inline
        /// External storage: the column holds `0x02` + a UUID naming a file in `_EXTERNAL_DATA/`.
        case external(ExternalFile)
    }

    /// Bytes of the value (for inline storage, without the marker; for external, the file's size when present).
    public let size: Int?
    /// Hex of the first bytes (up to `BinaryValue.prefixLength`); empty for external files.
    public let prefixHex: String
    public let storage: Storage

    public static let prefixLength = 16

    public init(size: Int?, prefixHex: String, storage: Storage) {
        self.size = size
        self.prefixHex = prefixHex
        self.storage = storage
    }
}

/// Decodes stored values by attribute type (coredata-sqlite-format.md §3.2).
public struct ValueDecoder: Sendable {
    /// The store's `_EXTERNAL_DATA` as it came (from `WorkingCopy.externalData`); nil when the
    /// caller has none, and references then name files as not checked.
    public let externalData: ExternalDataFolder?
    /// The store file's name, for naming the support folder when no `externalData` is given.
    public let storeName: String

    public init(externalData: ExternalDataFolder? = nil, storeName: String = "default.store") {
        self.externalData = externalData
        self.storeName = storeName
    }

    /// Values of the store `copy` holds, its external files read through the copy's `_EXTERNAL_DATA`.
    public init(_ copy: WorkingCopy) {
        self.init(externalData: copy.externalData, storeName: copy.family.main.lastPathComponent)
    }

    /// Seconds between 1970-01-01 and 2001-01-01.
    public static let referenceDateOffset: Double = UTCDateTime.referenceDateOffset

    public func decode(_ value: DatabaseValue, as attribute: ModelAttribute) -> FieldValue {
        if case .null = value { return .null }
        switch attribute.type {
        case .boolean:
            if let i = value.int64, i == 0 || i == 1 { return .bool(i == 1) }
        case .integer16, .integer32, .integer64:
            if case .integer(let i) = value { return .integer(i) }
            if case .real(let d) = value, let i = value.int64, Double(i) == d { return .integer(i) }
        case .double, .float:
            if let d = value.double { return .real(d) }
        case .date:
            if let d = value.double { return .date(iso: Self.iso8601(referenceSeconds: d), referenceSeconds: d) }
        case .decimal:
            switch value {
            case .text(let s): return .decimal(s)
            case .integer(let i): return .decimal(String(i))
            case .real(let d): return .decimal(String(d))
            default: break
            }
        case .string, .uri:
            if case .text(let s) = value { return .text(s) }
        case .uuid:
            if case .blob(let d) = value, let s = Self.uuidString(d) { return .uuid(s) }
            if case .text(let s) = value, UUID(uuidString: s) != nil { return .uuid(s.uppercased()) }
        case .binary, .transformable, .objectID:
            if case .blob(let d) = value { return decodeBytes(d, attribute: attribute) }
        case .composite, .undefined, .unknown:
            break
        }
        if attribute.isTransformable, case .blob(let d) = value { return decodeBytes(d, attribute: attribute) }
        return Self.natural(value)
    }

    /// A value shown as SQLite stores it, when the model gives no better reading.
    public static func natural(_ value: DatabaseValue) -> FieldValue {
        switch value {
        case .null: return .null
        case .integer(let i): return .integer(i)
        case .real(let d): return .real(d)
        case .text(let s): return .text(s)
        case .blob(let d): return .binary(BinaryValue(size: d.count, prefixHex: hex(d.prefix(BinaryValue.prefixLength)), storage: .plain))
        }
    }

    func decodeBytes(_ data: Data, attribute: ModelAttribute) -> FieldValue {
        var payload = data
        var storage = BinaryValue.Storage.plain
        if attribute.allowsExternalBinaryDataStorage, let marker = data.first {
            if marker == 0x01 {
                payload = data.dropFirst()
                storage = .inline
            } else if marker == 0x02, let file = external(data.dropFirst()) {
                return .binary(BinaryValue(size: file.size, prefixHex: "", storage: .external(file)))
            }
        }
        if attribute.isTransformable, let tree = Self.archivedTree(Data(payload)) {
            return .archived(tree)
        }
        return .binary(BinaryValue(size: payload.count, prefixHex: Self.hex(payload.prefix(BinaryValue.prefixLength)), storage: storage))
    }

    /// The longest column value read as a reference: `0x02`, a name of up to 64 characters, NULs.
    static let referenceLimit = 128

    /// Resolves a `0x02` reference (the marker already dropped) to its file in `_EXTERNAL_DATA`.
    /// Apple writes the 36-character uppercase UUID and one NUL; names that are not plain
    /// UUID-like text are refused (no path tricks), as are values too long to be a reference.
    func external(_ bytes: Data) -> ExternalFile? {
        guard bytes.count < Self.referenceLimit else { return nil }
        var nameBytes = [UInt8](bytes)
        while let last = nameBytes.last, last == 0 { nameBytes.removeLast() }
        guard !nameBytes.isEmpty, nameBytes.count <= 64,
              nameBytes.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x46) || ($0 >= 0x61 && $0 <= 0x66) || $0 == 0x2D })
        else { return nil }
        let name = String(decoding: nameBytes, as: UTF8.self)
        guard let externalData else {
            return ExternalFile(name: name, relativePath: ExternalDataFolder.absent(storeName: storeName).relativePath + "/" + name, kind: .notChecked, size: nil)
        }
        return externalData.file(named: name)
    }

    /// The most bytes a keyed archive may have to be decoded as a tree.
    static let archiveLimit = 16 << 20

    /// A keyed archive of Foundation types as a tree, or nil when the bytes are something else.
    public static func archivedTree(_ data: Data) -> PlistValue? {
        guard BinaryPlist.isBinaryPlist(data),
              let archive = try? KeyedArchive(data: data, limits: .init(maxInputBytes: archiveLimit, maxObjects: 100_000, maxDepth: 64)),
              let root = try? archive.root
        else { return nil }
        return try? archive.json(root, depthLimit: 32, maxValues: 10_000)
    }

    /// 16 bytes as a canonical uppercase UUID string (as Apple's `uuidString`), else nil.
    public static func uuidString(_ data: Data) -> String? {
        guard data.count == 16 else { return nil }
        // Written as bytes, the text `UUID.uuidString` gives (Foundation formats it through
        // `sprintf`: a tenth of recover's time on a store with a UUID per record).
        let digits: StaticString = "0123456789ABCDEF"
        return String(unsafeUninitializedCapacity: 36) { out in
            digits.withUTF8Buffer { hex in
                data.withUnsafeBytes { bytes in
                    var at = 0
                    for i in 0 ..< 16 {
                        if i == 4 || i == 6 || i == 8 || i == 10 { out[at] = 45; at += 1 }
                        out[at] = hex[Int(bytes[i] >> 4)]
                        out[at + 1] = hex[Int(bytes[i] & 0xF)]
                        at += 2
                    }
                }
            }
            return 36
        }
    }

    public static func hex<D: Collection>(_ bytes: D) -> String where D.Element == UInt8 {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(bytes.count * 2)
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0xF)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Seconds since 2001-01-01 UTC as ISO 8601 UTC (`2024-07-29T05:19:53.61Z`), with fractional
    /// seconds to the microsecond when there are any. Values no calendar can show are printed as numbers.
    public static func iso8601(referenceSeconds: Double) -> String {
        guard let t = UTCDateTime(referenceSeconds: referenceSeconds) else { return String(referenceSeconds) }
        let (year, month, day, rest, micros) = (t.year, t.month, t.day, t.secondOfDay, t.microsecond)
        if (0 ... 9999).contains(year) {
            // Years of four digits (all but absurd dates): written as bytes, the same text as below.
            var bytes: [UInt8] = []
            bytes.reserveCapacity(28)
            func digits(_ v: Int64, _ width: Int) {
                var divisor: Int64 = 1
                for _ in 1 ..< width { divisor *= 10 }
                while divisor > 0 { bytes.append(UInt8(48 + v / divisor % 10)); divisor /= 10 }
            }
            digits(year, 4); bytes.append(45); digits(month, 2); bytes.append(45); digits(day, 2); bytes.append(84)
            digits(rest / 3600, 2); bytes.append(58); digits(rest % 3600 / 60, 2); bytes.append(58); digits(rest % 60, 2)
            if micros > 0 {
                bytes.append(46)
                digits(micros, 6)
                while bytes.last == 48 { bytes.removeLast() }
            }
            bytes.append(90)
            return String(decoding: bytes, as: UTF8.self)
        }
        func pad(_ v: Int64, _ width: Int) -> String {
            let s = String(abs(v))
            return (v < 0 ? "-" : "") + String(repeating: "0", count: max(0, width - s.count)) + s
        }
        var text = "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(rest / 3600, 2)):\(pad(rest % 3600 / 60, 2)):\(pad(rest % 60, 2))"
        if micros > 0 {
            var fraction = pad(micros, 6)
            while fraction.hasSuffix("0") { fraction.removeLast() }
            text += "." + fraction
        }
        return text + "Z"
    }

    /// Parses `YYYY-MM-DD`, or ISO 8601 date-time with `Z` or an offset (fractional seconds allowed),
    /// into seconds since 2001-01-01 UTC.
    public static func parseDate(_ text: String) -> Double? {
        let formatter = ISO8601DateFormatter()
        for options: ISO8601DateFormatter.Options in [[.withInternetDateTime, .withFractionalSeconds], [.withInternetDateTime],
                                                      [.withFullDate]] {
            formatter.formatOptions = options
            formatter.timeZone = TimeZone(secondsFromGMT: 0)
            if let date = formatter.date(from: text) { return date.timeIntervalSinceReferenceDate }
        }
        return nil
    }
}
