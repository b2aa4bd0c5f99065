import Foundation
import StoreTestSupport
import Testing
@testable import StoreFormats

// MARK: - Helpers

/// Builds a binary plist from hand-encoded objects, so tests can describe hostile layouts exactly.
private func makePlist(objects: [[UInt8]], top: Int = 0, refSize: UInt8 = 1, offsetSize: UInt8 = 2,
                       objectCount: UInt64? = nil, offsets overrideOffsets: [Int: UInt64] = [:]) -> Data {
    var out: [UInt8] = Array("bplist00".utf8)
    var offsets: [UInt64] = []
    for object in objects {
        offsets.append(UInt64(out.count))
        out += object
    }
    for (index, offset) in overrideOffsets { offsets[index] = offset }
    let tableOffset = out.count
    for offset in offsets { out += bigEndian(offset, width: Int(offsetSize)) }
    out += [0, 0, 0, 0, 0, 0, offsetSize, refSize]
    out += bigEndian(objectCount ?? UInt64(objects.count), width: 8)
    out += bigEndian(UInt64(top), width: 8)
    out += bigEndian(UInt64(tableOffset), width: 8)
    return Data(out)
}

private func bigEndian(_ value: UInt64, width: Int) -> [UInt8] {
    (0..<width).map { UInt8(truncatingIfNeeded: value >> (8 * UInt64(width - 1 - $0))) }
}

/// Written by Python's plistlib (FMT_BINARY, sort_keys) from made-up values shaped like a
/// Core Data Z_METADATA dictionary, plus one of every scalar type. Not from any real store.
let pythonMetadataVector = """
YnBsaXN0MDDfEBABAgMEBQYHCAkKCwwNDg8QERIXGBobHB0eHyA0NTY3OF8QHU5TUGVyc2lzdGVuY2VGcmFtZXdvcmtWZXJzaW9uXxAZTlNTdG9yZU1v\
ZGVsVmVyc2lvbkhhc2hlc18QIE5TU3RvcmVNb2RlbFZlcnNpb25IYXNoZXNWZXJzaW9uXxAeTlNTdG9yZU1vZGVsVmVyc2lvbklkZW50aWZpZXJzW05T\
U3RvcmVUeXBlXxASX05TQXV0b1ZhY3V1bUxldmVsU2JpZ1djcmVhdGVkVWVtcHR5VGZsYWdUbGlzdFhuZWdhdGl2ZVNvZmZVcmF0aW9VdGl0bGVUd2lk\
ZREE0tITFBUWVkZvbGRlclROb3RlTxAgdMzUMwOEfyZVMAZBqTSVnNsRaJzhcaoPAPqpKRf700BPECDY2ixJ3znZHffs0Zm5Lae/Jk8CYkLMxpsI2urf\
5YfEWxADoRlTMi4wVlNRTGl0ZVEyFAAAAAAAAAAAgAAAAAAAAAUzQcTck4AAAADQCa8QFCEiIxckJSYnKCkqKywtLi8wMTIzEAAQARACEAQQBRAGEAcQ\
CBAJEAoQCxAMEA0QDhAPEBAQERASEBMT/////////9YIIz/QAAAAAAAAawBDAGEAZgDpACAwxzD8ML8AINg93gASAAERcAAIACsASwBnAIoAqwC3AMwA\
0ADYAN4A4wDoAPEA9QD7AQEBBgEJAQ4BFQEaAT0BYAFiAWQBaAFvAXEBggGLAYwBjQGkAaYBqAGqAawBrgGwAbIBtAG2AbgBugG8Ab4BwAHCAcQBxgHI\
AcoB0wHUAd0B9AAAAAAAAAIBAAAAAAAAADkAAAAAAAAAAAAAAAAAAAH5
"""

func decodeBase64Vector(_ text: String) throws -> Data {
    try #require(Data(base64Encoded: text.filter { !$0.isWhitespace }))
}

