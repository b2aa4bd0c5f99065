import Acquisition
import Foundation
import SQLiteAccess
import StoreBuilder
import StoreFormats
import StoreTestSupport
import Testing

/// Names chosen by the evidence (a backup's domains and relative paths, archive entries, links
/// planted in a container) pass one rule, whatever the input path: nothing is ever written
/// outside the working folder, the hostile names are listed as skipped with the reason, and the
/// honest store beside them is still read.
@Suite("names from evidence: one path rule on every input path")
struct EvidenceNameTests {
    static let domain = "AppDomain-com.example.todo"

    /// What a hostile store file holds: SQLite's magic, then a line an attacker wants written
    /// somewhere (an ssh key, as in an `authorized_keys` file).
    static let payload = Data("SQLite format 3\0\nssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIhostile attacker@example\n".utf8)

    /// Manifest.db rows a hostile backup can carry, aimed at `target` (an absolute folder outside
    /// everything storelens may write).
    static func hostileRows(aimingAt target: URL) -> [(domain: String, relative: String)] {
        let climb = String(repeating: "../", count: 24)
        let absolute = String(target.path.drop { $0 == "/" })
        return [
            ("AppDomain-x/\(climb)\(absolute)", ".ssh/authorized_keys"),
            ("AppDomain-x/\(climb)\(absolute)", "evil.sqlite"),
            ("AppDomain-x/..", "evil.sqlite"),
            ("AppDomain-" + String(repeating: "x", count: 5000), "Library/evil.sqlite"),
            (domain, "\(climb)\(absolute)/escape.sqlite"),
            (domain, "Library/\(String(repeating: "y", count: 300)).sqlite"),
        ]
    }

    /// A plain backup of the demo container with the hostile rows added to its Manifest.db.
    static func hostileBackup(at backup: URL, container: URL, target: URL) throws {
        try PlainBackup.write(of: container, at: backup, domain: domain)
        let db = try Connection.open(path: backup.appendingPathComponent("Manifest.db").path, mode: .readWrite)
        for (index, row) in hostileRows(aimingAt: target).enumerated() {
            let fileID = String(SHA256.hex(Data("hostile-\(index)".utf8)).prefix(40))
            let folder = backup.appendingPathComponent(String(fileID.prefix(2)))
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            try payload.write(to: folder.appendingPathComponent(fileID))
            try db.run("INSERT INTO Files VALUES (?, ?, ?, 1, NULL)", [.text(fileID), .text(row.domain), .text(row.relative)])
        }
    }

    /// Archive entries that try the same from inside a tar or zip: a climbing name, an absolute
    /// one, and a link to the target followed by a store written "through" it.
    static func hostileEntries(aimingAt target: URL) -> [ArchiveMaker.Entry] {
        [.file(String(repeating: "../", count: 24) + String(target.path.drop { $0 == "/" }) + "/climb.sqlite", payload),
         .symlink("AppData/Library/door", target: target.path),
         .file("AppData/Library/door/through.sqlite", payload),
         .file("AppData/Library/door/.ssh/authorized_keys", payload)]
    }

    struct Case: Sendable {
        let name: String
        /// Builds the input in `evidence`; returns its path and the extra arguments it needs.
        let make: @Sendable (_ evidence: URL, _ work: URL, _ target: URL) throws -> (path: String, arguments: [String])
        var needsWriter = false
        /// Read as a backup: each hostile Manifest.db row is skipped with its reason. A backup
        /// inside an archive is read as an archive of files (its hashed names are all it shows).
        var isBackup: Bool { !name.contains(" in a ") && name.contains("backup") }
        /// Holds the hostile archive entries: the climbing name and the link are skipped.
        var hasHostileEntries: Bool { name.contains("zip") || name.contains("tar.gz") && !name.contains("encrypted") }
        /// Holds the demo's store under its own name (a backup in an archive shows hashed names).
        var namesDefaultStore: Bool { isBackup || name.contains("container") }
        /// An encrypted backup in an archive is ciphertext only: no store is found at all.
        var findsStores: Bool { name != "encrypted backup in a tar.gz" }
    }

