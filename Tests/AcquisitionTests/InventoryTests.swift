import Acquisition
import Foundation
import SQLiteAccess
import StoreBuilder
import StoreFormats
import StoreTestSupport
import Testing

/// Finding stores in folders, archives and backups.
@Suite("Finding stores in inputs")
struct InventoryTests {
    static func inventory(_ input: URL, limits: ArchiveLimits = ArchiveLimits()) throws -> (Inventory, EvidenceSession) {
        let session = try EvidenceSession()
        return (try InputResolver(session: session, limits: limits, hashArchives: true).inventory(of: input.path), session)
    }

    @Test("a container folder: stores by magic bytes, sidecars, container identity, well-known location")
    func folder() throws {
        let folder = try TemporaryFolder("inv-folder")
        let container = try InventoryInputs.demoContainer(in: folder)
        let (inv, session) = try Self.inventory(container)
        defer { session.scratch.remove() }
        #expect(inv.kind == .folder)
        #expect(inv.stores.map(\.path) == ["Library/Application Support/Model.sqlite", "Library/Application Support/default.store", "Library/Caches/Cache.data"])
        let store = try #require(inv.stores.first { $0.path.hasSuffix("default.store") })
        #expect(store.sidecars.wal == "Library/Application Support/default.store-wal")
        #expect(store.sidecars.shm == "Library/Application Support/default.store-shm")
        #expect(store.container?.identifier == "com.example.todo")
        #expect(store.location == "SwiftData default store")
        #expect(store.sha256["Library/Application Support/default.store"] == (try SHA256.hexOfFile(at: store.family.main)))
        #expect(inv.orphans.isEmpty)
    }

    @Test("an .xcappdata bundle: AppData/ is the container, identity from AppDataInfo.plist")
    func xcappdata() throws {
        let folder = try TemporaryFolder("inv-xcappdata")
        let bundle = folder.path("Todo.xcappdata")
        try DemoContainer.write(into: bundle.appendingPathComponent("AppData"))
        try BinaryPlistWriter.encode(.dictionary(["ApplicationIdentifier": .string("com.example.todo.xc")]))
            .write(to: bundle.appendingPathComponent("AppDataInfo.plist"))
        let (inv, session) = try Self.inventory(bundle)
        defer { session.scratch.remove() }
        #expect(inv.kind == .xcappdata)
        let store = try #require(inv.stores.first { $0.path.hasSuffix("default.store") })
        #expect(store.path == "AppData/Library/Application Support/default.store")
        #expect(store.location == "SwiftData default store")
        #expect(store.container?.identifier == "com.example.todo", "the container's own marker is nearer than AppDataInfo.plist")
    }

    @Test("an orphan -wal and an App Group copy are reported")
    func orphansAndGroupCopies() throws {
        let folder = try TemporaryFolder("inv-orphans")
        let root = folder.path("tree")
        try DemoContainer.write(into: root.appendingPathComponent("app"))
        let group = root.appendingPathComponent("group")
        try FileManager.default.createDirectory(at: group.appendingPathComponent("Library/Application Support"), withIntermediateDirectories: true)
        try BinaryPlistWriter.encode(.dictionary(["MCMMetadataIdentifier": .string("group.com.example.todo")]))
            .write(to: group.appendingPathComponent(".com.apple.mobile_container_manager.metadata.plist"))
        let appStore = root.appendingPathComponent("app/Library/Application Support/default.store")
        try FileManager.default.copyItem(at: appStore, to: group.appendingPathComponent("Library/Application Support/default.store"))
        try Data([0x37, 0x7f, 0x06, 0x82] + [UInt8](repeating: 0, count: 28)).write(to: root.appendingPathComponent("lost.db-wal"))
        let (inv, session) = try Self.inventory(root)
        defer { session.scratch.remove() }
        #expect(inv.orphans.map(\.path) == ["lost.db-wal"])
        let copy = try #require(inv.stores.first { $0.path.hasPrefix("group/") })
        #expect(copy.container?.kind == .appGroup)
        #expect(copy.location?.contains("a copy of app/Library/Application Support/default.store in an App Group container (identical bytes)") == true)
    }