/// A value that exercises every case and every length encoding the writer has.
private let sampleValue: PlistValue = .dictionary([
    "ascii": .string("SQLite"),
    "long ascii string over fifteen chars": .string(String(repeating: "x", count: 300)),
    "unicode": .string("Café データ 😀"),
    "empty string": .string(""),
    "small": .integer(7),
    "byte": .integer(255),
    "short": .integer(65_535),
    "word": .integer(4_294_967_295),
    "long": .integer(Int64.max),
    "negative": .integer(-1),
    "min": .integer(Int64.min),
    "huge unsigned": .unsignedInteger(UInt64.max),
    "real": .real(0.1),
    "nan-free real": .real(-1e300),
    "yes": .bool(true),
    "no": .bool(false),
    "date": .date(700_000_000.5),
    "data": .data(Data((0..<40).map { UInt8($0) })),
    "empty data": .data(Data()),
    "array": .array((0..<20).map { .integer(Int64($0)) }),
    "nested": .dictionary(["inner": .array([.string("a"), .dictionary([:]), .array([])])]),
    "uids": .array([.uid(0), .uid(255), .uid(256), .uid(70_000), .uid(UInt64(UInt32.max) + 1)]),
])

// MARK: - Decoding valid plists

@Suite struct BinaryPlistDecodingTests {
    @Test func decodesMetadataShapedPlistWrittenByPython() throws {
        let value = try BinaryPlist.decode(try decodeBase64Vector(pythonMetadataVector))
        #expect(value["NSStoreType"] == .string("SQLite"))
        #expect(value["NSPersistenceFrameworkVersion"]?.intValue == 1234)
        #expect(value["NSStoreModelVersionHashesVersion"] == .integer(3))
        #expect(value["NSStoreModelVersionIdentifiers"] == .array([.string("2.0")]))
        #expect(value["_NSAutoVacuumLevel"]?.stringValue == "2")
        let hashes = try #require(value["NSStoreModelVersionHashes"]?.dictionaryValue)
        #expect(Set(hashes.keys) == ["Note", "Folder"])
        #expect(hashes["Note"]?.dataValue?.count == 32)
        #expect(value["title"] == .string("Café データ 😀"))
        #expect(value["flag"] == .bool(true))
        #expect(value["off"] == .bool(false))
        #expect(value["ratio"] == .real(0.25))
        #expect(value["negative"] == .integer(-42))
        #expect(value["wide"] == .integer(70_000))
        // plistlib writes integers above Int64.max as 16-byte integers.
        #expect(value["big"] == .unsignedInteger((1 << 63) + 5))
        #expect(value["empty"] == .dictionary([:]))
        #expect(value["list"]?.arrayValue?.count == 20)
        #expect(value["list"]?[19] == .integer(19))
        // 2023-03-08 20:26:40 UTC.
        #expect(value["created"]?.dateValue == Date(timeIntervalSince1970: 1_678_307_200))
    }

    @Test func decodesSetsAsArraysAndFloat32Reals() throws {
        let data = makePlist(objects: [[0xC2, 1, 2], [0x22, 0x3F, 0xC0, 0x00, 0x00], [0x10, 9]])
        #expect(try BinaryPlist.decode(data) == .array([.real(1.5), .integer(9)]))
    }

    @Test func sharedReferencesAreNotCycles() throws {
        // [s, s, [s]]: the same string reached three times, never from itself.
        let data = makePlist(objects: [[0xA3, 1, 1, 2], [0x51, 0x61], [0xA1, 1]])
        #expect(try BinaryPlist.decode(data) == .array([.string("a"), .string("a"), .array([.string("a")])]))
    }

