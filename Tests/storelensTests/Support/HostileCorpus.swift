import Deflate
import Foundation
import SQLiteAccess
import StoreBuilder
import StoreFormats
import StoreTestSupport

/// The hostile-input corpus: broken and malicious versions of everything storelens
/// reads — SQLite headers, truncated databases, WALs damaged in every way
/// shared/reference/sqlite-wal-and-safe-open.md §2.3–2.4 lists, `-shm` garbage, metadata plists and
/// model caches that are corrupt, cyclic, deeply nested or huge, hostile entity and table names,
/// views and triggers that call functions, archives with traversal, link tricks, bombs, duplicate
/// and non-UTF-8 names, and backups with broken Manifest.db rows.
///
/// Nothing is committed: every item is generated, deterministically, into its own folder by the
/// store builder and libarchive. `HostileCorpusTests` runs every command on every item; set
/// STORELENS_HOSTILE_CORPUS_OUT=<folder> to also write the whole corpus there for manual use.
enum HostileCorpus {
    /// What every command must do with an item, beyond the rules that hold for all of them (exit
    /// 0, 1 or 2; a one-line error naming the input; no crash, hang, stray file or changed input).
    enum Expectation: Sendable {
        /// Exit 2 or a normal result, depending on the command.
        case any
        /// Nothing in it is readable: every command exits 2.
        case rejected
    }

    struct Item: Sendable, CustomStringConvertible {
        let name: String
        let expectation: Expectation
        /// The manifest `audit` and `report` get instead of `BoundedRun.todoManifest`.
        var manifest: String?
        /// Makes the input inside `folder` (which then holds nothing else) using `work` for
        /// intermediate files; returns the path to give the commands.
        let make: @Sendable (_ folder: URL, _ work: URL) throws -> URL
        var description: String { name }

        init(_ name: String, _ expectation: Expectation = .any, _ make: @escaping @Sendable (_ folder: URL, _ work: URL) throws -> URL) {
            self.name = name
            self.expectation = expectation
            self.make = make
        }
    }

    /// Files the corpus tries to make libarchive or storelens write outside the scratch folder;
    /// the test checks they never appear.
    static let escapeTargets = [
        "/tmp/storelens-hostile-absolute.store",
        "/tmp/storelens-hostile-through-symlink.store",
        "/tmp/storelens-hostile-hardlink.store",
    ]

    static var items: [Item] {
        headers + truncations + wals + sharedMemory + metadata + modelCaches + names + keys + schemaCode
            + archives + backups + containers + unboundedWork
    }

    // MARK: - Unbounded work from small inputs, output that attacks its reader

    static let unboundedWork: [Item] = [
        // 64 MiB logical, a few KB on disk (the dedicated test uses 1 GiB): only the bytes a -shm
        // can hold for the WAL's frames are read.
        Item("shm: a 64 MiB sparse -shm") { folder, work in
            let url = try moved(try store(in: work), into: folder)
            guard truncate(url.path + "-shm", 64 << 20) == 0 else { throw CocoaError(.fileWriteUnknown) }
            return url
        },
        Item("archive: a tar with a 7 GiB sparse store") { folder, work in
            let container = work.appendingPathComponent("c/Library/Application Support")
            let url = try store(in: container)
            guard truncate(url.path, 7 << 30) == 0 else { throw CocoaError(.fileWriteUnknown) }
            let tar = folder.appendingPathComponent("sparse.tar")
            // bsdtar stores the file's holes as holes (a pax sparse entry): 7 GiB in a few KB.
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["bsdtar", "-cf", tar.path, "-C", work.appendingPathComponent("c").path, "Library"]
            try process.run()
            process.waitUntilExit()
            guard process.terminationStatus == 0 else { throw CocoaError(.fileWriteUnknown) }
            return tar
        },
        { () -> Item in
            var item = Item("manifest: a store pattern of **/ repeated 300 times") { folder, work in
                try moved(try store(in: work), into: folder)
            }
            item.manifest = BoundedRun.todoManifest.replacingOccurrences(of: "\"**/*.store\"", with: "\"" + String(repeating: "**/", count: 300) + "*.store\"")
            return item
        }(),
        Item("values: formulas, bidi overrides and controls in cells and names") { folder, work in
            try moved(try store(in: work) { w in
                try w.executeRaw("UPDATE ZTODOITEM SET ZTITLE = CASE Z_PK % 5 WHEN 0 THEN '=HYPERLINK(\"http://evil.example\",\"x\")' WHEN 1 THEN '@SUM(A1)' WHEN 2 THEN '-1+cmd|'' /C calc''!A0' WHEN 3 THEN 'evil' || char(0x202E) || 'txt.exe' ELSE char(9) || '=1+1' || char(0x9B) END")
                try w.executeRaw("UPDATE ZTODOLIST SET ZNAME = '+1|2|' || char(0x2066)")
            }, into: folder)
        },
    ]

    // MARK: - The base store

    static let epoch = Date(timeIntervalSinceReferenceDate: 700_000_000)
    static let app = StoreWriter.Writer(author: "app", bundleID: "com.example.todo", processName: "Todo", contextName: "main")
    static let storeUUID = UUID(uuidString: "5EED0000-0000-4000-8000-000000000009")!

    static func id(_ n: Int) -> UUID { UUID(uuidString: String(format: "00000000-0000-4000-8000-%012d", n))! }

    static func item(_ i: Int, list: Int) -> [String: BuilderValue] {
        ["id": .uuid(id(i)), "title": .string("task \(i)"), "isCompleted": .bool(i % 2 == 0),
         "createdAt": .date(epoch.addingTimeInterval(Double(i))), "list": .object(entity: "TodoList", pk: list)]
    }

    /// A small SwiftData-style to-do store: one list and 20 items checkpointed into the main file,
    /// then `walCommits` more commits that live only in the `-wal` (and its `-shm`). `extra` runs
    /// on the writer before the checkpoint, to plant whatever the item needs.
    @discardableResult
    static func store(in folder: URL, name: String = "default.store", journal: StoreWriter.Options.JournalMode = .wal,
                      walCommits: Int = 3, _ extra: ((StoreWriter) throws -> Void)? = nil) throws -> URL {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let url = folder.appendingPathComponent(name)
        let writer = try StoreWriter(url: url, model: SampleModels.todo, options: .init(journalMode: journal, uuid: storeUUID))
        try writer.transaction(app, at: epoch) { w in
            let list = try w.insert("TodoList", ["name": .string("Home")])
            for i in 1...20 { try w.insert("TodoItem", item(i, list: list)) }
        }
        try extra?(writer)
        try writer.checkpoint()
        for c in 0..<(journal == .wal ? walCommits : 0) {
            try writer.transaction(app, at: epoch.addingTimeInterval(Double(1000 + c))) { w in
                try w.insert("TodoItem", item(100 + c, list: 1))
            }
        }
        try writer.close(leavingWAL: journal == .wal)
        return url
    }

    /// A store built in `work`, moved into `folder` with its sidecars (so `folder` holds only the input).
    static func moved(_ url: URL, into folder: URL, name: String? = nil) throws -> URL {
        let target = folder.appendingPathComponent(name ?? url.lastPathComponent)
        for suffix in ["", "-wal", "-shm", "-journal"] {
            let from = URL(fileURLWithPath: url.path + suffix)
            if FileManager.default.fileExists(atPath: from.path) {
                try FileManager.default.moveItem(at: from, to: URL(fileURLWithPath: target.path + suffix))
            }
        }
        return target
    }

    static func edit(_ url: URL, _ body: (inout [UInt8]) throws -> Void) throws {
        var bytes = [UInt8](try Data(contentsOf: url))
        try body(&bytes)
        try Data(bytes).write(to: url)
    }

    static func put32(_ value: UInt32, at offset: Int, in bytes: inout [UInt8]) {
        for i in 0..<4 { bytes[offset + i] = UInt8(truncatingIfNeeded: value >> (24 - 8 * UInt32(i))) }
    }