    @Test("an App Group store is tied to the app whose bytes or group id match, not to the first store of the same name")
    func groupCopyTiedToItsApp() throws {
        let folder = try TemporaryFolder("inv-group-owner")
        let root = folder.path("Containers")
        // Three apps whose SwiftData stores are all called default.store, as in a simulator folder.
        func app(_ name: String, _ id: String, write: (URL) throws -> Void) throws -> URL {
            let c = root.appendingPathComponent(name)
            try write(c)
            try BinaryPlistWriter.encode(.dictionary(["MCMMetadataIdentifier": .string(id)]))
                .write(to: c.appendingPathComponent(".com.apple.mobile_container_manager.metadata.plist"))
            return c.appendingPathComponent("Library/Application Support/default.store")
        }
        func store(_ c: URL) throws {
            try FileManager.default.createDirectory(at: c.appendingPathComponent("Library/Application Support"), withIntermediateDirectories: true)
            try LibraryStore.write(c.appendingPathComponent("Library/Application Support/default.store"))
        }
        _ = try app("A-other", "com.example.other", write: store)
        let todo = try app("B-todo", "com.example.todo", write: { try DemoContainer.write(into: $0) })
        _ = try app("C-third", "com.example.third", write: store)
        // The group holds a store of its own (other bytes than any app's), named like all of them.
        let group = try app("Group", "group.com.example.todo", write: store)
        // A second group whose id names no app, with a byte-identical copy of the third app's store.
        let third = root.appendingPathComponent("C-third/Library/Application Support/default.store")
        let shared = root.appendingPathComponent("Shared")
        try FileManager.default.createDirectory(at: shared.appendingPathComponent("Library/Application Support"), withIntermediateDirectories: true)
        try BinaryPlistWriter.encode(.dictionary(["MCMMetadataIdentifier": .string("group.org.unrelated")]))
            .write(to: shared.appendingPathComponent(".com.apple.mobile_container_manager.metadata.plist"))
        for suffix in ["", "-wal"] where FileManager.default.fileExists(atPath: third.path + suffix) {
            try FileManager.default.copyItem(atPath: third.path + suffix, toPath: shared.appendingPathComponent("Library/Application Support/default.store").path + suffix)
        }
        #expect(try SHA256.hexOfFile(at: group) != SHA256.hexOfFile(at: todo))
        let (inv, session) = try Self.inventory(root)
        defer { session.scratch.remove() }
        let groupStore = try #require(inv.stores.first { $0.path.hasPrefix("Group/") })
        #expect(groupStore.location?.contains("second copy of B-todo/Library/Application Support/default.store (the app whose group this is)") == true,
                "\(groupStore.location ?? "nil")")
        #expect(groupStore.location?.contains("A-other") == false)
        let sharedStore = try #require(inv.stores.first { $0.path.hasPrefix("Shared/") })
        #expect(sharedStore.location?.contains("a copy of C-third/Library/Application Support/default.store") == true, "\(sharedStore.location ?? "nil")")
    }

    static let kinds: [(String, ArchiveMaker.Format, ArchiveMaker.Filter, Bool)] = [
        ("tar", .paxTar, .none, false), ("tar.gz", .paxTar, .gzip, false), ("tar.bz2", .gnuTar, .bzip2, false),
        ("tar.xz", .paxTar, .xz, false), ("tar.zst", .paxTar, .zstd, false), ("zip", .zip, .none, false),
        ("zip64", .zip64, .none, false), ("stored.zip", .zip, .none, true),
    ]

    @Test("archives of every kind give the same stores as the loose folder, with sidecars that came first",
          arguments: kinds.map(\.0))
    func archives(_ kind: String) throws {
        let (_, format, filter, stored) = try #require(Self.kinds.first { $0.0 == kind })
        let folder = try TemporaryFolder("inv-archive")
        let container = try InventoryInputs.demoContainer(in: folder)
        // Sidecars before their database, as device tools sometimes write them.
        var entries = try ArchiveMaker.entries(of: container, prefix: "container")
        entries.sort { lhs, rhs in
            func key(_ e: ArchiveMaker.Entry) -> Int { if case .file(let n, _) = e, n.hasSuffix("-wal") { return 0 }; return 1 }
            return key(lhs) < key(rhs)
        }
        let archive = folder.path("container.\(kind)")
        try ArchiveMaker.write(entries, to: archive, format: format, filter: filter, zipStored: stored)
        let before = try SHA256.hexOfFile(at: archive)
        let (inv, session) = try Self.inventory(archive)
        defer { session.scratch.remove() }
        #expect(inv.kind == .archive)
        #expect(inv.inputSHA256 == before)
        #expect(inv.stores.map(\.path) == ["\(archive.path)!container/Library/Application Support/Model.sqlite",
                                            "\(archive.path)!container/Library/Application Support/default.store",
                                            "\(archive.path)!container/Library/Caches/Cache.data"])
        let store = try #require(inv.stores.first { $0.path.hasSuffix("default.store") })
        #expect(store.sidecars.wal != nil && store.sidecars.shm != nil)
        #expect(store.container?.identifier == "com.example.todo")
        // The extracted family hashes like the loose files.
        let loose = container.appendingPathComponent("Library/Application Support/default.store")
        #expect(store.sha256[store.path] == (try SHA256.hexOfFile(at: loose)))
        #expect(store.sha256[store.path + "-wal"] == (try SHA256.hexOfFile(at: URL(fileURLWithPath: loose.path + "-wal"))))
        // Only store families were extracted: no photo.
        #expect(!inv.extracted.contains { $0.path.hasSuffix("photo.jpg") })
        #expect(try SHA256.hexOfFile(at: archive) == before)
    }

    @Test("hostile entries: traversal, absolute names, symlinks, hardlinks, duplicates, raw names")
    func hostileEntries() throws {
        let folder = try TemporaryFolder("inv-hostile")
        let db = folder.path("seed.sqlite")
        do { let c = try Connection.open(path: db.path, mode: .create); try c.execute("CREATE TABLE t (x)") }
        let bytes = try Data(contentsOf: db)
        let archive = folder.path("evil.tar")
        try ArchiveMaker.write([
            .file("../../escape.db", bytes),
            .file("app/./x/../../../escape2.db", bytes),
            .file("/abs/evil.db", bytes),
            .symlink("app/link.db", target: "/etc/passwd"),
            .symlink("lnk", target: "/tmp"),
            .file("lnk/pwn.db", bytes),
            .file("app/real.db", bytes),
            .hardlink("app/hard.db", target: "app/real.db"),
            .file("app/dup.db", bytes), .file("app/dup.db", bytes),
            .rawNameFile(Array("caf".utf8) + [0xE9] + Array(".db".utf8), bytes),
            .file("orphan.db-wal", Data(repeating: 0, count: 64)),
        ], to: archive, format: .paxTar)
        let outside = try FileManager.default.contentsOfDirectory(atPath: "/tmp")
        let (inv, session) = try Self.inventory(archive)
        defer { session.scratch.remove() }
        let paths = Set(inv.stores.map { String($0.path.split(separator: "!").last ?? "") })
        #expect(paths == ["abs/evil.db", "lnk/pwn.db", "app/real.db", "app/dup.db", "app/dup.db~1", "caf%E9.db"])
        let skipped = Dictionary(inv.skipped.map { ($0.path, $0.reason) }, uniquingKeysWith: { a, _ in a })
        #expect(skipped["../../escape.db"]?.contains("traversal") == true)
        #expect(skipped["app/./x/../../../escape2.db"]?.contains("traversal") == true)
        #expect(skipped["app/link.db"]?.contains("symbolic link") == true)
        #expect(skipped["app/hard.db"]?.contains("hard link") == true)
        #expect(inv.orphans.map { String($0.path.split(separator: "!").last ?? "") } == ["orphan.db-wal"])
        // Nothing was written outside the scratch folder.
        #expect(try FileManager.default.contentsOfDirectory(atPath: "/tmp").filter { !outside.contains($0) && !$0.hasPrefix("storelens-") && !$0.hasPrefix("sltest-") }.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: "/tmp/pwn.db"))
    }

    @Test("bad archives: truncated (found before the damage), corrupt gzip, empty, unsupported, bomb, encrypted entry")
    func badArchives() throws {
        let folder = try TemporaryFolder("inv-bad")
        let container = try InventoryInputs.demoContainer(in: folder)
        var entries = try ArchiveMaker.entries(of: container)
        entries.append(.file("zzz/filler.bin", PseudoRandomBytes.data(400_000, seed: 42)))
        let good = folder.path("good.tar.gz")
        try ArchiveMaker.write(entries, to: good, format: .paxTar, filter: .gzip)
        let data = try Data(contentsOf: good)

        let truncated = folder.path("truncated.tar.gz")
        #expect(data.count > 300_000, "the filler keeps the archive large enough to cut inside it")
        try data.prefix(data.count - 100_000).write(to: truncated)
        let (inv, s1) = try Self.inventory(truncated)
        defer { s1.scratch.remove() }
        #expect(inv.damage != nil)
        #expect(inv.stores.contains { $0.path.hasSuffix("default.store") }, "stores before the damage are still found")

        let corrupt = folder.path("corrupt.tar.gz")
        var bytes = [UInt8](data)
        // The first deflate block header becomes the reserved block type 3: invalid at once.
        bytes[10] = 0xFF
        try Data(bytes).write(to: corrupt)
        #expect(throws: ArchiveError.self) { _ = try Self.inventory(corrupt) }

        let empty = folder.path("empty.tar.gz")
        try ArchiveMaker.write([], to: empty, format: .paxTar, filter: .gzip)
        #expect(throws: ArchiveError.self) { _ = try Self.inventory(empty) }

        let unsupported = folder.path("mystery.xz")
        try Data([0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00] + [UInt8](repeating: 0x42, count: 500)).write(to: unsupported)
        #expect(throws: ArchiveError.self) { _ = try Self.inventory(unsupported) }

        // A bomb: a "SQLite" entry that inflates to 100 MB of zeros, read with a ratio limit of 100.
        let bomb = folder.path("bomb.zip")
        var header = Data("SQLite format 3\0".utf8)
        header.append(Data(repeating: 0, count: 100 << 20))
        try ArchiveMaker.write([.file("bomb.sqlite", header)], to: bomb, format: .zip)
        header = Data()
        var limits = ArchiveLimits()
        limits.maxCompressionRatio = 100
        let error = try #require(throws: ArchiveError.self) { _ = try Self.inventory(bomb, limits: limits) }
        guard case .bomb(_, let entry, _) = error else { Issue.record("not a bomb error: \(error)"); return }
        #expect(entry == "bomb.sqlite")

        // An encrypted entry is skipped with a warning; the rest of the archive is still read.
        let encrypted = folder.path("encrypted.zip")
        let store = container.appendingPathComponent("Library/Caches/Cache.data")
        try ArchiveMaker.write([.file("secret/Cache.data", try Data(contentsOf: store))], to: encrypted, format: .zip, passphrase: "hunter2")
        let (encInv, s2) = try Self.inventory(encrypted)
        defer { s2.scratch.remove() }
        #expect(encInv.stores.isEmpty)
        #expect(encInv.warnings.contains { $0.contains("secret/Cache.data") && $0.contains("encrypted") })
    }

    @Test("a backup folder resolves a store and its WAL through Manifest.db")
    func backup() throws {
        let folder = try TemporaryFolder("inv-backup")
        let backup = folder.path(InventoryInputs.backupName)
        try PlainBackup.write(of: try InventoryInputs.demoContainer(in: folder), at: backup, domain: InventoryInputs.backupDomain)
        let (inv, session) = try Self.inventory(backup)
        defer { session.scratch.remove() }
        #expect(inv.kind == .backup)
        let store = try #require(inv.stores.first { $0.path.hasSuffix("default.store") })
        #expect(store.path == "AppDomain-com.example.todo/Library/Application Support/default.store")
        #expect(store.sidecars.wal == store.path + "-wal")
        #expect(store.container?.identifier == "com.example.todo")
        #expect(store.family.main.lastPathComponent.count == 40, "the bytes come from the hashed file")
        let copy = try session.workingCopy(of: store)
        #expect(try copy.open().scalar("SELECT count(*) FROM ZTODOITEM").int == 7, "the WAL was found and applied")
    }

    @Test("bad backups: encrypted, no Manifest.db, broken rows")
    func badBackups() throws {
        let folder = try TemporaryFolder("inv-badbackup")
        let encrypted = folder.path("encrypted")
        try FileManager.default.createDirectory(at: encrypted, withIntermediateDirectories: true)
        try BinaryPlistWriter.encode(.dictionary(["IsEncrypted": .bool(true)])).write(to: encrypted.appendingPathComponent("Manifest.plist"))
        try Data(repeating: 0xAB, count: 4096).write(to: encrypted.appendingPathComponent("Manifest.db"))
        // Encrypted, without the ManifestKey of iOS 10.2 and later: the older format, refused by name.
        #expect(throws: BackupError.unsupportedEncryption(path: encrypted.path, iosVersion: nil)) { _ = try Self.inventory(encrypted) }

        let noManifest = folder.path("nomanifest")
        try FileManager.default.createDirectory(at: noManifest, withIntermediateDirectories: true)
        try BinaryPlistWriter.encode(.dictionary(["IsEncrypted": .bool(false)])).write(to: noManifest.appendingPathComponent("Manifest.plist"))
        let error = try #require(throws: BackupError.self) { _ = try Self.inventory(noManifest) }
        #expect("\(error)".contains("no Manifest.db"))

        let broken = folder.path("broken-parent/\(InventoryInputs.backupName)")
        try PlainBackup.write(of: try InventoryInputs.demoContainer(in: folder), at: broken, domain: InventoryInputs.backupDomain) { _, manifest in
            for (fileID, domain, relative) in [("../../../../etc/passwd", "AppDomain-com.example.todo", "x.db"),
                                               (String(repeating: "a", count: 40), "AppDomain-com.example.todo", "../../escape.db"),
                                               (String(repeating: "b", count: 40), "AppDomain-com.example.todo", "Documents/missing.db")] {
                try manifest.run("INSERT INTO Files VALUES (?, ?, ?, 1, NULL)", [.text(fileID), .text(domain), .text(relative)])
            }
        }
        let (inv, session) = try Self.inventory(broken)
        defer { session.scratch.remove() }
        #expect(inv.skipped.count == 3)
        #expect(inv.stores.contains { $0.path.hasSuffix("default.store") })
    }
}