    @Test func accessorsReturnNilForOtherCases() {
        let value = PlistValue.integer(5)
        #expect(value.stringValue == nil)
        #expect(value.arrayValue == nil)
        #expect(value["key"] == nil)
        #expect(value.doubleValue == 5)
        #expect(PlistValue.unsignedInteger(UInt64.max).intValue == nil)
        #expect(PlistValue.unsignedInteger(UInt64.max).uint64Value == UInt64.max)
        #expect(PlistValue.integer(-1).uint64Value == nil)
        #expect(PlistValue.bool(true).intValue == nil)
    }
}

// MARK: - Writing

@Suite struct BinaryPlistWriterTests {
    @Test func roundTripsEveryCase() throws {
        let data = BinaryPlistWriter.encode(sampleValue)
        #expect(data.prefix(8) == Data("bplist00".utf8))
        #expect(try BinaryPlist.decode(data) == sampleValue)
    }

    @Test func roundTripsTopLevelScalars() throws {
        for value: PlistValue in [.string("x"), .integer(-5), .bool(false), .uid(3), .data(Data([1])), .array([])] {
            #expect(try BinaryPlist.decode(BinaryPlistWriter.encode(value)) == value)
        }
    }

    @Test func reencodesPythonOutputLosslessly() throws {
        let value = try BinaryPlist.decode(try decodeBase64Vector(pythonMetadataVector))
        #expect(try BinaryPlist.decode(BinaryPlistWriter.encode(value)) == value)
    }

    @Test func sharesEqualScalarsOnce() throws {
        let one = BinaryPlistWriter.encode(.array([.string("repeated value")]))
        let many = BinaryPlistWriter.encode(.array(Array(repeating: .string("repeated value"), count: 10)))
        // Nine more one-byte references, no more string copies.
        #expect(many.count == one.count + 9)
    }

    @Test func keepsCanonicallyEqualStringsDistinct() throws {
        let composed = "\u{E9}", decomposed = "e\u{301}"
        let data = BinaryPlistWriter.encode(.array([.string(composed), .string(decomposed)]))
        guard case .array(let elements) = try BinaryPlist.decode(data) else {
            Issue.record("not an array")
            return
        }
        #expect(elements.map { $0.stringValue.map { Array($0.unicodeScalars) } }
            == [Array(composed.unicodeScalars), Array(decomposed.unicodeScalars)])
    }

    @Test func foundationReadsWhatTheWriterWrites() throws {
        let value: PlistValue = .dictionary([
            "NSStoreType": .string("SQLite"),
            "unicode": .string("Café データ"),
            "version": .integer(1345),
            "negative": .integer(-7),
            "large": .integer(1 << 40),
            "ratio": .real(0.5),
            "flag": .bool(true),
            "hash": .data(Data(repeating: 0xAB, count: 32)),
            "when": .date(0),
            "identifiers": .array([.string("1.0.0"), .string(String(repeating: "long", count: 10))]),
            "nested": .dictionary(["empty": .array([])]),
        ])
        let data = BinaryPlistWriter.encode(value)
        var format = PropertyListSerialization.PropertyListFormat.xml
        let object = try PropertyListSerialization.propertyList(from: data, options: [], format: &format)
        #expect(format == .binary)
        let dictionary = try #require(object as? [String: Any])
        #expect(dictionary["NSStoreType"] as? String == "SQLite")
        #expect(dictionary["unicode"] as? String == "Café データ")
        #expect((dictionary["version"] as? NSNumber)?.int64Value == 1345)
        #expect((dictionary["negative"] as? NSNumber)?.int64Value == -7)
        #expect((dictionary["large"] as? NSNumber)?.int64Value == 1 << 40)
        #expect((dictionary["ratio"] as? NSNumber)?.doubleValue == 0.5)
        #expect(dictionary["flag"] as? Bool == true)
        #expect(dictionary["hash"] as? Data == Data(repeating: 0xAB, count: 32))
        #expect(dictionary["when"] as? Date == Date(timeIntervalSinceReferenceDate: 0))
        #expect(dictionary["identifiers"] as? [String] == ["1.0.0", String(repeating: "long", count: 10)])
        #expect((dictionary["nested"] as? [String: Any])?["empty"] as? [Any] != nil)
    }

    @Test func foundationWrittenPlistsDecode() throws {
        let object: [String: Any] = ["name": "Item", "count": 3, "tags": ["a", "b"], "blob": Data([1, 2, 3])]
        let data = try PropertyListSerialization.data(fromPropertyList: object, format: .binary, options: 0)
        let value = try BinaryPlist.decode(data)
        #expect(value["name"] == .string("Item"))
        #expect(value["count"] == .integer(3))
        #expect(value["tags"] == .array([.string("a"), .string("b")]))
        #expect(value["blob"] == .data(Data([1, 2, 3])))
    }
}

