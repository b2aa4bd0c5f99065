@testable import Acquisition
import Foundation
import StoreFormats
import StoreTestSupport
import Testing

/// The gzip layer of .tar.gz archives, decoded by ISA-L (Linux builds) or by libarchive's own
/// filter: both must find the same stores with the same bytes, and fail the same way on bad input.
@Suite("The gzip layer of .tar.gz archives")
struct GzipLayerTests {
    static func inventory(_ url: URL, _ decoder: GzipDecoder, limits: ArchiveLimits = ArchiveLimits()) throws -> (Inventory, EvidenceSession) {
        let session = try EvidenceSession()
        return (try InputResolver(session: session, limits: limits, gzipDecoder: decoder).inventory(of: url.path), session)
    }

    /// The demo container, its uncompressed tar, and the SHA-256 of each loose file by path.
    static func container(in folder: TemporaryFolder, then extra: [ArchiveMaker.Entry] = []) throws -> (tar: Data, loose: [String: String]) {
        let container = try InventoryInputs.demoContainer(in: folder)
        let tarURL = folder.path("container.tar")
        try ArchiveMaker.write(try ArchiveMaker.entries(of: container, prefix: "c") + extra, to: tarURL, format: .paxTar)
        var loose: [String: String] = [:]
        for name in ["Model.sqlite", "Model.sqlite-wal", "default.store", "default.store-wal"] {
            let url = container.appendingPathComponent("Library/Application Support/\(name)")
            if FileManager.default.fileExists(atPath: url.path) { loose["c/Library/Application Support/\(name)"] = try SHA256.hexOfFile(at: url) }
        }
        return (try Data(contentsOf: tarURL), loose)
    }

    /// Each store file's hash as the inventory reports it, by its path inside the archive.
    static func hashes(_ inventory: Inventory) -> [String: String] {
        var result: [String: String] = [:]
        for store in inventory.stores {
            for (path, hash) in store.sha256 { result[String(path.split(separator: "!").last ?? "")] = hash }
        }
        return result
    }

