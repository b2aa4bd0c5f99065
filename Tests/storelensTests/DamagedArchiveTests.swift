import Acquisition
import Foundation
import StoreBuilder
import StoreTestSupport
import Testing

/// A damaged .tar.gz (cut inside the -wal, a wrong CRC-32 or length, bytes after its end) is never
/// read as whole: every command that reads through it stops with exit 2 naming the archive and the
/// entry, and with --read-damaged reads what it holds with a warning (and check's finding).
@Suite("damaged archives stop every command")
struct DamagedArchiveTests {
    /// The commands that read stores, each with what it needs besides the input.
    static let commands: [[String]] = [
        ["inspect"], ["schema"], ["check"], ["wal"], ["recover"], ["history"], ["timeline"],
        ["rows", "@INPUT", "TodoItem"], ["export", "@INPUT", "--out", "@OUT"],
        ["audit", "@INPUT", "--manifest", ProjectPaths.root().appendingPathComponent("Fixtures/demo-container.storelens.json").path],
    ]

    /// The demo container as a .tar.gz whose last entry is the store's -wal, and its damaged twins.
    struct Archives {
        let folder: TemporaryFolder
        let whole: URL
        let damaged: [(kind: String, url: URL, says: String)]

        init() throws {
            let folder = try TemporaryFolder("damaged-archive")
            self.folder = folder
            let tree = folder.path("tree")
            try DemoContainer.write(into: tree)
            // The -wal last: a cut near the end of the stream lands inside it.
            let entries = try ArchiveMaker.entries(of: tree, prefix: "AppData")
            func isWAL(_ entry: ArchiveMaker.Entry) -> Bool {
                if case .file(let name, _) = entry { return name.hasSuffix("default.store-wal") }
                return false
            }
            let tar = folder.path("c.tar")
            try ArchiveMaker.write(entries.filter { !isWAL($0) } + entries.filter(isWAL), to: tar, format: .paxTar)
            let gz = try ArchiveMaker.gzip(try Data(contentsOf: tar))
            whole = folder.path("whole.tar.gz")
            try gz.write(to: whole)
            var crc = [UInt8](gz)
            crc[crc.count - 8] ^= 0xFF
            var length = [UInt8](gz)
            length[length.count - 1] ^= 0x01
            let cases: [(String, Data, String)] = [
                // 200 compressed bytes before the end: inside the -wal's data (the tar's zero blocks compress to a few bytes).
                ("cut inside the -wal", gz.prefix(gz.count - 200), "default.store-wal"),
                ("wrong CRC-32", Data(crc), "CRC"),
                ("wrong length (ISIZE)", Data(length), "default.store-wal"),
                ("bytes after the end", gz + Data(repeating: 0x5A, count: 512), "after the end of the gzip stream"),
            ]
            damaged = try cases.enumerated().map { index, c in
                let url = folder.path("damaged-\(index).tar.gz")
                try c.1.write(to: url)
                return (c.0, url, c.2)
            }
        }

        func arguments(_ command: [String], input: URL, out: URL) -> [String] {
            let filled = command.map { $0 == "@INPUT" ? input.path : $0 == "@OUT" ? out.path : $0 }
            let withInput = filled.contains(input.path) ? filled : filled + [input.path]
            return withInput + ["--store", "default.store"]
        }
    }

    @Test("each kind of damage: every command exits 2 naming the archive and the entry; nothing on stdout claims a result",
          .enabled(if: GzipDecoder.available.contains(.isal), "ISA-L is not built in; libarchive's own gzip filter does not check the trailer"))
    func stops() throws {
        let archives = try Archives()
        for damaged in archives.damaged {
            for command in Self.commands {
                let out = archives.folder.path("out-\(UUID().uuidString.prefix(6)).sqlite")
                let result = try CLI.run(archives.arguments(command, input: damaged.url, out: out))
                #expect(result.status == 2, "\(damaged.kind), \(command[0]): exit \(result.status): \(result.stderr)")
                #expect(result.stderr.contains(damaged.url.lastPathComponent) && result.stderr.contains(damaged.says),
                        "\(damaged.kind), \(command[0]): \(result.stderr)")
                #expect(result.stderr.contains("--read-damaged"), "\(damaged.kind), \(command[0]) says how to read it anyway")
                #expect(!FileManager.default.fileExists(atPath: out.path), "\(damaged.kind): export wrote a file")
            }
        }
    }

    @Test("--read-damaged reads what is there, with a warning on stderr and check's archive-damaged finding",
          .enabled(if: GzipDecoder.available.contains(.isal), "ISA-L is not built in; libarchive's own gzip filter does not check the trailer"))
    func readAnyway() throws {
        let archives = try Archives()
        for damaged in archives.damaged {
            for command in Self.commands where command[0] != "check" {
                let out = archives.folder.path("out-\(UUID().uuidString.prefix(6)).sqlite")
                let result = try CLI.run(archives.arguments(command, input: damaged.url, out: out) + ["--read-damaged"])
                // audit exits 1 on the demo's own findings (a writer breaking the manifest).
                #expect(result.status == (command[0] == "audit" ? 1 : 0), "\(damaged.kind), \(command[0]): exit \(result.status): \(result.stderr)")
                #expect(result.stderr.contains("warning: ") && result.stderr.contains(damaged.says),
                        "\(damaged.kind), \(command[0]) warns: \(result.stderr)")
            }
            let check = try CLI.run(["check", damaged.url.path, "--store", "default.store", "--read-damaged", "--format", "json"])
            #expect(check.status == 1, "\(damaged.kind): check exits 1 on the archive-damaged finding: \(check.stderr)")
            #expect(check.stdout.contains("\"archive-damaged\""), "\(damaged.kind): \(check.stdout.prefix(400))")
        }
        // The whole archive: no warning, no finding.
        let clean = try CLI.run(["check", archives.whole.path, "--store", "default.store", "--read-damaged", "--format", "json"])
        #expect(!clean.stdout.contains("archive-damaged") && !clean.stderr.contains("warning"), "\(clean.stderr)")
    }

    @Test("a cut inside the -wal shows fewer commits than the whole archive: why reading it silently was wrong",
          .enabled(if: GzipDecoder.available.contains(.isal), "ISA-L is not built in"))
    func cutShowsOlderState() throws {
        let archives = try Archives()
        let whole = try CLI.run(["wal", archives.whole.path, "--store", "default.store", "--format", "json"])
        let cut = try CLI.run(["wal", archives.damaged[0].url.path, "--store", "default.store", "--format", "json", "--read-damaged"])
        func commits(_ json: String) throws -> Int? {
            let object = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any]
            let store = (object?["stores"] as? [[String: Any]])?.first
            return (store?["wal"] as? [String: Any])?["commits"] as? Int
        }
        let wholeCommits = try #require(try commits(whole.stdout), "\(whole.stdout.prefix(300))")
        let cutCommits = try #require(try commits(cut.stdout), "\(cut.stdout.prefix(300))")
        #expect(cutCommits < wholeCommits, "the cut archive holds \(cutCommits) of \(wholeCommits) commits")
    }
}
