import Foundation
import StoreFormats
import Testing

/// The cell and record parser on bytes made by hand (an encoder written here, from the file
/// format's rules) and on hostile bytes: every read is bounded, nothing traps.
@Suite("Table-leaf cells and records")
struct TableLeafRecordTests {
    static func varint(_ value: UInt64) -> [UInt8] {
        if value > 0x00ff_ffff_ffff_ffff {
            var out: [UInt8] = []
            var v = value >> 8
            for _ in 0 ..< 8 { out.insert(UInt8(v & 0x7f) | 0x80, at: 0); v >>= 7 }
            return out + [UInt8(value & 0xff)]
        }
        var groups: [UInt8] = [UInt8(value & 0x7f)]
        var v = value >> 7
        while v != 0 { groups.insert(UInt8(v & 0x7f) | 0x80, at: 0); v >>= 7 }
        return groups
    }

    /// A record: NULL, an 8-byte integer, a double, text, a blob, 0 and 1.
    static func record(_ text: String, _ number: Int64, _ real: Double, _ blob: [UInt8]) -> [UInt8] {
        let t = Array(text.utf8)
        let types: [UInt64] = [0, 6, 7, UInt64(13 + 2 * t.count), UInt64(12 + 2 * blob.count), 8, 9]
        let typeBytes = types.flatMap(varint)
        let header = varint(UInt64(typeBytes.count + 1)) + typeBytes
        var body: [UInt8] = []
        for shift in stride(from: 56, through: 0, by: -8) { body.append(UInt8(truncatingIfNeeded: UInt64(bitPattern: number) >> UInt64(shift))) }
        for shift in stride(from: 56, through: 0, by: -8) { body.append(UInt8(truncatingIfNeeded: real.bitPattern >> UInt64(shift))) }
        return header + body + t + blob
    }

    @Test("A cell made from the format's rules reads back")
    func roundTrip() throws {
        for rowid: UInt64 in [1, 127, 128, 16_383, 16_384, 1 << 40, UInt64(Int64.max)] {
            let payload = Self.record("héllo", -42, 3.25, [0, 1, 2])
            let cell = Self.varint(UInt64(payload.count)) + Self.varint(rowid) + payload
            var page = [UInt8](repeating: 0, count: 512)
            page.replaceSubrange(100 ..< 100 + cell.count, with: cell)
            let parsed = page.withUnsafeBytes { TableLeafCell.read($0, at: 100, limit: 512, maxLocal: 512 - 35) }
            let got = try #require(parsed)
            #expect(got.rowid == Int64(bitPattern: rowid) && got.end == 100 + cell.count)
            #expect(got.values == [.null, .integer(-42), .real(3.25), .text(Array("héllo".utf8)), .blob([0, 1, 2]), .integer(0), .integer(1)])
            // One byte short of its payload: not a cell.
            #expect(page.withUnsafeBytes { TableLeafCell.read($0, at: 100, limit: 100 + cell.count - 1, maxLocal: 477) } == nil)
        }
    }

    @Test("Hostile bytes: random pages, every offset, every limit, never a trap")
    func hostile() {
        var seed: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next() -> UInt64 { seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407; return seed >> 11 }
        for round in 0 ..< 300 {
            var page = (0 ..< 1024).map { _ in UInt8(truncatingIfNeeded: next()) }
            // Plausible headers now and then, so the layout reader walks chains and pointers.
            if round % 3 == 0 { page[0] = 13; page[1] = UInt8(next() % 4); page[3] = 0; page[4] = UInt8(next() % 40) }
            page.withUnsafeBytes { raw in
                _ = BTreePageLayout.read(raw, headerOffset: 0, usableSize: 1024)
                _ = BTreePageLayout.read(raw, headerOffset: 1020, usableSize: 1024)
                for at in stride(from: -2, through: 1026, by: 7) {
                    _ = TableLeafCell.read(raw, at: at, limit: 1024, maxLocal: 989)
                    _ = SQLiteRecord.parse(raw, at: at, limit: min(1024, max(0, at + Int(next() % 300))))
                    _ = SQLiteRecord.serialTypes(raw, from: at, headerEnd: min(1024, max(0, at + 9)))
                }
            }
        }
        // A freeblock chain that loops ends; sizes past the page are refused.
        var page = [UInt8](repeating: 0, count: 512)
        page[0] = 13; page[1] = 0x01; page[2] = 0x00  // first freeblock at 256
        page[256] = 0x01; page[257] = 0x00; page[258] = 0x00; page[259] = 0x10  // points to itself
        let layout = page.withUnsafeBytes { BTreePageLayout.read($0, headerOffset: 0, usableSize: 512) }
        #expect(layout?.freeblocks == [256 ..< 272])
        #expect(SQLiteRecord.contentLength(10) == nil && SQLiteRecord.contentLength(UInt64.max) == nil)
    }
}