    static func get32(_ offset: Int, _ bytes: [UInt8]) -> UInt32 {
        (0..<4).reduce(0) { $0 << 8 | UInt32(bytes[offset + $1]) }
    }

    /// Deterministic pseudo-random bytes.
    static func noise(_ count: Int, seed: UInt64) -> Data {
        var state = seed &* 6364136223846793005 &+ 1442695040888963407
        return Data(PseudoRandomBytes.next(count, state: &state))
    }

    // MARK: - SQLite headers

    static let headers: [Item] = [
        Item("header: not SQLite", .rejected) { folder, _ in
            let url = folder.appendingPathComponent("default.store")
            try Data("This is not a database, although it is long enough to have a header. ".utf8 + noise(4000, seed: 1)).write(to: url)
            return url
        },
        Item("header: page size 3") { folder, work in
            let url = try moved(try store(in: work), into: folder)
            try edit(url) { $0[16] = 0; $0[17] = 3 }
            return url
        },
        Item("header: page size 1024 over 4096-byte pages") { folder, work in
            let url = try moved(try store(in: work), into: folder)
            try edit(url) { $0[16] = 0x04; $0[17] = 0x00 }
            return url
        },
        Item("header: page size 65536 (1) over 4096-byte pages") { folder, work in
            let url = try moved(try store(in: work), into: folder)
            try edit(url) { $0[16] = 0; $0[17] = 1 }
            return url
        },
        Item("header: database size 0xFFFFFFFF pages") { folder, work in
            let url = try moved(try store(in: work), into: folder)
            try edit(url) { put32(0xFFFF_FFFF, at: 28, in: &$0) }
            return url
        },
        Item("header: read and write versions 9") { folder, work in
            let url = try moved(try store(in: work), into: folder)
            try edit(url) { $0[18] = 9; $0[19] = 9 }
            return url
        },
        Item("header: 255 reserved bytes per page") { folder, work in
            let url = try moved(try store(in: work), into: folder)
            try edit(url) { $0[20] = 255 }
            return url
        },
        Item("header: schema format 99, text encoding 7") { folder, work in
            let url = try moved(try store(in: work), into: folder)
            try edit(url) { put32(99, at: 44, in: &$0); put32(7, at: 56, in: &$0) }
            return url
        },
        Item("header: freelist trunk past the end of the file") { folder, work in
            let url = try moved(try store(in: work), into: folder)
            try edit(url) { put32(0x7FFF_FFF0, at: 32, in: &$0); put32(12, at: 36, in: &$0) }
            return url
        },
        Item("header: page 1 b-tree header overwritten") { folder, work in
            let url = try moved(try store(in: work, journal: .delete), into: folder)
            try edit(url) { for i in 100..<4096 { $0[i] = UInt8(truncatingIfNeeded: i &* 131) } }
            return url
        },
        Item("header: good header, every other page noise") { folder, work in
            let url = try moved(try store(in: work, journal: .delete), into: folder)
            try edit(url) { bytes in
                let n = noise(bytes.count, seed: 7)
                for page in stride(from: 4096, to: bytes.count, by: 8192) {
                    for i in page..<min(page + 4096, bytes.count) { bytes[i] = n[i] }
                }
            }
            return url
        },
    ]

    // MARK: - Truncated databases

    static let truncations: [Item] = [
        Item("truncated: empty file", .rejected) { folder, _ in
            let url = folder.appendingPathComponent("default.store")
            try Data().write(to: url)
            return url
        },
        Item("truncated: 50 bytes of the header", .rejected) { folder, work in
            let url = try moved(try store(in: work, journal: .delete), into: folder)
            try edit(url) { $0 = Array($0.prefix(50)) }
            return url
        },
        Item("truncated: the 100-byte header alone") { folder, work in
            let url = try moved(try store(in: work, journal: .delete), into: folder)
            try edit(url) { $0 = Array($0.prefix(100)) }
            return url
        },
        Item("truncated: half the file") { folder, work in
            let url = try moved(try store(in: work, journal: .delete), into: folder)
            try edit(url) { $0 = Array($0.prefix($0.count / 2)) }
            return url
        },
        Item("truncated: in the middle of a page, with its WAL") { folder, work in
            let url = try moved(try store(in: work), into: folder)
            try edit(url) { $0 = Array($0.prefix(4096 * 5 + 1000)) }
            return url
        },
        Item("truncated: main file empty, everything in the WAL") { folder, work in
            let url = try moved(try store(in: work), into: folder)
            try Data().write(to: url)
            return url
        },
    ]

    // MARK: - WALs (reference §2.3 d1–d8, §2.4 e1–e4, and more)

    /// A WAL store whose `-wal` is edited; `recompute` re-signs every checksum afterwards so the
    /// damage is exactly the edit (SQLite then judges the content, not the checksum).
    static func walItem(_ name: String, recompute: Bool = false, _ body: @escaping @Sendable (inout [UInt8]) throws -> Void) -> Item {
        Item("wal: " + name) { folder, work in
            let url = try moved(try store(in: work, walCommits: 4), into: folder)
            try edit(URL(fileURLWithPath: url.path + "-wal")) { bytes in
                try body(&bytes)
                if recompute { WALSigner.sign(&bytes) }
            }
            return url
        }
    }

    static let frameSize = 24 + 4096
    static func frameOffset(_ frame: Int) -> Int { 32 + (frame - 1) * frameSize }

