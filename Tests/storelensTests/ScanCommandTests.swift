import Foundation
import SQLiteAccess
import StoreBuilder
import StoreFormats
import StoreTestSupport
import Testing

/// `scan` and `inspect` on what comes off a device: archives, .xcappdata, backups, the real stores.
@Suite("scan and archive inputs")
struct ScanCommandTests {
    /// The entity rows and WAL facts of `inspect --format json`, comparable across inputs.
    static func facts(_ result: CommandResult) throws -> String {
        let stores = try #require(try CommandJSON.object(result.stdout)["stores"] as? [[String: Any]])
        return try stores.map { store in
            let entities = try #require(store["entities"] as? [[String: Any]])
            let rows = entities.map { "\($0["name"] ?? "") \($0["rows"] ?? "") \($0["rowsMainFileOnly"] ?? "") \($0["zMax"] ?? "")" }
            let wal = store["wal"] as? [String: Any] ?? [:]
            return rows.joined(separator: ",") + " wal \(wal["validFrames"] ?? "") \(wal["commits"] ?? "")"
        }.joined(separator: "\n")
    }

    @Test("the real SwiftData store inside tar.gz, zip and an .xcappdata folder gives the numbers of the loose files", .enabled(if: ProjectPaths.hasRealFixtures, Comment(rawValue: ProjectPaths.realFixturesMissing)))
    func realStoreInArchives() throws {
        let real = try #require(ProjectPaths.realFixtures())
        let folder = try TemporaryFolder("scan-real")
        let source = real.appendingPathComponent("swiftdata-resources")
        let loose = try CLI.run(["inspect", source.appendingPathComponent("default.store").path, "--format", "json"])
        #expect(loose.status == 0, "\(loose.stderr)")
        var entries: [ArchiveMaker.Entry] = [.directory("Todo.xcappdata/AppData/Library/Application Support")]
        for name in ["default.store-wal", "default.store-shm", "default.store"] {
            entries.append(.file("Todo.xcappdata/AppData/Library/Application Support/\(name)", try Data(contentsOf: source.appendingPathComponent(name))))
        }
        entries.append(.file("Todo.xcappdata/AppDataInfo.plist", BinaryPlistWriter.encode(.dictionary(["ApplicationIdentifier": .string("com.sdsoftware.ResourcesManager")]))))
        let before = try FolderSnapshot(source)
        for (name, format, filter) in [("c.tar.gz", ArchiveMaker.Format.paxTar, ArchiveMaker.Filter.gzip), ("c.zip", .zip, .none)] {
            let archive = folder.path(name)
            try ArchiveMaker.write(entries, to: archive, format: format, filter: filter)
            let viaArchive = try CLI.run(["inspect", archive.path, "--format", "json"])
            #expect(viaArchive.status == 0, "\(viaArchive.stderr)")
            #expect(try Self.facts(viaArchive) == (try Self.facts(loose)), "\(name)")
            let scan = try CLI.run(["scan", archive.path, "--format", "json"])
            let stores = try #require(try CommandJSON.object(scan.stdout)["stores"] as? [[String: Any]])
            #expect(stores.count == 1)
            #expect(stores.first?["stack"] as? String == "swiftdata")
            #expect((stores.first?["container"] as? [String: Any])?["identifier"] as? String == "com.sdsoftware.ResourcesManager")
            #expect(stores.first?["location"] as? String == "SwiftData default store")
        }
        #expect(try FolderSnapshot(source) == before)
    }

