import Foundation
import StoreBuilder
import StoreFormats
import StoreTestSupport
import Testing

/// A symbolic link typed on the command line (`~/Desktop/pulled`, a linked store or archive) is
/// the user's choice and is followed, saying so; links inside the evidence never are.
@Suite("symbolic links given as input")
struct SymlinkInputTests {
    static func container() throws -> (TemporaryFolder, URL) {
        let folder = try TemporaryFolder("symlink-input")
        let real = folder.path("Pulled/container")
        try DemoContainer.write(into: real)
        return (folder, real)
    }

    @Test("a linked folder is followed: scan says so and the evidence manifest records the target and its files")
    func linkedFolder() throws {
        let (folder, real) = try Self.container()
        let link = folder.path("pulled")
        try FileManager.default.createSymbolicLink(atPath: link.path, withDestinationPath: real.path)
        let before = try FolderSnapshot(real)
        let direct = try CLI.run(["scan", real.path, "--format", "json"])
        let r = try CLI.run(["scan", link.path, "--format", "json", "--evidence", folder.path("evidence.json").path])
        #expect(r.status == 0, "\(r.stderr)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
        let input = try #require((json["inputs"] as? [[String: Any]])?.first)
        #expect(input["symlinkTarget"] as? String == real.resolvingSymlinksInPath().path)
        // The same stores as the folder itself.
        let paths = { (text: String) throws -> [String] in
            let j = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
            return ((j["stores"] as? [[String: Any]]) ?? []).compactMap { $0["path"] as? String }
        }
        #expect(try paths(r.stdout) == paths(direct.stdout))
        #expect(try !paths(r.stdout).isEmpty)
        let evidence = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: folder.path("evidence.json"))) as? [String: Any])
        #expect((evidence["inputs"] as? [[String: Any]])?.first?["symlinkTarget"] as? String == real.resolvingSymlinksInPath().path)
        let originals = try #require(evidence["originals"] as? [[String: Any]])
        let store = real.resolvingSymlinksInPath().appendingPathComponent("Library/Application Support/default.store")
        let recorded = try #require(originals.first { $0["path"] as? String == store.path })
        #expect(recorded["sha256"] as? String == (try SHA256.hexOfFile(at: store)), "the target's bytes, hashed independently")
        let text = try CLI.run(["scan", link.path])
        #expect(text.stdout.contains("a symbolic link to \(real.resolvingSymlinksInPath().path), followed because it was given on the command line"))
        #expect(!text.stderr.contains("permissions"))
        #expect(try FolderSnapshot(real) == before)
    }

    @Test("a linked store file and a linked archive are read like the files they point to")
    func linkedStoreAndArchive() throws {
        let (folder, real) = try Self.container()
        let store = real.appendingPathComponent("Library/Application Support/default.store")
        let storeLink = folder.path("store-link")
        try FileManager.default.createSymbolicLink(atPath: storeLink.path, withDestinationPath: store.path)
        let viaLink = try CLI.run(["inspect", storeLink.path, "--format", "json"])
        let direct = try CLI.run(["inspect", store.path, "--format", "json"])
        #expect(viaLink.status == 0, "\(viaLink.stderr)")
        func entities(_ text: String) throws -> String {
            let j = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
            let s = try #require((j["stores"] as? [[String: Any]])?.first)
            let facts: [String: Any] = ["entities": s["entities"] ?? NSNull(), "wal": s["wal"] ?? NSNull()]
            return String(decoding: try JSONSerialization.data(withJSONObject: facts, options: [.sortedKeys]), as: UTF8.self)
        }
        #expect(try entities(viaLink.stdout) == entities(direct.stdout), "the -wal beside the target is read too")

        let archive = folder.path("c.tar")
        try ArchiveMaker.write(try ArchiveMaker.entries(of: real, prefix: "c"), to: archive, format: .paxTar)
        let archiveLink = folder.path("latest.tar")
        try FileManager.default.createSymbolicLink(atPath: archiveLink.path, withDestinationPath: "c.tar")
        let scanned = try CLI.run(["scan", archiveLink.path])
        #expect(scanned.status == 0, "\(scanned.stderr)")
        #expect(scanned.stdout.contains("default.store"))

        let broken = folder.path("broken")
        try FileManager.default.createSymbolicLink(atPath: broken.path, withDestinationPath: folder.path("nowhere").path)
        let r = try CLI.run(["scan", broken.path])
        #expect(r.status == 2)
        #expect(r.stderr.contains("is a symbolic link to"), "\(r.stderr)")
        #expect(r.stderr.contains("which does not exist"))
    }

    @Test("links inside the evidence are not followed: a linked -wal beside a store, or inside a folder, says what it is and what to do")
    func linksInsideEvidence() throws {
        let (folder, real) = try Self.container()
        let support = real.appendingPathComponent("Library/Application Support")
        let elsewhere = folder.path("elsewhere")
        try FileManager.default.createDirectory(at: elsewhere, withIntermediateDirectories: true)
        try FileManager.default.moveItem(at: support.appendingPathComponent("default.store-wal"), to: elsewhere.appendingPathComponent("default.store-wal"))
        try FileManager.default.createSymbolicLink(atPath: support.appendingPathComponent("default.store-wal").path,
                                                   withDestinationPath: elsewhere.appendingPathComponent("default.store-wal").path)
        let single = try CLI.run(["inspect", support.appendingPathComponent("default.store").path])
        #expect(single.status == 2)
        #expect(single.stderr.contains("default.store-wal is a symbolic link"), "\(single.stderr)")
        #expect(single.stderr.contains("cp -L"))
        #expect(!single.stderr.contains("check its permissions"))

        let scan = try CLI.run(["scan", real.path, "--format", "json"])
        let json = try #require(try JSONSerialization.jsonObject(with: Data(scan.stdout.utf8)) as? [String: Any])
        let skipped = try #require(json["skipped"] as? [[String: Any]])
        let wal = try #require(skipped.first { ($0["path"] as? String)?.hasSuffix("default.store-wal") == true })
        #expect((wal["reason"] as? String)?.contains("not followed") == true)
        #expect((wal["reason"] as? String)?.contains("cp -L") == true)
        let store = try #require((json["stores"] as? [[String: Any]])?.first { ($0["path"] as? String)?.hasSuffix("default.store") == true })
        #expect((store["sidecars"] as? [String: Any])?["wal"] is NSNull, "the linked -wal is not read")
    }

    /// The folders above a store are the user's layout: on macOS /tmp and every TMPDIR are links,
    /// home folders and evidence shares often are. Every command reads a store through a linked
    /// parent, a linked grandparent or a `..`, in place and with `--copy`, as it reads the real
    /// path (the in-place VFS used to refuse any link in the path and call the store damaged).
    @Test("a store under a linked parent, a linked grandparent or a .. is read by every command, in place and with --copy")
    func linkedFoldersAbove() throws {
        let (folder, real) = try Self.container()
        let support = real.appendingPathComponent("Library/Application Support")
        try FileManager.default.createSymbolicLink(atPath: folder.path("parent-link").path, withDestinationPath: support.path)
        try FileManager.default.createSymbolicLink(atPath: folder.path("grandparent-link").path, withDestinationPath: real.appendingPathComponent("Library").path)
        let store = support.appendingPathComponent("default.store").path
        let typed = [
            folder.path("parent-link").path + "/default.store",
            folder.path("grandparent-link").path + "/Application Support/default.store",
            folder.path("parent-link").path + "/../Application Support/default.store",
        ]
        let before = try FolderSnapshot(real)
        let manifest = folder.path("storelens.json")
        try Data(BoundedRun.todoManifest.utf8).write(to: manifest)
        var runs = 0
        for copy in [false, true] {
            for (index, path) in ([store] + typed).enumerated() {
                let outputs = folder.path("out-\(copy)-\(index)")
                try FileManager.default.createDirectory(at: outputs, withIntermediateDirectories: true)
                let commands = CommandPlan.perStore(input: path, store: nil, outputs: outputs)
                    + CommandPlan.wholeInput(input: path, manifest: manifest, outputs: outputs).filter { $0.name != "merge" }
                for command in commands {
                    let help = try CLI.run([command.name, "--help"])
                    guard !copy || help.stdout.contains("--copy") else { continue }
                    let arguments = command.main.arguments + (copy ? ["--copy"] : [])
                    let r = try CLI.run(arguments)
                    runs += 1
                    let what = "storelens \(arguments.joined(separator: " ")) → exit \(r.status): \(r.stderr.prefix(300))"
                    #expect(r.status == 0 || r.status == 1, "\(what)")
                    #expect(!r.stderr.contains("damaged") && !r.stderr.contains("unable to open"), "\(what)")
                }
                let inspected = try CLI.run(["inspect", path, "--format", "json"] + (copy ? ["--copy"] : []))
                let direct = try CLI.run(["inspect", store, "--format", "json"])
                func facts(_ text: String) throws -> String {
                    let j = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
                    let s = try #require((j["stores"] as? [[String: Any]])?.first)
                    let facts: [String: Any] = ["entities": s["entities"] ?? NSNull(), "wal": s["wal"] ?? NSNull()]
                    return String(decoding: try JSONSerialization.data(withJSONObject: facts, options: [.sortedKeys]), as: UTF8.self)
                }
                #expect(try facts(inspected.stdout) == facts(direct.stdout), "\(path): the same entities and -wal as the real path")
            }
        }
        #expect(runs > 40)
        #expect(try FolderSnapshot(real) == before)
    }
}
