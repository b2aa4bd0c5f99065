import Acquisition
import Foundation
import SQLiteAccess
import StoreBuilder
import StoreFormats
import StoreTestSupport
import Testing

/// A zip read through its central directory gives what the streaming read gives; a directory that
/// cannot be trusted falls back to the streaming read, with a note, and still finds the stores.
@Suite("Zips read through the central directory")
struct ZipDirectoryTests {
    static func inventory(_ input: URL, reader: ZipReader, limits: ArchiveLimits = ArchiveLimits(),
                          wanted: [PathPattern] = []) throws -> Inventory {
        let session = try EvidenceSession()
        defer { session.scratch.remove() }
        return try InputResolver(session: session, limits: limits, hashArchives: true, wanted: wanted, zipReader: reader)
            .inventory(of: input.path)
    }

    /// Everything the inventory says, as lines (the scratch paths themselves differ between runs).
    static func summary(_ inv: Inventory) -> [String] {
        var lines = ["kind \(inv.kind.rawValue) sha \(inv.inputSHA256 ?? "-") damage \(inv.damage ?? "-")"]
        for s in inv.stores {
            lines.append("store \(s.path) name \(s.name) size \(s.size) wal \(s.sidecars.wal ?? "-") shm \(s.sidecars.shm ?? "-") journal \(s.sidecars.journal ?? "-") external \(s.sidecars.externalData ?? "-")/\(s.sidecars.externalDataFiles) container \(s.container.map { "\($0.kind.rawValue) \($0.identifier ?? "-") \($0.source) \($0.root)" } ?? "-") location \(s.location ?? "-")")
            for (path, hash) in s.sha256.sorted(by: { $0.key < $1.key }) { lines.append("  sha \(path) \(hash)") }
            for url in [s.family.main, s.family.wal, s.family.shm, s.family.journal].compactMap({ $0 }) {
                lines.append("  on disk \(url.lastPathComponent) \((try? SHA256.hexOfFile(at: url)) ?? "missing")")
            }
        }
        lines += inv.orphans.map { "orphan \($0.path) \($0.kind) \($0.size)" }
        lines += inv.skipped.map { "skipped \($0.path): \($0.reason)" }
        lines += inv.warnings.map { "warning \($0)" }
        lines += inv.extracted.map { "extracted \($0.path) \($0.sha256)" }
        lines += inv.otherFiles.map { "other \($0.path)" }
        return lines
    }

    static func usedDirectory(_ inv: Inventory) -> Bool {
        !inv.warnings.contains { $0.hasPrefix("the zip's central directory is damaged") || $0.hasPrefix("the zip was read entry by entry") }
    }

    /// Both readers on `zip`: the same inventory, and the directory path really used.
    static func expectSame(_ zip: URL, wanted: [PathPattern] = [], sourceLocation: SourceLocation = #_sourceLocation) throws {
        let direct = try inventory(zip, reader: .centralDirectory, wanted: wanted)
        let streamed = try inventory(zip, reader: .streaming, wanted: wanted)
        #expect(usedDirectory(direct), "fell back: \(direct.warnings)", sourceLocation: sourceLocation)
        #expect(summary(direct) == summary(streamed), sourceLocation: sourceLocation)
    }

    static func random(_ count: Int, seed: UInt64) -> Data {
        PseudoRandomBytes.data(count, seed: seed)
    }

    /// A container with every kind of entry a scan treats on its own: store families (one with a
    /// WAL and -shm, one with external data), an empty -wal, an orphan sidecar, identity plists,
    /// an AppleDouble file, media, nested folders, a symlink, a traversal name, a duplicate name.
    static func entries(in folder: TemporaryFolder) throws -> [ArchiveMaker.Entry] {
        let container = folder.path("container")
        try DemoContainer.write(into: container)
        do {
            let cache = try Connection.open(path: container.appendingPathComponent("Library/Caches/Cache.data").path, mode: .create)
            try cache.execute("CREATE TABLE c (k, v); INSERT INTO c VALUES (1, randomblob(20000));")
        }
        var entries = try ArchiveMaker.entries(of: container, prefix: "container")
        let small = try Data(contentsOf: container.appendingPathComponent("Library/Caches/Cache.data"))
        var appleDouble = Data([0x00, 0x05, 0x16, 0x07, 0x00, 0x02, 0x00, 0x00])
        appleDouble.append(Data(repeating: 0x20, count: 60))
        entries += [
            .directory("container/Documents/Media/2024/01/"),
            .file("container/Documents/Media/2024/01/IMG_0001.JPG", random(300_000, seed: 1)),
            .file("container/Documents/Media/2024/01/IMG_0002.HEIC", random(70_000, seed: 2)),
            .file("container/Documents/empty.txt", Data()),
            .file("container/Library/Application Support/Notes.sqlite", small),
            .file("container/Library/Application Support/Notes.sqlite-wal", Data()),
            .file("container/Library/Application Support/.Notes_SUPPORT/_EXTERNAL_DATA/6F1C2A53-0001", random(5_000, seed: 3)),
            .file("container/Library/Application Support/.Notes_SUPPORT/_EXTERNAL_DATA/6F1C2A53-0002", random(9_000, seed: 4)),
            .file("container/Library/Caches/gone.db-wal", Data(repeating: 0, count: 64)),
            .file("container/Library/Caches/._Cache.data", appleDouble),
            .file("container/Library/Caches/Cache.data", small),
            .file("container/../escape.db", small),
            .file("/container/abs.db", small),
            .symlink("container/link.db", target: "/etc/passwd"),
            .file("container/Documents/legacy.json", Data("[]".utf8)),
        ]
        return entries
    }