    @Test("scan of a container folder and of its zip: same stores, JSON fields, evidence manifest, inputs unchanged")
    func scanFolderAndZip() throws {
        let folder = try TemporaryFolder("scan-folder")
        let container = folder.path("container")
        try DemoContainer.write(into: container)
        let zip = folder.path("container.zip")
        try ArchiveMaker.write(try ArchiveMaker.entries(of: container), to: zip, format: .zip)
        let before = try FolderSnapshot(folder.url)

        let loose = try CLI.run(["scan", container.path, "--format", "json"])
        #expect(loose.status == 0, "\(loose.stderr)")
        let evidence = folder.url.deletingLastPathComponent().appendingPathComponent("evidence-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: evidence) }
        let zipped = try CLI.run(["scan", zip.path, "--format", "json", "--evidence", evidence.path])
        #expect(zipped.status == 0, "\(zipped.stderr)")
        #expect(try FolderSnapshot(folder.url) == before)

        let a = try #require(try CommandJSON.object(loose.stdout)["stores"] as? [[String: Any]])
        let b = try #require(try CommandJSON.object(zipped.stdout)["stores"] as? [[String: Any]])
        #expect(a.count == 2 && b.count == 2)
        #expect(a.map { $0["path"] as? String } == ["Library/Application Support/Model.sqlite", "Library/Application Support/default.store"])
        #expect(b.last?["path"] as? String == zip.path + "!Library/Application Support/default.store")
        for key in ["size", "format", "stack"] {
            #expect("\(a.last?[key] ?? "")" == "\(b.last?[key] ?? "")", "\(key)")
        }
        #expect(a.last?["stack"] as? String == "swiftdata")
        #expect(a.first?["stack"] as? String == "coredata")
        let sidecars = try #require(a.last?["sidecars"] as? [String: Any])
        #expect(sidecars["wal"] as? String == "Library/Application Support/default.store-wal")
        let hashes = try #require(b.last?["sha256"] as? [String: String])
        let mainHash = try SHA256.hexOfFile(at: container.appendingPathComponent("Library/Application Support/default.store"))
        #expect(hashes[zip.path + "!Library/Application Support/default.store"] == mainHash)

        let manifest = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: evidence)) as? [String: Any])
        let inputs = try #require(manifest["inputs"] as? [[String: Any]])
        #expect(inputs.first?["sha256"] as? String == (try SHA256.hexOfFile(at: zip)))
        let extracted = try #require(inputs.first?["extracted"] as? [[String: Any]])
        #expect(extracted.contains { ($0["path"] as? String) == "Library/Application Support/default.store" && ($0["sha256"] as? String) == mainHash })
        // --evidence never replaces a file.
        let again = try CLI.run(["scan", zip.path, "--evidence", evidence.path])
        #expect(again.status == 2)
        #expect(again.stderr.contains("does not exist yet"))
    }

    @Test("inspect picks one store with --store and refuses an ambiguous input without it")
    func storeSelection() throws {
        let folder = try TemporaryFolder("scan-select")
        let container = folder.path("container")
        try DemoContainer.write(into: container)
        let cache = try Connection.open(path: container.appendingPathComponent("Library/Caches/Cache.data").path, mode: .create)
        try cache.execute("CREATE TABLE c (k)")
        let both = try CLI.run(["inspect", container.path, "--format", "json"])
        #expect(both.status == 0)
        #expect((try CommandJSON.object(both.stdout)["stores"] as? [[String: Any]])?.count == 3)
        let one = try CLI.run(["inspect", container.path, "--store", "default.store", "--format", "json"])
        #expect((try CommandJSON.object(one.stdout)["stores"] as? [[String: Any]])?.count == 1)
        let none = try CLI.run(["inspect", container.path, "--store", "nothing.sqlite"])
        #expect(none.status == 2)
        #expect(none.stderr.contains("matches none of the stores found"))
    }

    @Test("bad archive inputs: exit codes and messages; nothing written outside scratch", arguments: ["truncated", "empty", "unsupported", "bomb", "backup-without-manifest", "encrypted-backup"])
    func badInputs(_ kind: String) throws {
        let folder = try TemporaryFolder("scan-bad")
        let scratch = try TemporaryFolder("scan-bad-scratch")
        let input: URL
        var arguments: [String] = []
        var expected: [String] = []
        switch kind {
        case "truncated":
            let container = folder.path("c")
            try DemoContainer.write(into: container)
            var entries = try ArchiveMaker.entries(of: container)
            entries.append(.file("zzz/filler.bin", PseudoRandomBytes.data(300_000, seed: 7)))
            let whole = folder.path("whole.tar.gz")
            try ArchiveMaker.write(entries, to: whole, format: .paxTar, filter: .gzip)
            let data = try Data(contentsOf: whole)
            input = folder.path("cut.tar.gz")
            try data.prefix(data.count - 50_000).write(to: input)
            try FileManager.default.removeItem(at: whole)
            try FileManager.default.removeItem(at: container)
            expected = ["damaged", "copy the archive again"]
        case "empty":
            input = folder.path("empty.zip")
            try ArchiveMaker.write([], to: input, format: .zip)
            expected = ["empty archive"]
        case "unsupported":
            input = folder.path("x.bz2")
            try Data([0x42, 0x5a, 0x68, 0x39] + [UInt8](repeating: 1, count: 300)).write(to: input)
            expected = ["not an archive storelens can read"]
        case "bomb":
            input = folder.path("bomb.tar.gz")
            try ArchiveMaker.write([.file("zeros.bin", Data(repeating: 0, count: 300 << 20))], to: input, format: .paxTar, filter: .gzip)
            arguments = ["--max-ratio", "50"]
            expected = ["decompression bomb", "zeros.bin"]
        case "backup-without-manifest":
            input = folder.path("backup")
            try FileManager.default.createDirectory(at: input, withIntermediateDirectories: true)
            try BinaryPlistWriter.encode(.dictionary(["IsEncrypted": .bool(false)])).write(to: input.appendingPathComponent("Manifest.plist"))
            expected = ["Manifest.db"]
        default:
            input = folder.path("backup")
            try FileManager.default.createDirectory(at: input, withIntermediateDirectories: true)
            try BinaryPlistWriter.encode(.dictionary(["IsEncrypted": .bool(true)])).write(to: input.appendingPathComponent("Manifest.plist"))
            try Data(repeating: 0x11, count: 8192).write(to: input.appendingPathComponent("Manifest.db"))
            expected = ["encrypted backup"]
        }
        let before = try FolderSnapshot(folder.url)
        let result = try CLI.run(["scan", input.path] + arguments, environment: ["TMPDIR": scratch.url.path])
        #expect(result.status == 2, "\(result.stdout)\n\(result.stderr)")
        for word in expected { #expect(result.stderr.contains(word), "\(word) in \(result.stderr)") }
        #expect(result.stderr.contains(input.path))
        #expect(try FolderSnapshot(folder.url) == before)
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.url.path).isEmpty)
        if kind == "truncated" {
            #expect(result.stdout.contains("default.store"), "what was found before the damage is still reported")
        }
    }
}
