import Acquisition
import CoreDataStore
import Foundation
import SQLiteAccess
import StoreFormats
import StoreTestSupport
import Testing

@Suite("value decoding")
struct ValueDecodingTests {
    let decoder = ValueDecoder()

    @Test("dates: seconds since 2001 as ISO 8601 UTC, fractions to the microsecond, absurd values as numbers")
    func dates() {
        #expect(ValueDecoder.iso8601(referenceSeconds: 0) == "2001-01-01T00:00:00Z")
        #expect(ValueDecoder.iso8601(referenceSeconds: 743_915_993.611546) == "2024-07-29T03:19:53.611546Z")
        #expect(ValueDecoder.iso8601(referenceSeconds: -978_307_200) == "1970-01-01T00:00:00Z")
        #expect(ValueDecoder.iso8601(referenceSeconds: -978_307_200.5) == "1969-12-31T23:59:59.5Z")
        #expect(ValueDecoder.iso8601(referenceSeconds: 0.9999999) == "2001-01-01T00:00:01Z")
        #expect(ValueDecoder.iso8601(referenceSeconds: .infinity) == "inf")
        #expect(ValueDecoder.iso8601(referenceSeconds: 1e300) == "1e+300")
        #expect(ValueDecoder.parseDate("2001-01-01") == 0)
        #expect(ValueDecoder.parseDate("2001-01-01T00:00:10Z") == 10)
        #expect(ValueDecoder.parseDate("2001-01-01T01:00:10+01:00") == 10)
        #expect(ValueDecoder.parseDate("2001-01-01T00:00:10.25Z") == 10.25)
        #expect(ValueDecoder.parseDate("yesterday") == nil)
        let date = ModelAttribute(name: "d", type: .date)
        #expect(decoder.decode(.real(86_400), as: date).isDate("2001-01-02T00:00:00Z"))
        #expect(decoder.decode(.integer(86_400), as: date).isDate("2001-01-02T00:00:00Z"))
    }