    static let wals: [Item] = [
        walItem("d1 salt of frame 3 altered") { $0[frameOffset(3) + 8] ^= 0xFF },
        walItem("d2 header salt altered, header checksum now wrong") { $0[16] ^= 0x01 },
        walItem("d3 header salt altered, header checksum fixed") { bytes in
            bytes[16] ^= 0x01
            WALSigner.signHeader(&bytes)
        },
        walItem("d4 truncated 1000 bytes into the last frame") { $0 = Array($0.prefix($0.count - frameSize + 1000)) },
        walItem("d5 one page byte flipped in frame 3") { $0[frameOffset(3) + 24 + 500] ^= 0x5A },
        walItem("d6 shorter than its 32-byte header") { $0 = Array($0.prefix(20)) },
        walItem("d7 zero length") { $0 = [] },
        walItem("bad magic") { put32(0xDEAD_BEEF, at: 0, in: &$0) },
        walItem("format version 3007001, checksums fixed", recompute: true) { put32(3_007_001, at: 4, in: &$0) },
        walItem("page size 3 in the header, checksum fixed", recompute: true) { put32(3, at: 8, in: &$0) },
        walItem("frame 2 for page 0, checksums fixed", recompute: true) { put32(0, at: frameOffset(2), in: &$0) },
        walItem("frames for page 0xFFFFFFFF, checksums fixed", recompute: true) { put32(0xFFFF_FFFF, at: frameOffset(1), in: &$0) },
        walItem("commit frame claims 0x7FFFFFFF pages, checksums fixed", recompute: true) { bytes in
            let frames = (bytes.count - 32) / frameSize
            for f in 1...frames where get32(frameOffset(f) + 4, bytes) != 0 { put32(0x7FFF_FFFF, at: frameOffset(f) + 4, in: &bytes) }
        },
        walItem("commit frame claims 1 page, checksums fixed", recompute: true) { bytes in
            let frames = (bytes.count - 32) / frameSize
            for f in 1...frames where get32(frameOffset(f) + 4, bytes) != 0 { put32(1, at: frameOffset(f) + 4, in: &bytes) }
        },
        walItem("no commit frame at all, checksums fixed", recompute: true) { bytes in
            let frames = (bytes.count - 32) / frameSize
            for f in 1...frames { put32(0, at: frameOffset(f) + 4, in: &bytes) }
        },
        walItem("every page of every frame is noise, checksums fixed", recompute: true) { bytes in
            let n = noise(bytes.count, seed: 11)
            let frames = (bytes.count - 32) / frameSize
            for f in 1...frames { for i in (frameOffset(f) + 24)..<(frameOffset(f) + frameSize) { bytes[i] = n[i] } }
        },
        walItem("100 KB of noise") { $0 = [UInt8](noise(100_000, seed: 3)) },
        Item("wal: e1 an unrelated WAL with the same page size") { folder, work in
            let url = try moved(try store(in: work), into: folder)
            let other = work.appendingPathComponent("other")
            let db = try Connection.open(path: other.path, mode: .create)
            try db.execute("PRAGMA page_size = 4096; PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0; CREATE TABLE t (x); INSERT INTO t VALUES (randomblob(10000));")
            try db.disableCheckpointOnClose()
            let wal = try Data(contentsOf: URL(fileURLWithPath: other.path + "-wal"))
            try wal.write(to: URL(fileURLWithPath: url.path + "-wal"))
            return url
        },
        Item("wal: e4 another Core Data store's -wal (its own UUID, never checkpointed)") { folder, work in
            let url = try moved(try store(in: work), into: folder)
            let other = work.appendingPathComponent("other.store")
            let writer = try StoreWriter(url: other, model: SampleModels.todo, options: .init(journalMode: .wal))
            try writer.transaction(app, at: epoch) { w in _ = try w.insert("TodoList", ["name": .string("Elsewhere")]) }
            try writer.close(leavingWAL: true)
            try FileManager.default.removeItem(atPath: url.path + "-wal")
            try FileManager.default.copyItem(atPath: other.path + "-wal", toPath: url.path + "-wal")
            return url
        },
        Item("wal: e2 an older main file with a newer WAL") { folder, work in
            let early = try store(in: work.appendingPathComponent("early"), walCommits: 0)
            let url = try moved(try store(in: work.appendingPathComponent("late")) { w in
                for i in 200..<260 { try w.transaction(app, at: epoch) { try $0.insert("TodoItem", item(i, list: 1)) } }
            }, into: folder)
            try FileManager.default.removeItem(at: url)
            try FileManager.default.copyItem(at: early, to: url)
            return url
        },
        Item("wal: e3 a WAL with 1024-byte pages beside 4096-byte pages") { folder, work in
            let url = try moved(try store(in: work), into: folder)
            let other = work.appendingPathComponent("small-pages")
            let db = try Connection.open(path: other.path, mode: .create)
            try db.execute("PRAGMA page_size = 1024; PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0; CREATE TABLE t (x); INSERT INTO t VALUES (1);")
            try db.disableCheckpointOnClose()
            try Data(contentsOf: URL(fileURLWithPath: other.path + "-wal")).write(to: URL(fileURLWithPath: url.path + "-wal"))
            try? FileManager.default.removeItem(atPath: url.path + "-shm")
            return url
        },
        Item("wal: e4 main header says rollback journal, a WAL beside it") { folder, work in
            let url = try moved(try store(in: work), into: folder)
            try edit(url) { $0[18] = 1; $0[19] = 1 }
            return url
        },
        Item("wal: a -wal that is a folder") { folder, work in
            let url = try moved(try store(in: work), into: folder)
            try FileManager.default.removeItem(atPath: url.path + "-wal")
            try FileManager.default.createDirectory(atPath: url.path + "-wal", withIntermediateDirectories: false)
            return url
        },
        Item("wal: a -wal that is a FIFO") { folder, work in
            let url = try moved(try store(in: work), into: folder)
            try FileManager.default.removeItem(atPath: url.path + "-wal")
            try expectFIFOResult(mkfifo(url.path + "-wal", 0o644))
            return url
        },
        Item("wal: a -wal that is a symlink to /dev/zero") { folder, work in
            let url = try moved(try store(in: work), into: folder)
            try FileManager.default.removeItem(atPath: url.path + "-wal")
            try FileManager.default.createSymbolicLink(atPath: url.path + "-wal", withDestinationPath: "/dev/zero")
            return url
        },
    ]

    // MARK: - -shm

    static func shmItem(_ name: String, _ body: @escaping @Sendable (inout [UInt8]) -> Void) -> Item {
        Item("shm: " + name) { folder, work in
            let url = try moved(try store(in: work), into: folder)
            let shm = URL(fileURLWithPath: url.path + "-shm")
            if !FileManager.default.fileExists(atPath: shm.path) { try Data(count: 32768).write(to: shm) }
            try edit(shm, body)
            return url
        }
    }

    static let sharedMemory: [Item] = [
        shmItem("32 KB of noise") { $0 = [UInt8](noise(32768, seed: 5)) },
        shmItem("10 bytes") { $0 = Array($0.prefix(10)) },
        shmItem("zero length") { $0 = [] },
        shmItem("mxFrame 0xFFFFFFFF, nBackfill past it") { bytes in
            for copy in [0, 48] { for i in 16..<20 { bytes[copy + i] = 0xFF } }
            for i in 96..<100 { bytes[i] = 0xFE }
        },
        shmItem("page size 1 and a torn second copy") { bytes in
            bytes[14] = 1; bytes[15] = 0
            bytes[48 + 14] = 0x77
        },
        Item("shm: a -shm that is a symlink to /dev/zero") { folder, work in
            let url = try moved(try store(in: work), into: folder)
            try? FileManager.default.removeItem(atPath: url.path + "-shm")
            try FileManager.default.createSymbolicLink(atPath: url.path + "-shm", withDestinationPath: "/dev/zero")
            return url
        },
    ]

    // MARK: - Z_METADATA plists

    static func metadataItem(_ name: String, _ plist: @escaping @Sendable () throws -> DatabaseValue) -> Item {
        Item("metadata: " + name) { folder, work in
            try moved(try store(in: work) { w in
                try w.executeRaw("UPDATE Z_METADATA SET Z_PLIST = ?", [try plist()])
            }, into: folder)
        }
    }

    static let metadata: [Item] = [
        metadataItem("bplist00 then garbage") { .blob(Data("bplist00".utf8) + noise(600, seed: 9)) },
        metadataItem("not a plist") { .blob(Data("hello, world".utf8)) },
        metadataItem("NULL") { .null },
        metadataItem("an empty blob") { .blob(Data()) },
        metadataItem("text instead of a blob") { .text("bplist00") },
        metadataItem("cyclic: an array that holds itself") { .blob(Bplist.cyclic()) },
        metadataItem("10,000 nested arrays") { .blob(Bplist.nested(10_000)) },
        metadataItem("billion laughs: 10 arrays of 10, nine deep") { .blob(Bplist.laughs(depth: 9, width: 10)) },
        metadataItem("huge: 300,000 strings") { .blob(Bplist.huge(300_000)) },
        metadataItem("every field of the wrong type") {
            .blob(BinaryPlistWriter.encode(.dictionary([
                "NSStoreType": .array([.integer(1)]), "NSStoreUUID": .integer(7),
                "NSStoreModelVersionIdentifiers": .string("1.0.0"), "NSStoreModelVersionHashes": .array([.string("x")]),
                "NSPersistenceFrameworkVersion": .string("many"), "NSStoreModelVersionHashesVersion": .data(Data([1, 2])),
            ])))
        },
        Item("metadata: no Z_METADATA row") { folder, work in
            try moved(try store(in: work) { try $0.executeRaw("DELETE FROM Z_METADATA") }, into: folder)
        },
        Item("metadata: two Z_METADATA rows that disagree") { folder, work in
            try moved(try store(in: work) { w in
                try w.executeRaw("INSERT INTO Z_METADATA (Z_VERSION, Z_UUID, Z_PLIST) VALUES (2, 'not-a-uuid', x'00')")
            }, into: folder)
        },
        Item("metadata: no Z_METADATA table") { folder, work in
            try moved(try store(in: work) { try $0.executeRaw("DROP TABLE Z_METADATA") }, into: folder)
        },
    ]

    // MARK: - Z_MODELCACHE blobs

    static func modelCacheItem(_ name: String, _ blob: @escaping @Sendable () throws -> DatabaseValue) -> Item {
        Item("model cache: " + name) { folder, work in
            try moved(try store(in: work) { w in
                try w.executeRaw("UPDATE Z_MODELCACHE SET Z_CONTENT = ?", [try blob()])
            }, into: folder)
        }
    }