// MARK: - Hostile input

@Suite struct BinaryPlistHostileInputTests {
    @Test func rejectsNonPlistsAndTinyFiles() {
        #expect(throws: BinaryPlistError.notBinaryPlist) { try BinaryPlist.decode(Data()) }
        #expect(throws: BinaryPlistError.notBinaryPlist) { try BinaryPlist.decode(Data("<?xml version=".utf8)) }
        #expect(throws: BinaryPlistError.truncated) { try BinaryPlist.decode(Data("bplist00".utf8) + Data(count: 10)) }
    }

    @Test func rejectsTruncatedFile() throws {
        let valid = BinaryPlistWriter.encode(sampleValue)
        // Cutting anywhere leaves a trailer made of other bytes; it must be rejected, never trusted.
        for length in stride(from: 0, to: valid.count, by: 7) {
            #expect(throws: BinaryPlistError.self) { try BinaryPlist.decode(valid.prefix(length)) }
        }
    }

    @Test func rejectsOffsetTableRunningIntoTrailer() {
        // Three objects declared, only one offset-table entry present.
        let data = makePlist(objects: [[0x08]], objectCount: 3)
        #expect(throws: BinaryPlistError.badTrailer) { try BinaryPlist.decode(data) }
    }

    @Test func rejectsImpossibleTrailerFields() {
        var data = makePlist(objects: [[0x08]])
        data[data.count - 26] = 0  // offsetIntSize 0
        #expect(throws: BinaryPlistError.badTrailer) { try BinaryPlist.decode(data) }
        let topOutOfRange = makePlist(objects: [[0x08]], top: 1)
        #expect(throws: BinaryPlistError.badTrailer) { try BinaryPlist.decode(topOutOfRange) }
        let hugeCount = makePlist(objects: [[0x08]], objectCount: UInt64.max)
        #expect(throws: BinaryPlistError.badTrailer) { try BinaryPlist.decode(hugeCount) }
        let countOverflowingTable = makePlist(objects: [[0x08]], refSize: 8, objectCount: UInt64(Int64.max) / 2)
        #expect(throws: (any Error).self) { try BinaryPlist.decode(countOverflowingTable) }
    }

    @Test func rejectsOffsetsPastTheObjectArea() {
        let data = makePlist(objects: [[0xA1, 1], [0x08]], offsets: [1: 60_000])
        #expect(throws: BinaryPlistError.offsetOutOfRange(object: 1)) { try BinaryPlist.decode(data) }
        let intoHeader = makePlist(objects: [[0x08]], offsets: [0: 3])
        #expect(throws: BinaryPlistError.offsetOutOfRange(object: 0)) { try BinaryPlist.decode(intoHeader) }
    }

    @Test func rejectsObjectReferencesOutOfRange() {
        let data = makePlist(objects: [[0xA2, 1, 5], [0x08]])
        #expect(throws: BinaryPlistError.referenceOutOfRange(5)) { try BinaryPlist.decode(data) }
        let dictionary = makePlist(objects: [[0xD1, 1, 9], [0x51, 0x6B]])
        #expect(throws: BinaryPlistError.referenceOutOfRange(9)) { try BinaryPlist.decode(dictionary) }
    }