    static let cases: [Case] = [
        Case(name: "plain backup") { evidence, work, target in
            let backup = evidence.appendingPathComponent("00008120-001A2B3C4D5E802E")
            try hostileBackup(at: backup, container: try demo(in: work), target: target)
            return (backup.path, [])
        },
        Case(name: "encrypted backup", make: { evidence, work, target in
            let encrypted = evidence.appendingPathComponent("00008120-001A2B3C4D5E802E")
            let password = try encryptedHostileBackup(at: encrypted, work: work, target: target)
            return (encrypted.path, ["--password-file", password.path])
        }, needsWriter: true),
        Case(name: "plain backup in a zip") { evidence, work, target in
            let backup = work.appendingPathComponent("backup")
            try hostileBackup(at: backup, container: try demo(in: work), target: target)
            let archive = evidence.appendingPathComponent("backup.zip")
            try ArchiveMaker.write(try ArchiveMaker.entries(of: backup, prefix: "00008120-001A2B3C4D5E802E") + hostileEntries(aimingAt: target),
                                   to: archive, format: .zip)
            return (archive.path, [])
        },
        Case(name: "plain backup in a tar.gz") { evidence, work, target in
            let backup = work.appendingPathComponent("backup")
            try hostileBackup(at: backup, container: try demo(in: work), target: target)
            let archive = evidence.appendingPathComponent("backup.tar.gz")
            try ArchiveMaker.write(try ArchiveMaker.entries(of: backup, prefix: "00008120-001A2B3C4D5E802E") + hostileEntries(aimingAt: target),
                                   to: archive, format: .paxTar, filter: .gzip)
            return (archive.path, [])
        },
        Case(name: "encrypted backup in a tar.gz", make: { evidence, work, target in
            let encrypted = work.appendingPathComponent("encrypted")
            let password = try encryptedHostileBackup(at: encrypted, work: work, target: target)
            let archive = evidence.appendingPathComponent("backup.tar.gz")
            try ArchiveMaker.write(try ArchiveMaker.entries(of: encrypted, prefix: "00008120-001A2B3C4D5E802E"), to: archive, format: .paxTar, filter: .gzip)
            return (archive.path, ["--password-file", password.path])
        }, needsWriter: true),
        Case(name: "container tar.gz with climbing names and a link") { evidence, work, target in
            let archive = evidence.appendingPathComponent("container.tar.gz")
            try ArchiveMaker.write(try ArchiveMaker.entries(of: try demo(in: work), prefix: "AppData") + hostileEntries(aimingAt: target),
                                   to: archive, format: .paxTar, filter: .gzip)
            return (archive.path, [])
        },
        Case(name: "container folder with a link to the target") { evidence, work, target in
            let container = evidence.appendingPathComponent("AppData")
            try DemoContainer.write(into: container)
            try FileManager.default.createSymbolicLink(atPath: container.appendingPathComponent("Library/door").path, withDestinationPath: target.path)
            return (container.path, [])
        },
    ]

    /// The hostile backup encrypted by the independent writer; returns the password file.
    static func encryptedHostileBackup(at encrypted: URL, work: URL, target: URL) throws -> URL {
        let plain = work.appendingPathComponent("plain/00008120-001A2B3C4D5E802E")
        try hostileBackup(at: plain, container: try demo(in: work), target: target)
        let password = work.appendingPathComponent("password.txt")
        try Data("hostile names\n".utf8).write(to: password)
        try EncryptedBackupWriter.encrypt(plain, into: encrypted, passwordFile: password, verify: false)
        return password
    }

    static func demo(in work: URL) throws -> URL {
        let container = work.appendingPathComponent("container-\(UUID().uuidString.prefix(6))")
        try DemoContainer.write(into: container)
        return container
    }

    @Test("every hostile name is refused and nothing lands outside the working folder", arguments: 0..<cases.count)
    func refused(_ index: Int) throws {
        let kind = Self.cases[index]
        guard !kind.needsWriter || EncryptedBackupWriter.available else {
            print("note: \(kind.name): skipped, \(EncryptedBackupWriter.skipReason)")
            return
        }
        let folder = try TemporaryFolder("names")
        let evidence = folder.path("evidence"), work = folder.path("work"), tmp = folder.path("tmp")
        // The folder a hostile name aims at, beside everything else (so a write there is seen).
        let target = folder.path("target")
        for url in [evidence, work, tmp, target] { try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true) }
        let (input, extra) = try kind.make(evidence, work, target)
        let before = try FolderSnapshot(evidence)