    static func expectSameStores(_ inventory: Inventory, loose: [String: String], _ context: String) {
        #expect(inventory.damage == nil, "\(context): \(inventory.damage ?? "")")
        #expect(inventory.stores.count == 3, "\(context): \(inventory.stores.map(\.path))")
        let found = hashes(inventory)
        for (path, hash) in loose { #expect(found[path] == hash, "\(context): \(path)") }
    }

    @Test("each decoder finds the stores of a .tar.gz with the bytes of the loose files", arguments: GzipDecoder.available)
    func sameStores(_ decoder: GzipDecoder) throws {
        let folder = try TemporaryFolder("gz-same")
        let (tar, loose) = try Self.container(in: folder)
        #expect(loose.count == 3 && loose["c/Library/Application Support/default.store-wal"] != nil, "\(loose.keys.sorted())")
        let archive = folder.path("c.tar.gz")
        try ArchiveMaker.gzip(tar).write(to: archive)
        let (inventory, session) = try Self.inventory(archive, decoder)
        defer { session.scratch.remove() }
        Self.expectSameStores(inventory, loose: loose, "\(decoder)")
    }

    @Test("several gzip members read as one stream; bytes after the last member are damage (ISA-L sees them)",
          arguments: GzipDecoder.available)
    func membersAndTrailingBytes(_ decoder: GzipDecoder) throws {
        let folder = try TemporaryFolder("gz-members")
        let (tar, loose) = try Self.container(in: folder)
        // Split off the 64-byte boundary, so a member ends inside a tar block and inside a store.
        let cut = tar.count / 2 + 37
        let members = folder.path("members.tar.gz")
        try (ArchiveMaker.gzip(tar.prefix(cut)) + ArchiveMaker.gzip(tar.dropFirst(cut))).write(to: members)
        let (multi, s1) = try Self.inventory(members, decoder)
        defer { s1.scratch.remove() }
        Self.expectSameStores(multi, loose: loose, "two members, \(decoder)")

        let trailing = folder.path("trailing.tar.gz")
        try (ArchiveMaker.gzip(tar) + Data(repeating: 0x2a, count: 3000)).write(to: trailing)
        let (withTrailing, s2) = try Self.inventory(trailing, decoder)
        defer { s2.scratch.remove() }
        #expect(withTrailing.stores.count == 3, "every entry is still read: \(withTrailing.stores.map(\.path))")
        if decoder == .isal {
            // Not gzip and not any entry's: the file was altered after it was made.
            #expect(withTrailing.damage?.contains("3000 bytes after the end of the gzip stream") == true, "\(withTrailing.damage ?? "")")
        }
    }

    @Test("a last member whose CRC-32 does not match its data is reported as damage, after the stores it held",
          .enabled(if: GzipDecoder.available.contains(.isal), "ISA-L is not built in; libarchive's filter does not check the trailer"))
    func badChecksum() throws {
        let folder = try TemporaryFolder("gz-crc")
        let (tar, loose) = try Self.container(in: folder)
        var bytes = [UInt8](try ArchiveMaker.gzip(tar))
        bytes[bytes.count - 8] ^= 0xff
        let archive = folder.path("crc.tar.gz")
        try Data(bytes).write(to: archive)
        let (inventory, session) = try Self.inventory(archive, .isal)
        defer { session.scratch.remove() }
        let damage = try #require(inventory.damage)
        #expect(damage.contains("CRC-32"), "\(damage)")
        #expect(inventory.stores.count == 3, "the entries were all read before the trailer")
        #expect(Self.hashes(inventory)["c/Library/Application Support/default.store"] == loose["c/Library/Application Support/default.store"])
    }

    @Test("cut, corrupt, empty and bomb .tar.gz archives fail the same way under each decoder", arguments: GzipDecoder.available)
    func badStreams(_ decoder: GzipDecoder) throws {
        let folder = try TemporaryFolder("gz-bad")
        // Incompressible filler after the stores, so a cut lands after them.
        let filler = PseudoRandomBytes.data(400_000, seed: 9)
        let (tar, _) = try Self.container(in: folder, then: [.file("zzz/filler.bin", filler)])
        let whole = try ArchiveMaker.gzip(tar)

        let cut = folder.path("cut.tar.gz")
        try whole.prefix(whole.count - 100_000).write(to: cut)
        let (cutInventory, s1) = try Self.inventory(cut, decoder)
        defer { s1.scratch.remove() }
        #expect(cutInventory.damage != nil, "\(decoder)")
        #expect(cutInventory.stores.contains { $0.path.hasSuffix("default.store") }, "stores before the cut are still found (\(decoder))")

        var corruptBytes = [UInt8](whole)
        corruptBytes[10] = 0xFF  // the first DEFLATE block header becomes the reserved type 3
        let corrupt = folder.path("corrupt.tar.gz")
        try Data(corruptBytes).write(to: corrupt)
        #expect(throws: ArchiveError.self, "\(decoder)") { _ = try Self.inventory(corrupt, decoder) }

        let empty = folder.path("empty.tar.gz")
        try ArchiveMaker.write([], to: empty, format: .paxTar, filter: .gzip)
        #expect(throws: ArchiveError.self, "\(decoder)") { _ = try Self.inventory(empty, decoder) }

        // 100 MB of zeros behind a SQLite header: the ratio limit must see the compressed bytes
        // consumed, whoever decodes them.
        var header = Data("SQLite format 3\0".utf8)
        header.append(Data(repeating: 0, count: 100 << 20))
        let bomb = folder.path("bomb.tar.gz")
        try ArchiveMaker.write([.file("bomb.sqlite", header)], to: bomb, format: .paxTar, filter: .gzip)
        header = Data()
        var limits = ArchiveLimits()
        limits.maxCompressionRatio = 100
        let error = try #require(throws: ArchiveError.self, "\(decoder)") { _ = try Self.inventory(bomb, decoder, limits: limits) }
        guard case .bomb(_, let entry, _) = error else { Issue.record("not a bomb error: \(error)"); return }
        #expect(entry == "bomb.sqlite")
    }

    /// Pieces of varied sizes and kinds (empty, compressible, incompressible), each its own member.
    static func members() throws -> (stream: Data, plain: Data) {
        var state: UInt64 = 77
        func random(_ n: Int) -> Data {
            Data(PseudoRandomBytes.next(n, state: &state))
        }
        var stream = Data(), plain = Data()
        for i in 0..<40 {
            let piece = i % 3 == 0 ? random(i * 37) : Data(repeating: UInt8(i), count: i * 101)
            stream += try ArchiveMaker.gzip(piece)
            plain += piece
        }
        return (stream, plain)
    }

    @Test("gzip members ending at every position of a read chunk decode to the original bytes",
          .enabled(if: GzipDecoder.available.contains(.isal), "ISA-L is not built in"),
          arguments: [2, 3, 7, 64, 4099, 1 << 18])
    func chunkBoundaries(inputSize: Int) throws {
        let folder = try TemporaryFolder("gz-chunks")
        let (stream, plain) = try Self.members()
        let url = folder.path("members.gz")
        try stream.write(to: url)
        let source = try #require(GzipSource(url: url, inputSize: inputSize))
        let (decoded, error) = source.decodeAll()
        #expect(error == nil, "\(error ?? "")")
        #expect(decoded == plain)
        #expect(source.compressedBytes == Int64(stream.count))
    }

    @Test("a gzip stream cut anywhere ends in an error, after a prefix of the original, never a hang",
          .enabled(if: GzipDecoder.available.contains(.isal), "ISA-L is not built in"))
    func cutAnywhere() throws {
        let folder = try TemporaryFolder("gz-cut")
        let (stream, plain) = try Self.members()
        let url = folder.path("cut.gz")
        // Every cut inside the first members (headers, blocks, trailers), then coarser.
        let cuts = Array(1..<300) + Array(stride(from: 300, to: stream.count, by: 97))
        for cut in cuts {
            try stream.prefix(cut).write(to: url)
            let source = try #require(GzipSource(url: url, inputSize: 5))
            let (decoded, error) = source.decodeAll()
            #expect(plain.starts(with: decoded), "cut at \(cut): not a prefix")
            // A cut exactly between two members is a complete, shorter stream; one byte further, the
            // lone first byte of a header cannot be told from trailing bytes, and is counted as such.
            if error == nil {
                let boundaries = try Self.memberBoundaries()
                #expect(boundaries.contains(cut) && source.trailingBytes == 0
                        || boundaries.contains(cut - 1) && source.trailingBytes == 1, "cut at \(cut) decoded without error")
            }
        }
    }

    /// The offsets in `members().stream` at which a member ends.
    static func memberBoundaries() throws -> Set<Int> {
        var state: UInt64 = 77
        func random(_ n: Int) -> Data {
            Data(PseudoRandomBytes.next(n, state: &state))
        }
        var offset = 0
        var result: Set<Int> = []
        for i in 0..<40 {
            let piece = i % 3 == 0 ? random(i * 37) : Data(repeating: UInt8(i), count: i * 101)
            offset += try ArchiveMaker.gzip(piece).count
            result.insert(offset)
        }
        return result
    }
}