    /// The builder's own model cache, inflated, edited as a plist, and deflated again.
    static func editedModelCache(_ edit: @escaping @Sendable (inout [PlistValue]) -> Void) -> Item {
        Item("model cache: an entity that is its own superentity, and a relationship to nowhere") { folder, work in
            try moved(try store(in: work) { w in
                let copy = work.appendingPathComponent("cache-source")
                try? FileManager.default.removeItem(at: copy)
                _ = try store(in: copy, walCommits: 0)
                let db = try Connection.open(path: copy.appendingPathComponent("default.store").path, mode: .readOnly)
                guard case .blob(let blob) = try db.scalar("SELECT Z_CONTENT FROM Z_MODELCACHE") else { return }
                guard case .dictionary(var root) = try BinaryPlist.decode(try RawDeflate.inflate(blob, maxOutputBytes: 1 << 24)),
                      case .array(var objects) = root["$objects"] else { return }
                edit(&objects)
                root["$objects"] = .array(objects)
                try w.executeRaw("UPDATE Z_MODELCACHE SET Z_CONTENT = ?", [.blob(try RawDeflate.deflate(BinaryPlistWriter.encode(.dictionary(root))))])
            }, into: folder)
        }
    }

    static let modelCaches: [Item] = [
        modelCacheItem("garbage") { .blob(noise(3000, seed: 13)) },
        modelCacheItem("truncated DEFLATE") { .blob(try RawDeflate.deflate(noise(5000, seed: 2)).prefix(1000)) },
        modelCacheItem("DEFLATE bomb: 80 MB of zeros") { .blob(try RawDeflate.deflate(Data(count: 80 << 20), level: 9)) },
        modelCacheItem("DEFLATE of text") { .blob(try RawDeflate.deflate(Data("not a model".utf8))) },
        modelCacheItem("a plain plist, not a keyed archive") {
            .blob(try RawDeflate.deflate(BinaryPlistWriter.encode(.dictionary(["a": .integer(1)]))))
        },
        modelCacheItem("cyclic plist") { .blob(try RawDeflate.deflate(Bplist.cyclic())) },
        modelCacheItem("10,000 nested arrays") { .blob(try RawDeflate.deflate(Bplist.nested(10_000))) },
        modelCacheItem("billion laughs") { .blob(try RawDeflate.deflate(Bplist.laughs(depth: 9, width: 10))) },
        modelCacheItem("a keyed archive whose bare UID points at itself (found by fuzzing)") {
            .blob(try RawDeflate.deflate(BinaryPlistWriter.encode(.dictionary([
                "$archiver": .string("NSKeyedArchiver"), "$version": .integer(100_000),
                "$top": .dictionary(["root": .uid(1)]), "$objects": .array([.string("$null"), .uid(1)]),
            ]))))
        },
        modelCacheItem("text instead of a blob") { .text("model") },
        editedModelCache { objects in
            for (i, object) in objects.enumerated() {
                guard case .dictionary(var fields) = object else { continue }
                if fields["NSEntityName"] != nil { fields["NSSuperentity"] = .uid(UInt64(i)) }
                if fields["NSDestinationEntityName"] != nil || fields["NSInverseRelationship"] != nil {
                    fields["NSDestinationEntityName"] = .string("Nowhere")
                    fields["NSInverseRelationship"] = .uid(UInt64(objects.count + 50))
                }
                objects[i] = .dictionary(fields)
            }
        },
    ]

    // MARK: - Entity and table names

    /// A store with `body` run on it; with `last`, `body` runs after everything else (no WAL
    /// commits follow it: the builder's own writes would trip what it plants).
    static func namesItem(_ name: String, last: Bool = false, _ body: @escaping @Sendable (StoreWriter) throws -> Void) -> Item {
        Item("names: " + name) { folder, work in try moved(try store(in: work, walCommits: last ? 0 : 3, body), into: folder) }
    }

    /// An extra entity `name` with table `table` and two rows (an entity the cached model does not know).
    static func plantEntity(_ w: StoreWriter, number: Int = 9, name: String, table: String, superNumber: Int = 0) throws {
        let quoted = "\"" + table.replacingOccurrences(of: "\"", with: "\"\"") + "\""
        try w.executeRaw("CREATE TABLE \(quoted) (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZNAME VARCHAR)")
        try w.executeRaw("INSERT INTO Z_PRIMARYKEY (Z_ENT, Z_NAME, Z_SUPER, Z_MAX) VALUES (?, ?, ?, 2)",
                         [.integer(Int64(number)), .text(name), .integer(Int64(superNumber))])
        try w.executeRaw("INSERT INTO \(quoted) VALUES (1, ?, 1, 'a'), (2, ?, 1, 'b')", [.integer(Int64(number)), .integer(Int64(number))])
    }