        let scan = try CLI.run(["scan", input, "--format", "json"] + extra, environment: ["TMPDIR": tmp.path])
        let inspect = try CLI.run(["inspect", input, "--store", "default.store", "--format", "json"] + extra, environment: ["TMPDIR": tmp.path])

        let landed = try FileManager.default.subpathsOfDirectory(atPath: target.path)
        #expect(landed.isEmpty, "\(kind.name): written outside the working folder: \(landed)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: tmp.path).isEmpty, "\(kind.name): scratch left in TMPDIR")
        #expect(try FolderSnapshot(evidence) == before, "\(kind.name): the evidence changed")
        // A hostile name is the input's problem: never blamed on the machine (exit 3).
        #expect(scan.status == 0, "\(kind.name): scan exited \(scan.status): \(scan.stderr)")
        if kind.namesDefaultStore {
            #expect(inspect.status == 0, "\(kind.name): inspect exited \(inspect.status): \(inspect.stderr)")
            #expect(inspect.stdout.contains("default.store"), "\(kind.name): inspect did not read the honest store: \(inspect.stderr)")
        } else {
            #expect(inspect.status == 2, "\(kind.name): inspect exited \(inspect.status): \(inspect.stderr)")
        }
        let document = try JSONSerialization.jsonObject(with: Data(scan.stdout.utf8)) as? [String: Any]
        let skipped = (document?["skipped"] as? [[String: Any]]) ?? []
        let reasons = skipped.compactMap { $0["reason"] as? String }
        let stores = (document?["stores"] as? [[String: Any]]) ?? []
        #expect(stores.isEmpty != kind.findsStores, "\(kind.name): scan found \(stores.count) stores")
        for store in stores {
            let path = store["path"] as? String ?? ""
            #expect(!path.contains("..") && !path.contains("evil") && !path.contains("climb"),
                    "\(kind.name): a hostile name was taken for a store: \(path)")
        }
        if kind.isBackup {
            let refusedRows = reasons.filter { $0.contains("unsafe domain or relativePath") }
            #expect(refusedRows.count == Self.hostileRows(aimingAt: target).count,
                    "\(kind.name): each hostile Manifest.db row is skipped with its reason: \(reasons)")
        }
        if kind.hasHostileEntries {
            #expect(reasons.contains { $0.contains("path traversal") } && reasons.contains { $0.contains("symbolic link") },
                    "\(kind.name): the climbing entry and the link are skipped: \(reasons)")
        }
    }

    @Test("the rule: a domain is one plain name, a relative path never climbs")
    func rule() {
        let cases: [(domain: String, relative: String, safe: [String]?)] = [
            ("AppDomain-com.example", "Library/a.sqlite", ["AppDomain-com.example", "Library", "a.sqlite"]),
            ("AppDomain-com.example", "/Library//./a.sqlite", ["AppDomain-com.example", "Library", "a.sqlite"]),
            ("AppDomain-x/../../tmp", "a.sqlite", nil),
            ("AppDomain-x/sub", "a.sqlite", nil),
            ("..", "a.sqlite", nil),
            ("", "a.sqlite", nil),
            ("AppDomain-\u{0}x", "a.sqlite", nil),
            (String(repeating: "d", count: 256), "a.sqlite", nil),
            ("AppDomain-x", "../a.sqlite", nil),
            ("AppDomain-x", "", nil),
            ("AppDomain-x", Array(repeating: "f", count: 256).joined(separator: "/"), nil),
        ]
        for c in cases {
            let verdict = ArchivePath.sanitize(domain: c.domain, relativePath: c.relative)
            if let safe = c.safe {
                #expect(verdict == .safe(components: safe, wasAbsolute: c.relative.hasPrefix("/")), "\(c.domain.prefix(30)) \(c.relative.prefix(30))")
            } else if case .safe(let components, _) = verdict {
                Issue.record("\(c.domain.prefix(30)) + \(c.relative.prefix(30)) was accepted as \(components)")
            }
        }
    }
}