    @Test("UUIDs: 16 bytes as Apple's uppercase uuidString; anything else stays bytes")
    func uuids() {
        let bytes = Data([0x7C, 0x1E, 0xA5, 0xA6, 0x0D, 0x9B, 0x4B, 0x74, 0xA5, 0x30, 0x13, 0x25, 0x1F, 0x49, 0x43, 0xD8])
        #expect(ValueDecoder.uuidString(bytes) == "7C1EA5A6-0D9B-4B74-A530-13251F4943D8")
        #expect(ValueDecoder.uuidString(bytes.prefix(15)) == nil)
        let uuid = ModelAttribute(name: "id", type: .uuid)
        if case .uuid(let s) = decoder.decode(.blob(bytes), as: uuid) { #expect(s == "7C1EA5A6-0D9B-4B74-A530-13251F4943D8") } else { Issue.record("not a UUID") }
        if case .binary(let b) = decoder.decode(.blob(Data([1, 2, 3])), as: uuid) { #expect(b.size == 3) } else { Issue.record("not bytes") }
    }

    @Test("UUIDs are written byte by byte as Foundation's uuidString writes them, from any slice of bytes")
    func uuidTextAsFoundations() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0 ..< 2000 {
            let bytes = Data((0 ..< 20).map { _ in UInt8.random(in: 0 ... 255, using: &generator) })
            let slice = bytes.dropFirst(2).prefix(16)
            let b = [UInt8](slice)
            let foundation = UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7],
                                         b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15])).uuidString.uppercased()
            #expect(ValueDecoder.uuidString(slice) == foundation)
        }
        #expect(ValueDecoder.uuidString(Data(repeating: 0xFF, count: 16)) == "FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF")
    }

    @Test("scalars: Booleans, integers, doubles, decimals, strings; a stored value of the wrong class is shown as stored")
    func scalars() {
        func text(_ v: DatabaseValue, _ t: ModelAttributeType) -> String {
            switch decoder.decode(v, as: ModelAttribute(name: "x", type: t)) {
            case .bool(let b): return "bool \(b)"
            case .integer(let i): return "int \(i)"
            case .real(let d): return "real \(d)"
            case .text(let s): return "text \(s)"
            case .decimal(let s): return "decimal \(s)"
            case .null: return "null"
            case .binary(let b): return "bytes \(b.size ?? -1)"
            default: return "other"
            }
        }
        #expect(text(.integer(1), .boolean) == "bool true")
        #expect(text(.integer(0), .boolean) == "bool false")
        #expect(text(.integer(7), .boolean) == "int 7")
        #expect(text(.integer(-5), .integer16) == "int -5")
        #expect(text(.real(3.0), .integer64) == "int 3")
        #expect(text(.integer(2), .double) == "real 2.0")
        #expect(text(.text("12.50"), .decimal) == "decimal 12.50")
        #expect(text(.real(0.1), .decimal) == "decimal 0.1")
        #expect(text(.text("hello"), .integer32) == "text hello")
        #expect(text(.blob(Data([0])), .string) == "bytes 1")
        #expect(text(.null, .string) == "null")
    }

    /// A decoder reading `support`'s `_EXTERNAL_DATA` through copies made in `scratch`.
    static func decoder(support: URL, scratch: URL) throws -> ValueDecoder {
        let family = StoreFamily(main: support.deletingLastPathComponent().appendingPathComponent("default.store"), supportFolder: support)
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        return ValueDecoder(externalData: try ExternalDataFolder.copying(family, storeName: "default.store", into: scratch), storeName: "default.store")
    }

    @Test("external-storage markers: inline payload, file reference read through its private copy, unsafe names refused")
    func externalStorage() throws {
        let folder = try TemporaryFolder("external")
        let support = folder.path(".default_SUPPORT")
        try FileManager.default.createDirectory(at: support.appendingPathComponent("_EXTERNAL_DATA"), withIntermediateDirectories: true)
        let name = "0A1B2C3D-4E5F-4071-8293-A4B5C6D7E8F9"
        try Data(count: 300).write(to: support.appendingPathComponent("_EXTERNAL_DATA/\(name)"))
        let decoder = try Self.decoder(support: support, scratch: folder.path("scratch"))
        let attribute = ModelAttribute(name: "photo", type: .binary, allowsExternalBinaryDataStorage: true)
        func binary(_ data: Data) -> BinaryValue? {
            if case .binary(let b) = decoder.decode(.blob(data), as: attribute) { return b }
            return nil
        }
        #expect(binary(Data([0x01, 0xCA, 0xFE])) == BinaryValue(size: 2, prefixHex: "cafe", storage: .inline))
        let found = binary(Data([0x02]) + Data(name.utf8) + Data([0]))
        #expect(found?.storage == .external(ExternalFile(name: name, relativePath: ".default_SUPPORT/_EXTERNAL_DATA/\(name)", exists: true, size: 300,
                                                         sha256: SHA256.hex(Data(count: 300)))))
        let missing = binary(Data([0x02]) + Data("FFFFFFFF-2222-4333-8444-555555555555".utf8))
        if case .external(let file)? = missing?.storage { #expect(!file.exists && file.size == nil) } else { Issue.record("not external") }
        // A link or a named pipe in _EXTERNAL_DATA is what it is: not followed, not read (lstat
        // only, so the pipe cannot block), never an existing file of the link's length.
        let linked = "11111111-2222-4333-8444-555555555555", pipe = "22222222-2222-4333-8444-555555555555"
        try FileManager.default.createSymbolicLink(atPath: support.appendingPathComponent("_EXTERNAL_DATA/\(linked)").path,
                                                   withDestinationPath: support.appendingPathComponent("_EXTERNAL_DATA/\(name)").path)
        #expect(mkfifo(support.appendingPathComponent("_EXTERNAL_DATA/\(pipe)").path, 0o600) == 0)
        let listed = try Self.decoder(support: support, scratch: folder.path("scratch-2"))
        for (file, kind) in [(linked, ExternalFile.Kind.symbolicLink), (pipe, .namedPipe)] {
            guard case .binary(let value) = listed.decode(.blob(Data([0x02]) + Data(file.utf8) + Data([0])), as: attribute),
                  case .external(let found) = value.storage else { Issue.record("not external"); continue }
            #expect(found.kind == kind && !found.exists && found.size == nil && value.size == nil, "\(found)")
        }
        // A linked _EXTERNAL_DATA folder: its files are behind a link, not followed.
        let other = folder.path(".other_SUPPORT")
        try FileManager.default.createDirectory(at: other, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: other.appendingPathComponent("_EXTERNAL_DATA").path,
                                                   withDestinationPath: support.appendingPathComponent("_EXTERNAL_DATA").path)
        if case .binary(let b) = try Self.decoder(support: other, scratch: folder.path("scratch-3")).decode(.blob(Data([0x02]) + Data(name.utf8)), as: attribute),
           case .external(let file) = b.storage {
            #expect(file.kind == .symbolicLink && !file.exists)
        } else { Issue.record("not external") }
        // A value too long to be a reference is bytes, whatever its first bytes look like.
        let long = Data([0x02]) + Data(String(repeating: "A", count: 200).utf8)
        #expect(binary(long) == BinaryValue(size: long.count, prefixHex: ValueDecoder.hex(long.prefix(16)), storage: .plain))
        // A name that could leave the folder is not a file reference: the bytes are shown as they are.
        #expect(binary(Data([0x02]) + Data("../../etc/passwd".utf8))?.storage == .plain)
        // Without external storage enabled, a leading 0x02 is just data.
        let plain = ModelAttribute(name: "blob", type: .binary)
        if case .binary(let b) = decoder.decode(.blob(Data([0x02, 0x41])), as: plain) { #expect(b.storage == .plain && b.size == 2) }
    }

    @Test("transformable values: a keyed archive renders as a tree; other bytes, or a damaged archive, stay bytes")
    func transformable() throws {
        let attribute = ModelAttribute(name: "t", type: .transformable, valueTransformerName: "NSSecureUnarchiveFromData")
        let w = KeyedArchiveWriter()
        let array = w.array([w.string("a"), w.int(2), w.uuid(UUID(uuidString: "6F1C2A53-9B0E-4C7D-8E21-3D5A7B9C0E14")!)])
        let archive = try w.finish(root: array)
        if case .archived(let tree) = decoder.decode(.blob(archive), as: attribute) {
            #expect(tree == .array([.string("a"), .integer(2), .string("6F1C2A53-9B0E-4C7D-8E21-3D5A7B9C0E14")]))
        } else {
            Issue.record("not decoded as an archive")
        }
        if case .binary(let b) = decoder.decode(.blob(archive.prefix(archive.count - 4)), as: attribute) {
            #expect(b.size == archive.count - 4)
        } else {
            Issue.record("a damaged archive should stay bytes")
        }
        if case .binary(let b) = decoder.decode(.blob(Data("plain".utf8)), as: attribute) { #expect(b.prefixHex == "706c61696e") }
    }
}

extension FieldValue {
    func isDate(_ iso: String) -> Bool {
        if case .date(let text, _) = self { return text == iso }
        return false
    }
}
