import Acquisition
import CoreDataStore
import Foundation
import StoreFormats
import Testing
@testable import WALForensics

/// `recover` keeps the values of the versions the WAL's commits showed in a scratch file
/// (`VersionValues`) and prints what it reads back: every kind of value must come back exactly
/// (compared by `RecordRecovery.fingerprint`, which spells out every case, bytes of archives
/// included), and bytes that are not what it wrote must give an error, never a trap.
@Suite("recover's scratch file of version values")
struct VersionValuesTests {
    static let archive = PlistValue.dictionary([
        "b": .array([.string("é\u{301}"), .integer(-3), .unsignedInteger(.max), .real(-0.0), .bool(true)]),
        "a": .dictionary(["x": .date(700_000_000.25), "y": .data(Data([0, 255, 7])), "z": .uid(9)]),
        "": .real(.nan),
    ])

    static let values: [RecordChange.Value] = [
        .init(name: "null", value: .null),
        .init(name: "int", value: .integer(.min)),
        .init(name: "real", value: .real(1e-310)),
        .init(name: "bool", value: .bool(false)),
        .init(name: "text", value: .text("a\u{0}b\n\"ü🙂")),
        .init(name: "", value: .text("")),
        .init(name: "date", value: .date(iso: "2023-03-08T20:26:45.5Z", referenceSeconds: 700_000_005.5)),
        .init(name: "uuid", value: .uuid("00000000-0000-4000-8000-000000000005")),
        .init(name: "decimal", value: .decimal("12.3400")),
        .init(name: "bytes", value: .binary(BinaryValue(size: 3, prefixHex: "00ff07", storage: .plain))),
        .init(name: "inline", value: .binary(BinaryValue(size: nil, prefixHex: "", storage: .inline))),
        .init(name: "external", value: .binary(BinaryValue(size: nil, prefixHex: "", storage: .external(
            ExternalFile(name: "AB-CD", relativePath: ".default_SUPPORT/_EXTERNAL_DATA/AB-CD", exists: true, size: 42))))),
        .init(name: "missing", value: .binary(BinaryValue(size: 0, prefixHex: "", storage: .external(
            ExternalFile(name: "EF", relativePath: "x/EF", exists: false, size: nil))))),
        .init(name: "archived", value: .archived(archive)),
        .init(name: "composite", value: .composite([.init(name: "lat", value: .real(1.5)),
                                                    .init(name: "inner", value: .composite([.init(name: "n", value: .null)]))])),
        .init(name: "object", value: .object(entity: "Folder", pk: 6)),
    ]

    @Test("every kind of value comes back as it was kept, in order, under its key")
    func roundTrip() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("version-values-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        var stored = VersionValues(folder: { folder }) as VersionValues?
        var ids: [Int64] = []
        for i in 0 ..< 300 {
            ids.append(try stored!.store(i % 2 == 0 ? Self.values : Array(Self.values.prefix(i % Self.values.count))))
        }
        ids.append(try stored!.store([]))
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path)
        #expect(files.filter { $0.hasSuffix(".sqlite") }.count == 1, "\(files)")
        for (i, id) in ids.enumerated().reversed() {
            let expected = i == 300 ? [] : (i % 2 == 0 ? Self.values : Array(Self.values.prefix(i % Self.values.count)))
            let back = try stored!.values(id)
            #expect(back.map(\.name) == expected.map(\.name))
            #expect(RecordRecovery.fingerprint(back) == RecordRecovery.fingerprint(expected))
        }
        // Written again after being read: still one file, and every key still right.
        let late = try stored!.store(Self.values)
        #expect(RecordRecovery.fingerprint(try stored!.values(late)) == RecordRecovery.fingerprint(Self.values))
        #expect(RecordRecovery.fingerprint(try stored!.values(ids[0])) == RecordRecovery.fingerprint(Self.values))
        stored = nil
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).isEmpty, "the scratch file goes with it")
    }

    @Test("bytes cut short or changed anywhere are refused (nil), never read past their end")
    func damagedBytes() {
        var encoder = VersionValues.Encoder()
        encoder.values(Self.values)
        let bytes = encoder.bytes
        var whole = VersionValues.Decoder(bytes: bytes)
        #expect(whole.values().map(RecordRecovery.fingerprint) == RecordRecovery.fingerprint(Self.values))
        for cut in stride(from: 0, to: bytes.count, by: 7) {
            var reader = VersionValues.Decoder(bytes: Array(bytes.prefix(cut)))
            #expect(reader.values() == nil || reader.at <= cut)
        }
        for at in stride(from: 0, to: bytes.count, by: 5) {
            var changed = bytes
            changed[at] ^= 0xA5
            var reader = VersionValues.Decoder(bytes: changed)
            _ = reader.values()
            #expect(reader.at <= changed.count)
        }
        var huge = VersionValues.Decoder(bytes: [0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF])
        #expect(huge.values() == nil)
    }
}