    @Test func rejectsSelfReferencingArray() {
        let data = makePlist(objects: [[0xA1, 0]])
        #expect(throws: BinaryPlistError.cycle(object: 0)) { try BinaryPlist.decode(data) }
    }

    @Test func rejectsIndirectCycleThroughDictionary() {
        // 0: [1]; 1: {"k": 0}
        let data = makePlist(objects: [[0xA1, 1], [0xD1, 2, 0], [0x51, 0x6B]])
        #expect(throws: BinaryPlistError.cycle(object: 0)) { try BinaryPlist.decode(data) }
    }

    @Test func rejectsTenThousandNestedArraysWithoutOverflowingTheStack() {
        let depth = 10_000
        var objects: [[UInt8]] = (0..<depth).map { [0xA1] + bigEndian(UInt64($0 + 1), width: 2) }
        objects.append([0xA0])
        let data = makePlist(objects: objects, refSize: 2, offsetSize: 2)
        #expect(throws: BinaryPlistError.tooDeep) { try BinaryPlist.decode(data) }
        // Just under the default limit of 512 decodes (and does not strain the test thread's stack).
        var shallow: [[UInt8]] = (0..<510).map { [0xA1] + bigEndian(UInt64($0 + 1), width: 2) }
        shallow.append([0xA0])
        #expect(throws: Never.self) { try BinaryPlist.decode(makePlist(objects: shallow, refSize: 2)) }
    }

    @Test func rejectsExponentialSharing() {
        // Object i is [i+1, i+1]: 40 objects expand to 2^40 values.
        var objects: [[UInt8]] = (0..<40).map { [0xA2, UInt8($0 + 1), UInt8($0 + 1)] }
        objects.append([0x08])
        #expect(throws: BinaryPlistError.tooLarge) { try BinaryPlist.decode(makePlist(objects: objects)) }
    }

    @Test func rejectsHugeDeclaredLengths() {
        // Data claiming Int64.max bytes; a string claiming 1,000 bytes in a tiny file;
        // an array claiming 2^32 references.
        let data = makePlist(objects: [[0x4F, 0x13, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]])
        #expect(throws: BinaryPlistError.truncated) { try BinaryPlist.decode(data) }
        let negative = makePlist(objects: [[0x4F, 0x13, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]])
        #expect(throws: BinaryPlistError.tooLarge) { try BinaryPlist.decode(negative) }
        let utf16Overflow = makePlist(objects: [[0x6F, 0x13, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]])
        #expect(throws: BinaryPlistError.truncated) { try BinaryPlist.decode(utf16Overflow) }
        let string = makePlist(objects: [[0x5F, 0x11, 0x03, 0xE8, 0x61]])
        #expect(throws: BinaryPlistError.truncated) { try BinaryPlist.decode(string) }
        let array = makePlist(objects: [[0xAF, 0x12, 0xFF, 0xFF, 0xFF, 0xFF]])
        #expect(throws: (any Error).self) { try BinaryPlist.decode(array) }
        let utf16 = makePlist(objects: [[0x6F, 0x13, 0x40, 0, 0, 0, 0, 0, 0, 0]])
        #expect(throws: (any Error).self) { try BinaryPlist.decode(utf16) }
    }

    @Test func rejectsLengthFollowUpThatIsNotAnInteger() {
        let data = makePlist(objects: [[0x5F, 0x51, 0x61]])
        #expect(throws: BinaryPlistError.invalidObject(marker: 0x51, offset: 9)) { try BinaryPlist.decode(data) }
    }

    @Test func rejectsUnknownMarkers() {
        for marker: UInt8 in [0x00, 0x0F, 0x15, 0x21, 0x34, 0x70, 0x90, 0xB0, 0xE0, 0xF0] {
            let data = makePlist(objects: [[marker] + [UInt8](repeating: 0, count: 16)])
            #expect(throws: BinaryPlistError.invalidObject(marker: marker, offset: 8)) { try BinaryPlist.decode(data) }
        }
    }