    @Test("the same inventory as the streaming read: deflated, stored, ZIP64; families, sidecars, skips, duplicates, warnings",
          arguments: ["deflate", "stored", "zip64", "zip64 stored"])
    func sameAsStreaming(_ kind: String) throws {
        let folder = try TemporaryFolder("zipcd-same")
        let zip = folder.path("container.zip")
        try ArchiveMaker.write(try Self.entries(in: folder), to: zip, format: kind.hasPrefix("zip64") ? .zip64 : .zip,
                               zipStored: kind.hasSuffix("stored"))
        let before = try SHA256.hexOfFile(at: zip)
        try Self.expectSame(zip, wanted: [PathPattern("**/*.json")])
        let inv = try Self.inventory(zip, reader: .centralDirectory)
        #expect(inv.stores.map { String($0.path.split(separator: "!").last!) } == [
            "container/Library/Application Support/Model.sqlite", "container/Library/Application Support/Notes.sqlite",
            "container/Library/Application Support/default.store", "container/Library/Caches/Cache.data",
            "container/Library/Caches/Cache.data~1", "container/abs.db",
        ])
        let notes = try #require(inv.stores.first { $0.path.hasSuffix("/Notes.sqlite") })
        #expect(notes.sidecars.externalDataFiles == 2 && notes.sidecars.wal != nil)
        #expect(inv.stores.first { $0.path.hasSuffix("default.store") }?.container?.identifier == "com.example.todo")
        #expect(!inv.extracted.contains { $0.path.contains("IMG_") }, "media is never extracted")
        #expect(inv.skipped.contains { $0.path == "container/../escape.db" && $0.reason.contains("traversal") })
        #expect(inv.skipped.contains { $0.path == "container/link.db" && $0.reason.contains("symbolic link") })
        #expect(inv.skipped.contains { $0.path.hasSuffix("._Cache.data") && $0.reason.contains("AppleDouble") })
        #expect(inv.orphans.map { String($0.path.split(separator: "!").last!) } == ["container/Library/Caches/gone.db-wal"])
        #expect(inv.warnings == ["/container/abs.db: leading / removed"])
        #expect(try SHA256.hexOfFile(at: zip) == before, "the evidence is not changed")
    }

    /// bsdtar, as the bench corpus and most people make zips: data descriptors, Unix modes, UTF-8 names.
    @Test("zips written by bsdtar (deflated and stored, a store with its WAL, UTF-8 names) read the same both ways",
          .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/bsdtar")))
    func bsdtarZips() throws {
        let folder = try TemporaryFolder("zipcd-bsdtar")
        let tree = folder.path("tree")
        try DemoContainer.write(into: tree)
        try FileManager.default.createDirectory(at: tree.appendingPathComponent("Documents/Médias/été"), withIntermediateDirectories: true)
        try Self.random(200_000, seed: 9).write(to: tree.appendingPathComponent("Documents/Médias/été/IMG_0001.jpg"))
        try FileManager.default.copyItem(at: tree.appendingPathComponent("Library/Application Support/Model.sqlite"),
                                         to: tree.appendingPathComponent("Documents/Médias/Cópia.sqlite"))
        for options in [[], ["--options", "zip:compression=store"]] {
            let zip = folder.path("bsdtar\(options.count).zip")
            let p = Process()
            p.executableURL = URL(fileURLWithPath: "/usr/bin/bsdtar")
            p.arguments = ["--format", "zip"] + options + ["-cf", zip.path, "-C", tree.path, "."]
            var environment = ProcessInfo.processInfo.environment
            environment["LC_ALL"] = "C.UTF-8"
            p.environment = environment
            try p.run()
            p.waitUntilExit()
            try #require(p.terminationStatus == 0)
            // libarchive gives UTF-8 names only under a UTF-8 locale, which the storelens executable
            // sets (main.swift) and this test process may not: both readers are compared through it.
            let direct = try CLI.run(["scan", zip.path, "--format", "json"])
            let streamed = try CLI.run(["scan", zip.path, "--format", "json"], environment: ["STORELENS_ZIP": "stream"])
            #expect(direct.status == 0 && streamed.status == 0, "\(direct.stderr)")
            #expect(direct.stdout == streamed.stdout)
            #expect(!direct.stdout.contains("central directory"))
            let inv = try Self.inventory(zip, reader: .centralDirectory)
            #expect(inv.stores.contains { $0.path.hasSuffix("!Documents/Médias/Cópia.sqlite") })
            #expect(inv.stores.first { $0.path.hasSuffix("default.store") }?.sidecars.wal != nil)
        }
    }

    // MARK: Damaged directories

    /// The central directory's file headers: where each starts, its name and local header offset.
    static func directoryRecords(_ bytes: [UInt8]) -> (eocd: Int, records: [(at: Int, name: String, local: Int)]) {
        func le16(_ at: Int) -> Int { Int(bytes[at]) | Int(bytes[at + 1]) << 8 }
        func le32(_ at: Int) -> Int { le16(at) | le16(at + 2) << 16 }
        var eocd = bytes.count - 22
        while eocd > 0, !(bytes[eocd] == 0x50 && bytes[eocd + 1] == 0x4B && bytes[eocd + 2] == 5 && bytes[eocd + 3] == 6) { eocd -= 1 }
        var at = le32(eocd + 16)
        var records: [(Int, String, Int)] = []
        for _ in 0..<le16(eocd + 10) {
            let n = le16(at + 28)
            records.append((at, String(decoding: bytes[(at + 46)..<(at + 46 + n)], as: UTF8.self), le32(at + 42)))
            at += 46 + n + le16(at + 30) + le16(at + 32)
        }
        return (eocd, records)
    }

    static func store32(_ value: Int, into bytes: inout [UInt8], at: Int) {
        for i in 0..<4 { bytes[at + i] = UInt8(truncatingIfNeeded: value >> (8 * i)) }
    }

    @Test("a damaged central directory falls back to reading the local headers, with a note, and finds the same stores",
          arguments: ["end record cut off", "directory cut short", "file header signature broken", "directory offset past the end",
                      "two entries at one local header", "local header names another file", "entry data runs into the next"])
    func damagedDirectory(_ damage: String) throws {
        let folder = try TemporaryFolder("zipcd-damaged")
        let good = folder.path("good.zip")
        let entries = try Self.entries(in: folder).filter {
            // Links and folders come from the central directory only; a local-header read sees files.
            if case .file(let name, _) = $0 { return !name.contains("..") && !name.hasPrefix("/") }
            return false
        }
        try ArchiveMaker.write(entries, to: good, format: .zip)
        var bytes = [UInt8](try Data(contentsOf: good))
        let (eocd, records) = Self.directoryRecords(bytes)
        let store = try #require(records.first { $0.name.hasSuffix("/default.store") })
        let storeIndex = try #require(records.firstIndex { $0.name.hasSuffix("/default.store") })
        switch damage {
        case "end record cut off": bytes.removeLast(22)
        case "directory cut short": bytes.removeSubrange(records[records.count / 2].at..<(bytes.count - 22))
        case "file header signature broken": bytes[records[2].at + 1] = 0x00
        case "directory offset past the end": Self.store32(bytes.count + 1000, into: &bytes, at: eocd + 16)
        case "two entries at one local header": Self.store32(store.local, into: &bytes, at: records[0].at + 42)
        case "local header names another file": bytes[store.local + 30 + 3] ^= 0x20
        case "entry data runs into the next":
            // The store's compressed size, in its directory entry, reaches past the next local header.
            let next = records.map(\.local).filter { $0 > store.local }.min()!
            Self.store32(next - store.local, into: &bytes, at: store.at + 20)
        default: Issue.record("unknown damage \(damage)")
        }
        _ = storeIndex
        let damaged = folder.path("damaged.zip")
        try Data(bytes).write(to: damaged)

        let expected = try Self.inventory(good, reader: .centralDirectory)
        #expect(Self.usedDirectory(expected))
        let inv = try Self.inventory(damaged, reader: .centralDirectory)
        #expect(inv.warnings.first?.hasPrefix("the zip's central directory is damaged") == true, "\(inv.warnings)")
        func stores(_ inv: Inventory) -> [String] {
            inv.stores.map { s in String(s.path.split(separator: "!").last!) + " " + s.sha256.values.sorted().joined(separator: ",") }
        }
        if damage == "local header names another file" {
            // That store's family is now named differently; the others are as they were.
            #expect(stores(inv).filter { !$0.contains("default.store") } == stores(expected).filter { !$0.contains("default.store") })
        } else {
            #expect(stores(inv) == stores(expected))
        }
        #expect(inv.stores.first { $0.path.hasSuffix("Model.sqlite") }?.sha256.isEmpty == false)
    }

    @Test("a zip whose directory is sound but holds what only libarchive reads (an encrypted entry, raw non-UTF-8 names) is streamed with a note")
    func unsupportedEntries() throws {
        let folder = try TemporaryFolder("zipcd-unsupported")
        let container = folder.path("c")
        try DemoContainer.write(into: container)
        let store = try Data(contentsOf: container.appendingPathComponent("Library/Application Support/Model.sqlite"))
        let raw = folder.path("raw.zip")
        try ArchiveMaker.write([.file("a/Model.sqlite", store), .rawNameFile(Array("caf".utf8) + [0xE9] + Array(".db".utf8), store)],
                               to: raw, format: .zip)
        let inv = try Self.inventory(raw, reader: .centralDirectory)
        #expect(inv.warnings.first?.hasPrefix("the zip was read entry by entry") == true, "\(inv.warnings)")
        #expect(Set(inv.stores.map { String($0.path.split(separator: "!").last!) }) == ["a/Model.sqlite", "caf%E9.db"])

        let encrypted = folder.path("encrypted.zip")
        try ArchiveMaker.write([.file("secret/Model.sqlite", store)], to: encrypted, format: .zip, passphrase: "hunter2")
        let enc = try Self.inventory(encrypted, reader: .centralDirectory)
        #expect(enc.warnings.first?.contains("encrypted") == true)
        #expect(enc.warnings.contains { $0.contains("secret/Model.sqlite") && $0.contains("encrypted entry; skipped") })
        #expect(enc.stores.isEmpty)
    }

    @Test("a store entry whose bytes fail their CRC-32 is extracted and reported, the same way by both readers")
    func crcMismatch() throws {
        let folder = try TemporaryFolder("zipcd-crc")
        let container = folder.path("c")
        try DemoContainer.write(into: container)
        let good = folder.path("good.zip")
        try ArchiveMaker.write(try ArchiveMaker.entries(of: container), to: good, format: .zip, zipStored: true)
        var bytes = [UInt8](try Data(contentsOf: good))
        let store = try #require(Self.directoryRecords(bytes).records.first { $0.name.hasSuffix("/default.store") })
        let dataStart = store.local + 30 + (Int(bytes[store.local + 26]) | Int(bytes[store.local + 27]) << 8)
            + (Int(bytes[store.local + 28]) | Int(bytes[store.local + 29]) << 8)
        bytes[dataStart + 3000] ^= 0xFF
        let bad = folder.path("bad-crc.zip")
        try Data(bytes).write(to: bad)
        try Self.expectSame(bad)
        let inv = try Self.inventory(bad, reader: .centralDirectory)
        let warning = try #require(inv.warnings.first { $0.contains("CRC") })
        #expect(warning.hasPrefix("Library/Application Support/default.store: ZIP bad CRC: 0x"))
        #expect(warning.contains("damaged"))
        #expect(inv.stores.contains { $0.path.hasSuffix("default.store") }, "the store is still listed, with the hash of what was extracted")
    }

    @Test("bombs and limits are enforced on the directory path: ratio, entry size, a size the directory understates, entry count")
    func bombs() throws {
        let folder = try TemporaryFolder("zipcd-bomb")
        let bomb = folder.path("bomb.zip")
        var zeros = Data("SQLite format 3\0".utf8)
        zeros.append(Data(repeating: 0, count: 100 << 20))
        try ArchiveMaker.write([.file("media/a.jpg", Self.random(1000, seed: 5)), .file("bomb.sqlite", zeros)], to: bomb, format: .zip)
        zeros = Data()
        var limits = ArchiveLimits()
        limits.maxCompressionRatio = 100
        let ratio = try #require(throws: ArchiveError.self) { _ = try Self.inventory(bomb, reader: .centralDirectory, limits: limits) }
        guard case .bomb(_, let entry, let detail) = ratio else { Issue.record("not a bomb: \(ratio)"); return }
        #expect(entry == "bomb.sqlite" && detail.contains("--max-ratio"))

        var small = ArchiveLimits()
        small.maxEntryBytes = 1 << 20
        let size = try #require(throws: ArchiveError.self) { _ = try Self.inventory(bomb, reader: .centralDirectory, limits: small) }
        guard case .bomb(_, _, let sizeDetail) = size else { Issue.record("not a bomb: \(size)"); return }
        #expect(sizeDetail.contains("--max-entry-bytes"))

        // The directory (and the local header) say 1,000 bytes; the data inflates to 100 MB.
        var bytes = [UInt8](try Data(contentsOf: bomb))
        let record = try #require(Self.directoryRecords(bytes).records.first { $0.name == "bomb.sqlite" })
        Self.store32(1000, into: &bytes, at: record.at + 24)
        if bytes[record.local + 22..<record.local + 26] != [0, 0, 0, 0] { Self.store32(1000, into: &bytes, at: record.local + 22) }
        let liar = folder.path("liar.zip")
        try Data(bytes).write(to: liar)
        let lied = try #require(throws: ArchiveError.self) { _ = try Self.inventory(liar, reader: .centralDirectory, limits: limits) }
        guard case .bomb = lied else { Issue.record("not a bomb: \(lied)"); return }

        var few = ArchiveLimits()
        few.maxEntries = 1
        let many = try #require(throws: ArchiveError.self) { _ = try Self.inventory(bomb, reader: .centralDirectory, limits: few) }
        #expect(many == .tooManyEntries(path: bomb.path, limit: 1))
    }

    @Test("the end records parse: a comment after the end record, ZIP64 locator, bounds")
    func endRecords() throws {
        var record: [UInt8] = [0x50, 0x4B, 0x05, 0x06, 0, 0, 0, 0, 2, 0, 2, 0, 100, 0, 0, 0, 10, 0, 0, 0, 3, 0]
        record += Array("abc".utf8)
        let prefix = [UInt8](repeating: 0, count: 110)
        let end = try ZipDirectory.classicEnd(tail: prefix + record, fileSize: Int64(prefix.count + record.count))
        #expect(end.end.entryCount == 2 && end.end.directoryOffset == 10 && end.end.directorySize == 100 && end.zip64RecordOffset == nil)
        // A comment length that does not reach the end of the file: not a record.
        var wrong = record
        wrong[20] = 9
        #expect(throws: ZipDirectory.Problem.self) { _ = try ZipDirectory.classicEnd(tail: prefix + wrong, fileSize: Int64(prefix.count + wrong.count)) }
        // A directory that would end past the record.
        var past = record
        past[16] = 200
        #expect(throws: ZipDirectory.Problem.self) { _ = try ZipDirectory.classicEnd(tail: prefix + past, fileSize: Int64(prefix.count + past.count)) }
        // More entries than the directory's bytes can hold.
        var crowded = record
        crowded[8] = 9
        crowded[10] = 9
        #expect(throws: ZipDirectory.Problem.self) { _ = try ZipDirectory.classicEnd(tail: prefix + crowded, fileSize: Int64(prefix.count + crowded.count)) }
        // Several disks.
        var disks = record
        disks[4] = 1
        #expect(throws: ZipDirectory.Problem.self) { _ = try ZipDirectory.classicEnd(tail: prefix + disks, fileSize: Int64(prefix.count + disks.count)) }
        // Saturated fields without a ZIP64 locator.
        var saturated = record
        for i in 16..<20 { saturated[i] = 0xFF }
        #expect(throws: ZipDirectory.Problem.self) { _ = try ZipDirectory.classicEnd(tail: prefix + saturated, fileSize: Int64(prefix.count + saturated.count)) }
        // A file header whose name runs past the directory.
        var header: [UInt8] = [0x50, 0x4B, 0x01, 0x02] + [UInt8](repeating: 0, count: 42)
        header[28] = 200
        let one = ZipDirectory.End(entryCount: 1, directoryOffset: 1000, directorySize: Int64(header.count), recordsOffset: 1046, isZip64: false)
        #expect(throws: ZipDirectory.Problem.self) { _ = try ZipDirectory.entries(header, end: one, fileSize: 1068) }
        // A local header offset at the directory itself.
        header[28] = 0
        ZipDirectoryTests.store32(1000, into: &header, at: 42)
        #expect(throws: ZipDirectory.Problem.self) { _ = try ZipDirectory.entries(header, end: one, fileSize: 1068) }
    }
}