    static let names: [Item] = [
        namesItem("quotes and semicolons") { w in
            try plantEntity(w, name: #"Evil"Name'; DROP TABLE Z_METADATA; --"#, table: #"ZEVIL"NAME'; DROP TABLE Z_METADATA; --"#)
        },
        namesItem("a NUL byte in the entity name") { w in
            try w.executeRaw("CREATE TABLE ZNULNAME (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER)")
            try w.executeRaw("INSERT INTO Z_PRIMARYKEY (Z_ENT, Z_NAME, Z_SUPER, Z_MAX) VALUES (9, CAST(x'4E756C004E616D65' AS TEXT), 0, 1)")
            try w.executeRaw("INSERT INTO ZNULNAME VALUES (1, 9, 1)")
        },
        namesItem("10,000-character entity and table names") { w in
            try plantEntity(w, name: String(repeating: "Long", count: 2_500), table: "Z" + String(repeating: "LONG", count: 2_500))
        },
        namesItem("newlines and terminal escapes in names") { w in
            try plantEntity(w, name: "Line\nBreak\u{1B}[31mRED\u{1B}[0m\r", table: "ZLINE\nBREAK\u{1B}[2J")
        },
        namesItem("column names with quotes, a row value with a NUL") { w in
            try w.executeRaw(#"ALTER TABLE ZTODOITEM ADD COLUMN "Z""; DROP TABLE X; --" VARCHAR"#)
            try w.executeRaw("UPDATE ZTODOITEM SET ZTITLE = CAST(x'61620063' AS TEXT) WHERE Z_PK = 1")
        },
        namesItem("entities that are each other's superentity") { w in
            try w.executeRaw("UPDATE Z_PRIMARYKEY SET Z_SUPER = 2 WHERE Z_ENT = 1")
            try w.executeRaw("UPDATE Z_PRIMARYKEY SET Z_SUPER = 1 WHERE Z_ENT = 2")
        },
        namesItem("an entity that is its own superentity") { w in
            try w.executeRaw("UPDATE Z_PRIMARYKEY SET Z_SUPER = Z_ENT WHERE Z_ENT = 1")
        },
        namesItem("Z_ENT 2^63-1, negative Z_MAX, Z_ENT that is text") { w in
            try w.executeRaw("UPDATE Z_PRIMARYKEY SET Z_MAX = -5 WHERE Z_ENT = 1")
            try w.executeRaw("INSERT INTO Z_PRIMARYKEY (Z_ENT, Z_NAME, Z_SUPER, Z_MAX) VALUES (9223372036854775807, 'Max', 0, 0)")
            try w.executeRaw("UPDATE ZTODOITEM SET Z_ENT = 'two' WHERE Z_PK = 3")
        },
        namesItem("an entity whose table does not exist, 2,000 of them") { w in
            try w.executeRaw("WITH RECURSIVE n(x) AS (SELECT 100 UNION ALL SELECT x + 1 FROM n WHERE x < 2099) INSERT INTO Z_PRIMARYKEY (Z_ENT, Z_NAME, Z_SUPER, Z_MAX) SELECT x, 'Ghost' || x, 0, 0 FROM n")
        },
        namesItem("no Z_PRIMARYKEY table", last: true) { w in try w.executeRaw("DROP TABLE Z_PRIMARYKEY") },
    ]

    // MARK: - Keys and entity numbers a device stored

    /// A second list with a correct Z_ENT, then list 1 (which every item points at) gets `zEnt`.
    static func wrongEntityList(_ w: StoreWriter, zEnt: String) throws {
        try w.transaction(app, at: epoch) { w in _ = try w.insert("TodoList", ["name": .string("Work")]) }
        try w.executeRaw("UPDATE ZTODOLIST SET Z_ENT = \(zEnt) WHERE Z_PK = 1")
    }

    static func keysItem(_ name: String, last: Bool = false, _ body: @escaping @Sendable (StoreWriter) throws -> Void) -> Item {
        Item("keys: " + name) { folder, work in try moved(try store(in: work, walCommits: last ? 0 : 3, body), into: folder) }
    }

    static let keys: [Item] = [
        keysItem("Z_MAX and a Z_PK at 2^63-1") { w in
            try w.executeRaw("UPDATE ZTODOITEM SET Z_PK = 9223372036854775807, Z_OPT = 9223372036854775807 WHERE Z_PK = 20")
            try w.executeRaw("UPDATE Z_PRIMARYKEY SET Z_MAX = 9223372036854775807 WHERE Z_NAME = 'TodoList'")
        },
        keysItem("Z_MAX one below 2^63-1, history keys at 2^63-1") { w in
            try w.executeRaw("UPDATE Z_PRIMARYKEY SET Z_MAX = 9223372036854775806 WHERE Z_NAME = 'TodoItem'")
            try w.executeRaw("UPDATE Z_PRIMARYKEY SET Z_MAX = 9223372036854775807 WHERE Z_ENT >= 16000")
        },
        keysItem("to-one targets with a wrong Z_ENT (a stray value)") { w in try wrongEntityList(w, zEnt: "77") },
        keysItem("to-one targets with a wrong Z_ENT (another entity's number)") { w in
            try wrongEntityList(w, zEnt: "(SELECT Z_ENT FROM Z_PRIMARYKEY WHERE Z_NAME = 'TodoItem')")
        },
        keysItem("the only target row has a stray Z_ENT") { w in try w.executeRaw("UPDATE ZTODOLIST SET Z_ENT = 77") },
        keysItem("a WITHOUT ROWID entity table", last: true) { w in
            try w.executeRaw("CREATE TABLE storelens_wr (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZNAME VARCHAR) WITHOUT ROWID")
            try w.executeRaw("INSERT INTO storelens_wr (Z_PK, Z_ENT, Z_OPT, ZNAME) SELECT Z_PK, Z_ENT, Z_OPT, ZNAME FROM ZTODOLIST")
            try w.executeRaw("DROP TABLE ZTODOLIST")
            try w.executeRaw("ALTER TABLE storelens_wr RENAME TO ZTODOLIST")
            try w.executeRaw("UPDATE Z_PRIMARYKEY SET Z_MAX = 0 WHERE Z_NAME = 'TodoList'") // a finding repair would fix
        },
    ]

    // MARK: - Views and triggers that call functions (trusted_schema=OFF must stop them)

    static let loadExtension = "load_extension('/nonexistent/storelens-hostile.so')"

    static let schemaCode: [Item] = [
        namesItem("a view that calls load_extension") { w in
            try w.executeRaw("CREATE VIEW ZEVILVIEW AS SELECT \(loadExtension) AS Z_PK, 1 AS Z_ENT")
        },
        namesItem("the entity table replaced by a view that calls load_extension") { w in
            try w.executeRaw("DROP TABLE ZTODOLIST")
            try w.executeRaw("CREATE VIEW ZTODOLIST AS SELECT 1 AS Z_PK, 2 AS Z_ENT, 1 AS Z_OPT, \(loadExtension) AS ZNAME")
        },
        namesItem("the entity table replaced by a view that never ends") { w in
            try w.executeRaw("DROP TABLE ZTODOLIST")
            try w.executeRaw("CREATE VIEW ZTODOLIST AS WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n) SELECT x AS Z_PK, 2 AS Z_ENT, 1 AS Z_OPT, 'list' AS ZNAME FROM n")
        },
        namesItem("triggers that call load_extension on every write", last: true) { w in
            try w.executeRaw("UPDATE Z_PRIMARYKEY SET Z_MAX = 1 WHERE Z_ENT = 1") // a finding repair would fix
            for table in ["Z_PRIMARYKEY", "ZTODOITEM", "ZTODOLIST"] {
                for event in ["INSERT", "UPDATE", "DELETE"] {
                    try w.executeRaw("CREATE TRIGGER evil_\(event)_\(table) AFTER \(event) ON \(table) BEGIN SELECT \(loadExtension); END")
                }
            }
        },
        namesItem("a trigger that rewrites rows when Z_PRIMARYKEY is written", last: true) { w in
            try w.executeRaw("UPDATE Z_PRIMARYKEY SET Z_MAX = 1 WHERE Z_ENT = 1") // a finding repair would fix
            try w.executeRaw("CREATE TRIGGER sneaky AFTER UPDATE ON Z_PRIMARYKEY BEGIN UPDATE ZTODOITEM SET ZTITLE = 'rewritten by a trigger'; END")
        },
        namesItem("a CHECK constraint and an expression index on the entity table") { w in
            try w.executeRaw("CREATE INDEX evil_index ON ZTODOITEM (abs(Z_PK) + length(ZTITLE))")
            try w.executeRaw("CREATE TABLE ZCHECKED (x CHECK (\(loadExtension) IS NULL))")
        },
    ]

    // MARK: - Archives

    /// The files of a container holding the base store (with its WAL and -shm) and a media file.
    static func containerEntries(work: URL, prefix: String = "") throws -> [ArchiveMaker.Entry] {
        let source = work.appendingPathComponent("container-\(UUID().uuidString)")
        try store(in: source.appendingPathComponent("Library/Application Support"))
        try Data(count: 2048).write(to: source.appendingPathComponent("Library/photo.jpg"))
        return try ArchiveMaker.entries(of: source, prefix: prefix)
    }

    static func storeBytes(work: URL) throws -> Data {
        try Data(contentsOf: try store(in: work.appendingPathComponent("loose-\(UUID().uuidString)"), journal: .delete))
    }

    static func archiveItem(_ name: String, _ file: String, format: ArchiveMaker.Format = .paxTar, filter: ArchiveMaker.Filter = .gzip,
                            _ expectation: Expectation = .any,
                            _ entries: @escaping @Sendable (URL) throws -> [ArchiveMaker.Entry]) -> Item {
        Item("archive: " + name, expectation) { folder, work in
            let url = folder.appendingPathComponent(file)
            try ArchiveMaker.write(try entries(work), to: url, format: format, filter: filter)
            return url
        }
    }

    static let archives: [Item] = [
        archiveItem("traversal names", "traversal.tar.gz") { work in
            let db = try storeBytes(work: work)
            return [.file("../../evil.store", db), .file("AppData/../../../escaped.store", db), .file("./././a/../../b.store", db)]
                + (try containerEntries(work: work))
        },
        archiveItem("an absolute path", "absolute.tar") { work in
            [.file(escapeTargets[0], try storeBytes(work: work))] + (try containerEntries(work: work))
        },
        archiveItem("symlinks out of the archive, and a write through one", "symlinks.tar.gz") { work in
            let db = try storeBytes(work: work)
            return (try containerEntries(work: work)) + [
                .symlink("Library/Application Support/passwd.store", target: "/etc/passwd"),
                .symlink("Library/Application Support/up.store", target: "../../../../../outside.store"),
                .symlink("tmp", target: "/tmp"),
                .file("tmp/storelens-hostile-through-symlink.store", db),
                .symlink("Library/Application Support/default.store-journal", target: "/dev/zero"),
                .symlink("loop", target: "loop"),
            ]
        },
        archiveItem("hardlinks to outside files, to themselves and to earlier entries", "hardlinks.tar") { work in
            let db = try storeBytes(work: work)
            return (try containerEntries(work: work)) + [
                .hardlink("Library/Application Support/shadow.store", target: "/etc/shadow"),
                .hardlink("Library/Application Support/up.store", target: "../../outside.store"),
                .hardlink("Library/self.store", target: "Library/self.store"),
                .file(escapeTargets[2], db),
                .hardlink("Library/Application Support/copy.store", target: "Library/Application Support/default.store"),
            ]
        },
        archiveItem("duplicate names: the store twice, different bytes", "duplicates.zip", format: .zip, filter: .none) { work in
            let entries = try containerEntries(work: work)
            return entries + [.file("Library/Application Support/default.store", Data("second copy, not SQLite".utf8))]
                + entries.filter { if case .file(let n, _) = $0 { n.hasSuffix("-wal") } else { false } }
        },
        archiveItem("names that are not UTF-8", "latin1.tar.gz") { work in
            let db = try storeBytes(work: work)
            return [.rawNameFile(Array("Library/Application Support/caf".utf8) + [0xE9] + Array(".store".utf8), db),
                    .rawNameFile(Array("Library/Application Support/".utf8) + [0xFF, 0xFE, 0xC3] + Array(".sqlite".utf8), db),
                    .rawNameFile([0xC0, 0xAF, 0x2E, 0x2E, 0xC0, 0xAF] + Array("overlong.store".utf8), db)]
        },
        archiveItem("a bzip2 bomb: 64 MB of zeros", "bomb.tar.bz2", filter: .bzip2) { work in
            (try containerEntries(work: work)) + [.file("Documents/zeros.bin", Data(count: 64 << 20))]
        },
        archiveItem("a zip bomb: a 64 MB store-named entry of zeros", "bomb.zip", format: .zip, filter: .none) { _ in
            [.file("Library/Application Support/default.store", Data(count: 64 << 20))]
        },
        Item("archive: truncated in the middle of the store", .any) { folder, work in
            let url = folder.appendingPathComponent("truncated.tar")
            try ArchiveMaker.write(try containerEntries(work: work), to: url, format: .paxTar)
            try edit(url) { $0 = Array($0.prefix($0.count / 2 + 700)) }
            return url
        },
        Item("archive: gzip cut in half") { folder, work in
            let url = folder.appendingPathComponent("cut.tar.gz")
            try ArchiveMaker.write(try containerEntries(work: work), to: url, format: .paxTar, filter: .gzip)
            try edit(url) { $0 = Array($0.prefix($0.count / 2)) }
            return url
        },
        Item("archive: noise named .tar.gz", .rejected) { folder, _ in
            let url = folder.appendingPathComponent("noise.tar.gz")
            try noise(20_000, seed: 17).write(to: url)
            return url
        },
        // Not .rejected: a file under 16 bytes may be the empty main file of a store whose WAL
        // holds everything, so audit reads it as a store its manifest does not name.
        Item("archive: a zero-byte .zip") { folder, _ in
            let url = folder.appendingPathComponent("empty.zip")
            try Data().write(to: url)
            return url
        },
        archiveItem("an archive with no entries", "nothing.tar", filter: .none, .rejected) { _ in [] },
        Item("archive: an encrypted zip") { folder, work in
            let url = folder.appendingPathComponent("encrypted.zip")
            try ArchiveMaker.write(try containerEntries(work: work), to: url, format: .zip, passphrase: "secret")
            return url
        },
        archiveItem("5,000 entries, a 300-deep path, a 300-byte name", "many.tar.gz") { work in
            var entries = try containerEntries(work: work)
            for i in 0..<5_000 { entries.append(.file("Library/Caches/c\(i)", Data())) }
            entries.append(.file(Array(repeating: "d", count: 300).joined(separator: "/") + "/deep.store", try storeBytes(work: work)))
            entries.append(.file("Library/" + String(repeating: "n", count: 300) + ".store", try storeBytes(work: work)))
            return entries
        },
        archiveItem("a store that is a directory, then a file", "dirfile.zip", format: .zip, filter: .none) { work in
            [.directory("Library/Application Support/default.store/")] + (try containerEntries(work: work))
        },
        archiveItem("an archive inside an archive", "nested.tar.gz") { work in
            let inner = work.appendingPathComponent("inner.zip")
            try ArchiveMaker.write(try containerEntries(work: work), to: inner, format: .zip)
            return [.file("Documents/inner.zip", try Data(contentsOf: inner)), .file("Documents/readme.txt", Data("x".utf8))]
        },
        archiveItem("traversal through a slash before a combining mark (found by fuzzing)", "combining.tar") { work in
            let db = try storeBytes(work: work)
            // Raw UTF-8 bytes: libarchive will not convert non-ASCII names in the C locale.
            return ["../\u{301}escaped.store", "Library/../\u{301}../\u{301}x.store", "Library/Application Support/..\u{301}/y.store"]
                .map { ArchiveMaker.Entry.rawNameFile(Array($0.utf8), db) } + (try containerEntries(work: work))
        },
        archiveItem("traversal in a zip", "traversal.zip", format: .zip, filter: .none) { work in
            let db = try storeBytes(work: work)
            return [.file("../evil.store", db), .file("/abs/evil.store", db), .file("a\\..\\..\\win.store", db)]
        },
    ]

    // MARK: - Backups

    /// An unencrypted Finder/iTunes backup of the base container, with `rows` added to Manifest.db's Files.
    static func backupItem(_ name: String, _ expectation: Expectation = .any,
                           _ tamper: @escaping @Sendable (_ backup: URL, _ db: Connection) throws -> Void) -> Item {
        Item("backup: " + name, expectation) { folder, work in
            let container = work.appendingPathComponent("container")
            try store(in: container.appendingPathComponent("Library/Application Support"))
            let backup = folder.appendingPathComponent("00008030-001A2B3C4D5E0009")
            try PlainBackup.write(of: container, at: backup, domain: "AppDomain-com.example.todo", adjust: tamper)
            return backup
        }
    }

    static let fortyHex = String(repeating: "ab", count: 20)

    static let backups: [Item] = [
        backupItem("rows with NULL fileID, domain and path") { _, db in
            try db.execute("INSERT INTO Files VALUES (NULL, 'AppDomain-com.example.todo', 'Library/x.store', 1, NULL)")
            try db.execute("INSERT INTO Files VALUES ('\(fortyHex)', NULL, 'Library/y.store', 1, NULL)")
            try db.execute("INSERT INTO Files VALUES ('\(String(repeating: "cd", count: 20))', 'AppDomain-com.example.todo', NULL, 1, NULL)")
        },
        backupItem("fileIDs that are paths") { _, db in
            for (i, id) in ["../../../../etc/passwd", "/etc/passwd", "ab/../../../../../etc/passwd", String(repeating: "g", count: 40),
                            "abababababababababababababababababab/../"].enumerated() {
                try db.run("INSERT INTO Files VALUES (?, 'AppDomain-com.example.todo', ?, 1, NULL)", [.text(id), .text("Library/evil\(i).store")])
            }
        },
        backupItem("relativePaths with traversal") { _, db in
            try db.run("INSERT INTO Files VALUES (?, 'AppDomain-com.example.todo', '../../../../etc/passwd', 1, NULL)", [.text(String(repeating: "ef", count: 20))])
            try db.run("INSERT INTO Files VALUES (?, 'AppDomain-com.example.todo', '/Library/abs.store', 1, NULL)", [.text(String(repeating: "01", count: 20))])
        },
        backupItem("a row whose file is missing, one whose file is a folder, one a symlink to /dev/zero") { backup, db in
            try db.run("INSERT INTO Files VALUES (?, 'AppDomain-com.example.todo', 'Library/missing.store', 1, NULL)", [.text(String(repeating: "12", count: 20))])
            let dirID = String(repeating: "34", count: 20), linkID = String(repeating: "56", count: 20)
            try FileManager.default.createDirectory(at: backup.appendingPathComponent("34/\(dirID)"), withIntermediateDirectories: true)
            try FileManager.default.createDirectory(at: backup.appendingPathComponent("56"), withIntermediateDirectories: true)
            try FileManager.default.createSymbolicLink(atPath: backup.appendingPathComponent("56/\(linkID)").path, withDestinationPath: "/dev/zero")
            try db.run("INSERT INTO Files VALUES (?, 'AppDomain-com.example.todo', 'Library/folder.store', 1, NULL)", [.text(dirID)])
            try db.run("INSERT INTO Files VALUES (?, 'AppDomain-com.example.todo', 'Library/zero.store', 1, NULL)", [.text(linkID)])
        },
        backupItem("values of the wrong types, a NUL in a domain, a non-UTF-8 path") { _, db in
            try db.execute("INSERT INTO Files VALUES (12345, 'AppDomain-com.example.todo', 'Library/int.store', 1, NULL)")
            try db.execute("INSERT INTO Files VALUES ('\(String(repeating: "78", count: 20))', CAST(x'417070446F6D61696E2D00' AS TEXT), 'Library/nul.store', 1, NULL)")
            try db.execute("INSERT INTO Files VALUES ('\(String(repeating: "9a", count: 20))', 'AppDomain-com.example.todo', CAST(x'4C6962726172792FFFFE2E73746F7265' AS TEXT), 1, NULL)")
            try db.execute("INSERT INTO Files VALUES ('\(String(repeating: "bc", count: 20))', 'AppDomain-com.example.todo', x'00FF', 'one', x'00')")
        },
        backupItem("two rows for the same path") { _, db in
            let row = try db.rows("SELECT fileID, relativePath FROM Files WHERE relativePath LIKE '%default.store'")
            if let path = row.first?[1].string {
                try db.run("INSERT INTO Files VALUES (?, 'AppDomain-com.example.todo', ?, 1, NULL)", [.text(String(repeating: "de", count: 20)), .text(path)])
            }
        },
        backupItem("Manifest.db Files is a view that never ends") { _, db in
            try db.execute("ALTER TABLE Files RENAME TO RealFiles")
            try db.execute("CREATE VIEW Files AS SELECT * FROM RealFiles UNION ALL SELECT * FROM (WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n) SELECT printf('%040d', x), 'AppDomain-x', 'f' || x, 1, NULL FROM n)")
        },
        backupItem("Manifest.db Files is a view that calls load_extension") { _, db in
            try db.execute("ALTER TABLE Files RENAME TO RealFiles")
            try db.execute("CREATE VIEW Files AS SELECT fileID, domain, relativePath, flags + \(loadExtension) AS flags, file FROM RealFiles")
        },
        backupItem("no Files table", .rejected) { _, db in try db.execute("DROP TABLE Files") },
        Item("backup: Manifest.db is noise", .rejected) { folder, _ in
            let backup = folder.appendingPathComponent("00008030-00000000000000NO")
            try FileManager.default.createDirectory(at: backup, withIntermediateDirectories: true)
            try noise(8192, seed: 19).write(to: backup.appendingPathComponent("Manifest.db"))
            return backup
        },
        backupItem("Manifest.db cut in half", .rejected) { backup, db in
            // Pad the database so that half of it loses the Files table's pages.
            try db.execute("CREATE TABLE pad (x); INSERT INTO pad VALUES (zeroblob(200000));")
            _ = db
            let url = backup.appendingPathComponent("Manifest.db")
            try edit(url) { $0 = Array($0.prefix(3000)) }
        },
        backupItem("Manifest.plist says encrypted", .rejected) { backup, _ in
            try BinaryPlistWriter.encode(.dictionary(["IsEncrypted": .bool(true)])).write(to: backup.appendingPathComponent("Manifest.plist"))
        },
        backupItem("Manifest.plist is garbage") { backup, _ in
            try noise(300, seed: 23).write(to: backup.appendingPathComponent("Manifest.plist"))
        },
    ]

    // MARK: - Containers and .xcappdata

    static let containers: [Item] = [
        // The folders above a store are the user's layout: a link among them is followed, in
        // place as with --copy (the store's own files never are).
        Item("container: a store reached through a linked folder and a ..") { folder, work in
            let real = folder.appendingPathComponent("real")
            try FileManager.default.createDirectory(at: real, withIntermediateDirectories: true)
            try moved(try store(in: work), into: real)
            try FileManager.default.createSymbolicLink(atPath: folder.appendingPathComponent("via").path, withDestinationPath: "real")
            return URL(fileURLWithPath: folder.appendingPathComponent("via").path + "/../via/default.store")
        },
        // Paths are bytes: a folder named in another encoding is read (through an alias of its
        // own), its name shown as \xFF\xFE; the store is found and read like any other.
        Item("container: the store in a folder whose name is not UTF-8 (bytes ff fe)") { folder, _ in
            let library = folder.appendingPathComponent("AppData/Library")
            try store(in: library.appendingPathComponent("utf8-name"))
            let from = Array(library.path.utf8) + Array("/utf8-name".utf8) + [0]
            let to = Array(library.path.utf8) + [0x2F, 0xFF, 0xFE, 0]
            let renamed = from.withUnsafeBufferPointer { f in to.withUnsafeBufferPointer { t in
                f.baseAddress!.withMemoryRebound(to: CChar.self, capacity: f.count) { fp in
                    t.baseAddress!.withMemoryRebound(to: CChar.self, capacity: t.count) { rename(fp, $0) }
                }
            } }
            guard renamed == 0 else { throw CocoaError(.fileWriteUnknown) }
            return folder.appendingPathComponent("AppData")
        },
        Item("xml: a DOCTYPE declaring an external entity, hidden behind a comment that says <database") { folder, _ in
            let xml = XMLStoreWriter.sample().xml().replacingOccurrences(
                of: "<!DOCTYPE database SYSTEM \"file:///System/Library/DTDs/CoreData.dtd\">",
                with: "<!-- <database -->\n<!DOCTYPE database [<!ENTITY x SYSTEM \"file:///etc/hostname\">]>")
            let url = folder.appendingPathComponent("hidden-dtd.storedata")
            try Data(xml.utf8).write(to: url)
            return url
        },
        Item("container: a FIFO named like a store beside the real one") { folder, work in
            let root = folder.appendingPathComponent("AppData")
            try store(in: root.appendingPathComponent("Library/Application Support"))
            try expectFIFOResult(mkfifo(root.appendingPathComponent("Library/Application Support/pipe.store").path, 0o644))
            try expectFIFOResult(mkfifo(root.appendingPathComponent("Library/Application Support/default.store-journal").path, 0o644))
            _ = work
            return root
        },
        Item("container: symlink loops and links to /dev/zero and /etc") { folder, _ in
            let root = folder.appendingPathComponent("AppData")
            let support = root.appendingPathComponent("Library/Application Support")
            try store(in: support)
            try FileManager.default.createSymbolicLink(atPath: root.appendingPathComponent("Library/loop").path, withDestinationPath: "..")
            try FileManager.default.createSymbolicLink(atPath: support.appendingPathComponent("zero.store").path, withDestinationPath: "/dev/zero")
            try FileManager.default.createSymbolicLink(atPath: root.appendingPathComponent("etc").path, withDestinationPath: "/etc")
            try FileManager.default.createSymbolicLink(atPath: root.appendingPathComponent("self").path, withDestinationPath: "self")
            return root
        },
        Item("container: a store path with a newline, quotes and a semicolon") { folder, _ in
            let root = folder.appendingPathComponent("AppData")
            try store(in: root.appendingPathComponent("Library/Application Support"), name: "evil\nname\"; rm -rf ~.store")
            return root
        },
        Item("container: 100 nested folders") { folder, work in
            let root = folder.appendingPathComponent("AppData")
            let deep = (0..<100).reduce(root) { url, i in url.appendingPathComponent("d\(i)") }
            // Built where the path is short, then moved down: the deep path may pass SQLite's
            // 512-byte limit for creating a file (storelens reads it through its copy).
            try FileManager.default.createDirectory(at: deep, withIntermediateDirectories: true)
            _ = try moved(try store(in: work.appendingPathComponent("nested")), into: deep)
            return root
        },
        Item("container: a store that is only its sidecars") { folder, work in
            let root = folder.appendingPathComponent("AppData")
            let url = try store(in: work)
            let support = root.appendingPathComponent("Library/Application Support")
            try FileManager.default.createDirectory(at: support, withIntermediateDirectories: true)
            try FileManager.default.moveItem(atPath: url.path + "-wal", toPath: support.appendingPathComponent("default.store-wal").path)
            try FileManager.default.moveItem(atPath: url.path + "-shm", toPath: support.appendingPathComponent("default.store-shm").path)
            return root
        },
        Item("xcappdata: garbage AppDataInfo.plist, a store in it") { folder, _ in
            let bundle = folder.appendingPathComponent("Hostile.xcappdata")
            try store(in: bundle.appendingPathComponent("AppData/Library/Application Support"))
            try noise(500, seed: 29).write(to: bundle.appendingPathComponent("AppDataInfo.plist"))
            return bundle
        },
        Item("xcappdata: AppData is a symlink to /", .any) { folder, _ in
            let bundle = folder.appendingPathComponent("Escape.xcappdata")
            try FileManager.default.createDirectory(at: bundle, withIntermediateDirectories: true)
            try FileManager.default.createSymbolicLink(atPath: bundle.appendingPathComponent("AppData").path, withDestinationPath: "/proc/self")
            return bundle
        },
        Item("store: the input is a symlink to /dev/zero") { folder, _ in
            let url = folder.appendingPathComponent("zero.store")
            try FileManager.default.createSymbolicLink(atPath: url.path, withDestinationPath: "/dev/zero")
            return url
        },
        Item("store: the input is a FIFO") { folder, _ in
            let url = folder.appendingPathComponent("pipe.store")
            try expectFIFOResult(mkfifo(url.path, 0o644))
            return url
        },
    ]
}

// MARK: - Helpers

/// mkfifo's result, as a thrown error when it fails.
struct FIFOError: Error {}
func expectFIFOResult(_ result: Int32) throws { if result != 0 { throw FIFOError() } }

/// Re-signs a WAL after an edit: the header checksum, then every frame's salts and cumulative
/// checksum, in native (little-endian word) order as SQLite writes on x86-64 and arm64.
enum WALSigner {
    static func fold(_ bytes: [UInt8], _ range: Range<Int>, _ seed: (UInt32, UInt32), bigEndian: Bool) -> (UInt32, UInt32) {
        var (s0, s1) = seed
        var i = range.lowerBound
        func word(_ at: Int) -> UInt32 {
            let b = (0..<4).map { UInt32(bytes[at + $0]) }
            return bigEndian ? b[0] << 24 | b[1] << 16 | b[2] << 8 | b[3] : b[3] << 24 | b[2] << 16 | b[1] << 8 | b[0]
        }
        while i + 8 <= range.upperBound {
            s0 = s0 &+ word(i) &+ s1
            s1 = s1 &+ word(i + 4) &+ s0
            i += 8
        }
        return (s0, s1)
    }

    static func signHeader(_ bytes: inout [UInt8]) {
        guard bytes.count >= 32 else { return }
        let bigEndian = bytes[3] == 0x83
        let sum = fold(bytes, 0..<24, (0, 0), bigEndian: bigEndian)
        HostileCorpus.put32(sum.0, at: 24, in: &bytes)
        HostileCorpus.put32(sum.1, at: 28, in: &bytes)
    }

    static func sign(_ bytes: inout [UInt8]) {
        guard bytes.count >= 32 else { return }
        signHeader(&bytes)
        let bigEndian = bytes[3] == 0x83
        let pageSize = Int(HostileCorpus.get32(8, bytes))
        guard pageSize >= 512, pageSize <= 65536, pageSize & (pageSize - 1) == 0 else { return }
        var running = (HostileCorpus.get32(24, bytes), HostileCorpus.get32(28, bytes))
        var offset = 32
        while offset + 24 + pageSize <= bytes.count {
            for i in 0..<8 { bytes[offset + 8 + i] = bytes[16 + i] }
            running = fold(bytes, offset..<(offset + 8), running, bigEndian: bigEndian)
            running = fold(bytes, (offset + 24)..<(offset + 24 + pageSize), running, bigEndian: bigEndian)
            HostileCorpus.put32(running.0, at: offset + 16, in: &bytes)
            HostileCorpus.put32(running.1, at: offset + 20, in: &bytes)
            offset += 24 + pageSize
        }
    }
}

/// Hand-made binary plists with shapes BinaryPlistWriter will not write: cycles, deep nesting,
/// shared references (billion laughs) and sheer size.
enum Bplist {
    enum Object { case array([Int]), dictionary([(Int, Int)]), string(String) }

    static func encode(_ objects: [Object], top: Int = 0) -> Data {
        let refSize = objects.count < 256 ? 1 : (objects.count < 65536 ? 2 : 4)
        var out = [UInt8]("bplist00".utf8)
        var offsets: [Int] = []
        func count(_ marker: UInt8, _ n: Int) {
            if n < 15 { out.append(marker | UInt8(n)); return }
            out.append(marker | 0x0F)
            out.append(0x12)
            for shift in stride(from: 24, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: n >> shift)) }
        }
        func ref(_ r: Int) { for shift in stride(from: (refSize - 1) * 8, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: r >> shift)) } }
        for object in objects {
            offsets.append(out.count)
            switch object {
            case .array(let refs): count(0xA0, refs.count); refs.forEach(ref)
            case .dictionary(let pairs): count(0xD0, pairs.count); pairs.forEach { ref($0.0) }; pairs.forEach { ref($0.1) }
            case .string(let s): count(0x50, s.utf8.count); out += Array(s.utf8)
            }
        }
        let tableOffset = out.count
        for o in offsets { for shift in stride(from: 24, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: o >> shift)) } }
        out += [0, 0, 0, 0, 0, 0, 4, UInt8(refSize)]
        for value in [objects.count, top, tableOffset] {
            for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: value >> shift)) }
        }
        return Data(out)
    }

    /// {"NSStoreType": "SQLite", "loop": A} where A = [A].
    static func cyclic() -> Data {
        encode([.dictionary([(1, 2), (3, 4)]), .string("NSStoreType"), .string("SQLite"), .string("loop"), .array([4])])
    }

    /// {"deep": [[[…"end"…]]]}, `depth` arrays deep.
    static func nested(_ depth: Int) -> Data {
        var objects: [Object] = [.dictionary([(1, 2)]), .string("deep")]
        for i in 0..<depth { objects.append(.array([i == depth - 1 ? depth + 2 : objects.count + 1])) }
        objects.append(.string("end"))
        return encode(objects)
    }

    /// {"lol": A0} with A_i = [A_i+1 × width], `depth` levels: width^depth values from a few bytes.
    static func laughs(depth: Int, width: Int) -> Data {
        var objects: [Object] = [.dictionary([(1, 2)]), .string("lol")]
        for level in 0..<depth { objects.append(.array(Array(repeating: level == depth - 1 ? 2 + depth : 3 + level, count: width))) }
        objects.append(.string("lol"))
        return encode(objects)
    }

    /// {"NSStoreType": "SQLite", "junk": [s0, s1, …]} with `count` distinct strings.
    static func huge(_ count: Int) -> Data {
        var objects: [Object] = [.dictionary([(1, 2), (3, 4)]), .string("NSStoreType"), .string("SQLite"), .string("junk")]
        objects.append(.array(Array(5..<(5 + count))))
        for i in 0..<count { objects.append(.string("junk string number \(i)")) }
        return encode(objects)
    }
}