    @Test func rejectsInvalidStrings() {
        let loneSurrogate = makePlist(objects: [[0x61, 0xD8, 0x3D]])
        #expect(throws: BinaryPlistError.invalidString(offset: 8)) { try BinaryPlist.decode(loneSurrogate) }
        let highASCII = makePlist(objects: [[0x52, 0x61, 0xE9]])
        #expect(throws: BinaryPlistError.invalidString(offset: 8)) { try BinaryPlist.decode(highASCII) }
    }

    @Test func rejectsNonStringKeys() {
        let data = makePlist(objects: [[0xD1, 1, 2], [0x10, 1], [0x08]])
        #expect(throws: BinaryPlistError.nonStringKey(object: 1)) { try BinaryPlist.decode(data) }
    }

    @Test func rejectsSixteenByteIntegersBeyond64Bits() throws {
        let data = makePlist(objects: [[0x14, 0, 0, 0, 0, 0, 0, 0, 1] + [UInt8](repeating: 0, count: 8)])
        #expect(throws: BinaryPlistError.integerOutOfRange(offset: 8)) { try BinaryPlist.decode(data) }
        let negative = makePlist(objects: [[0x14] + [UInt8](repeating: 0xFF, count: 16)])
        #expect(try BinaryPlist.decode(negative) == .integer(-1))
    }

    @Test func enforcesInputAndObjectLimits() {
        let data = BinaryPlistWriter.encode(sampleValue)
        var small = BinaryPlist.Limits()
        small.maxInputBytes = 100
        #expect(throws: BinaryPlistError.tooLarge) { try BinaryPlist.decode(data, limits: small) }
        var fewObjects = BinaryPlist.Limits()
        fewObjects.maxObjects = 3
        #expect(throws: BinaryPlistError.tooLarge) { try BinaryPlist.decode(data, limits: fewObjects) }
    }

    @Test func survivesThousandsOfRandomMutations() throws {
        let seeds = [try decodeBase64Vector(pythonMetadataVector), BinaryPlistWriter.encode(sampleValue)]
        var random = SeededRandom(seed: 0x5701_E1E5)
        var limits = BinaryPlist.Limits()
        limits.maxDecodedValues = 50_000
        var decoded = 0
        for iteration in 0..<4_000 {
            var bytes = [UInt8](seeds[iteration % seeds.count])
            switch random.next() % 4 {
            case 0:
                // Flip a few bytes anywhere.
                for _ in 0..<(1 + random.next() % 8) {
                    bytes[Int(random.next() % UInt64(bytes.count))] = UInt8(truncatingIfNeeded: random.next())
                }
            case 1:
                // Damage the trailer or the offset table, where the numbers live.
                for _ in 0..<(1 + random.next() % 4) {
                    let index = bytes.count - 1 - Int(random.next() % 80)
                    bytes[index] = UInt8(truncatingIfNeeded: random.next())
                }
            case 2:
                // Truncate, then fix nothing.
                bytes.removeLast(Int(random.next() % UInt64(bytes.count)))
            default:
                // Overwrite a run with one value (0x00, 0xFF, or a marker).
                let start = Int(random.next() % UInt64(bytes.count))
                let length = min(bytes.count - start, Int(1 + random.next() % 16))
                let fill = [UInt8(0x00), 0xFF, 0xAF, 0xDF, 0x0F][Int(random.next() % 5)]
                for index in start..<(start + length) { bytes[index] = fill }
            }
            do {
                _ = try BinaryPlist.decode(Data(bytes), limits: limits)
                decoded += 1
            } catch {
                // Any BinaryPlistError is fine; the point is no crash and no hang.
            }
        }
        // Some mutations land in unused bytes, so a few decode.
        #expect(decoded > 0)
    }
}
