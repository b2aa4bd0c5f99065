import Acquisition
import Foundation
import SQLiteAccess
import StoreBuilder
import StoreFormats
import StoreTestSupport
import Testing

@Suite("Safe opening through working copies")
struct WorkingCopyTests {
    /// A store whose last transaction lives only in the WAL, copied as a device would leave it.
    static func storeWithWAL(in folder: TemporaryFolder) throws -> URL {
        let url = folder.path("default.store")
        let w = try StoreWriter(url: url, model: SampleModels.todo)
        try w.transaction { w in for n in ["a", "b", "c"] { try w.insert("TodoList", ["name": .string(n)]) } }
        try w.checkpoint()
        try w.transaction { w in
            try w.insert("TodoList", ["name": .string("d")])
            try w.delete("TodoList", pk: 1)
        }
        try w.close(leavingWAL: true)
        return url
    }

    @Test("both views: WAL applied and main file only; originals byte-identical, -shm included; read in place and copied",
          arguments: [false, true])
    func twoViewsLeaveEvidenceAlone(copying: Bool) throws {
        let folder = try TemporaryFolder("views")
        let url = try Self.storeWithWAL(in: folder)
        #expect(FileManager.default.fileExists(atPath: url.path + "-wal"))
        #expect(FileManager.default.fileExists(atPath: url.path + "-shm"))
        let before = try FolderSnapshot(folder.url)

        let session = try EvidenceSession()
        let copy = try session.workingCopy(of: url, options: OpenOptions(copyEvidence: copying))
        #expect(copy.readsInPlace == !copying)
        let scratchFiles = FileManager.default.enumerator(atPath: session.scratch.url.path)?.allObjects.compactMap { $0 as? String }
            .filter { !$0.hasSuffix("/") && (try? FileManager.default.attributesOfItem(atPath: session.scratch.url.path + "/" + $0)[.type] as? FileAttributeType) == .typeRegular } ?? []
        #expect(scratchFiles.isEmpty == !copying, "read in place, nothing is copied into the scratch folder: \(scratchFiles)")
        #expect(copy.header.isWALMode)
        #expect(copy.wal?.commitFrames.count == 1)
        #expect(copy.family.shm != nil)
        let withWAL = try copy.open()
        let mainOnly = try copy.openMainFileOnly()
        #expect(try withWAL.scalar("SELECT group_concat(ZNAME) FROM (SELECT ZNAME FROM ZTODOLIST ORDER BY Z_PK)").string == "b,c,d")
        #expect(try mainOnly.scalar("SELECT group_concat(ZNAME) FROM (SELECT ZNAME FROM ZTODOLIST ORDER BY Z_PK)").string == "a,b,c")
        // Our own SQL cannot write to the copy either.
        #expect(throws: SQLiteError.self) { try withWAL.execute("DELETE FROM ZTODOLIST") }
        try session.finish()

        #expect(try FolderSnapshot(folder.url) == before)
        #expect(!FileManager.default.fileExists(atPath: session.scratch.url.path), "scratch removed")
    }

    @Test("the working copy keeps its WAL after close (no checkpoint on close)")
    func copyKeepsWAL() throws {
        let folder = try TemporaryFolder("keepwal")
        let url = try Self.storeWithWAL(in: folder)
        let session = try EvidenceSession(keepScratch: true)
        defer { try? FileManager.default.removeItem(at: session.scratch.url) }
        let copy = try session.workingCopy(of: url, options: OpenOptions(copyEvidence: true))
        let walBefore = try Data(contentsOf: URL(fileURLWithPath: copy.databaseFile.path + "-wal"))
        do { _ = try copy.open().scalar("SELECT count(*) FROM ZTODOLIST") }
        let walAfter = try Data(contentsOf: URL(fileURLWithPath: copy.databaseFile.path + "-wal"))
        #expect(walBefore == walAfter)
        #expect(FileManager.default.fileExists(atPath: session.scratch.url.path), "--keep-scratch keeps it")
    }

    @Test("the scratch folder is private (0700)")
    func scratchIsPrivate() throws {
        let scratch = try ScratchFolder()
        defer { scratch.remove() }
        let mode = try FileManager.default.attributesOfItem(atPath: scratch.url.path)[.posixPermissions] as? NSNumber
        #expect(mode?.intValue == 0o700)
        let sub = try scratch.makeSubfolder(named: "../../etc/evil")
        #expect(sub.deletingLastPathComponent().path == scratch.url.path, "hints cannot escape the scratch folder")
    }

    @Test("evidence ledger notices a change")
    func ledgerDetectsChange() throws {
        let folder = try TemporaryFolder("ledger")
        let file = folder.path("x")
        try Data("one".utf8).write(to: file)
        var ledger = EvidenceLedger()
        try ledger.record([file])
        try ledger.verifyUnchanged()
        try Data("two".utf8).write(to: file)
        #expect(throws: AcquisitionError.self) { try ledger.verifyUnchanged() }
    }

    @Test("one read for hash and copy: the recorded SHA-256 of each original is sha256sum's, and each copy holds the original's bytes")
    func hashedWhileCopied() throws {
        let folder = try TemporaryFolder("hashed-while-copied")
        let url = folder.path("default.store")
        // Several MiB on both files, so the 1 MiB chunks of the copy and its hash meet odd ends.
        let w = try StoreWriter(url: url, model: SampleModels.todo)
        try w.transaction { w in for n in 0..<3000 { try w.insert("TodoList", ["name": .string("\(n)-" + String(repeating: "\(n % 10)", count: 1500))]) } }
        try w.checkpoint()
        try w.transaction { w in for n in 0..<2000 { try w.insert("TodoList", ["name": .string("w\(n)-" + String(repeating: "w\(n % 7)", count: 900))]) } }
        try w.close(leavingWAL: true)
        let session = try EvidenceSession()
        defer { session.scratch.remove() }
        let copy = try session.workingCopy(of: url, options: OpenOptions(copyEvidence: true))
        #expect(!copy.readsInPlace)
        for (original, copied) in [(url.path, copy.databaseFile.path), (url.path + "-wal", copy.databaseFile.path + "-wal")] {
            #expect(try Data(contentsOf: URL(fileURLWithPath: copied)) == Data(contentsOf: URL(fileURLWithPath: original)), "\(copied)")
            let recorded = try #require(session.ledger.entry(for: original)?.sha256, "\(original) was hashed")
            #expect(recorded == (try Self.sha256sum(original)), "\(original): the hash taken while copying is the file's")
        }
        try session.finish()
    }

    /// coreutils' `sha256sum`: an implementation independent of libcrypto.
    static func sha256sum(_ path: String) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["sha256sum", path]
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return String(text.prefix(64))
    }

    @Test("SHA-256 known answers", arguments: [
        ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        ("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"),
    ])
    func sha256(_ input: String, _ expected: String) {
        #expect(SHA256.hex(Data(input.utf8)) == expected)
    }

    @Test("SHA-256 of a million 'a' fed in odd-sized pieces")
    func sha256Streaming() {
        var hasher = SHA256()
        let chunk = Data(repeating: UInt8(ascii: "a"), count: 999)
        var left = 1_000_000
        while left > 0 { let n = min(left, chunk.count); hasher.update(chunk.prefix(n)); left -= n }
        let hex = hasher.finalize().map { String(format: "%02x", $0) }.joined()
        #expect(hex == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }
}

@Suite("SHA-256 through libcrypto")
struct SHA256ImplementationTests {
    /// coreutils' sha256sum: an implementation that is not libcrypto, on the same bytes.
    static func sha256sum(_ bytes: [UInt8], in folder: TemporaryFolder, name: String) throws -> String {
        let file = folder.path(name)
        try Data(bytes).write(to: file)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["sha256sum", file.path]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: output, as: UTF8.self).split(separator: " ").first.map(String.init) ?? ""
    }

    static func bytes(_ length: Int, seed: UInt64) -> [UInt8] {
        var state = seed
        return PseudoRandomBytes.next(length, state: &state)
    }

    @Test("fed in uneven pieces, every length around block edges hashes as sha256sum does")
    func piecesAgreeWithSha256sum() throws {
        let folder = try TemporaryFolder("sha")
        for length in [0, 1, 55, 56, 63, 64, 65, 119, 120, 127, 128, 129, 1000, 4096, 100_003] {
            let bytes = Self.bytes(length, seed: UInt64(length) + 99)
            var hasher = SHA256()
            var i = 0
            while i < bytes.count {
                let n = min(bytes.count - i, 1 + (i * 7) % 97)
                hasher.update(bytes[i..<i + n])
                i += n
            }
            let ours = hasher.finalize().map { String(format: "%02x", $0) }.joined()
            #expect(ours == (try Self.sha256sum(bytes, in: folder, name: "\(length)")), "length \(length)")
        }
    }

    @Test("a copy of a hasher goes on from where the original was, and changes nothing in it")
    func copiesAreIndependent() throws {
        let folder = try TemporaryFolder("sha-copy")
        let start = Self.bytes(1000, seed: 1), left = Self.bytes(333, seed: 2), right = Self.bytes(77, seed: 3)
        var original = SHA256()
        original.update(start)
        var copy = original
        copy.update(right)
        original.update(left)
        let hex = { (h: inout SHA256) in h.finalize().map { String(format: "%02x", $0) }.joined() }
        #expect(hex(&original) == (try Self.sha256sum(start + left, in: folder, name: "left")))
        #expect(hex(&copy) == (try Self.sha256sum(start + right, in: folder, name: "right")))
    }
}

/// The library is public: a caller that lets go of a session after an error (the usual Swift
/// pattern, no `defer`) must not leave copies of the evidence on disk.
@Suite("scratch folders die with their owner")
struct ScratchLifetimeTests {
    @Test("a session dropped after a failed read leaves nothing in its parent")
    func droppedAfterThrow() throws {
        let parent = try TemporaryFolder("scratch-lifetime")
        let folder = try TemporaryFolder("scratch-lifetime-input")
        let bomb = folder.path("bomb.tar")
        // A real input whose extraction fails part way: an archive bigger than the limit allows.
        try Data(repeating: 0x41, count: 64 * 1024).write(to: folder.path("payload.sqlite"))
        let tar = Process()
        tar.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        tar.arguments = ["bsdtar", "-cf", bomb.path, "-C", folder.url.path, "payload.sqlite"]
        try tar.run()
        tar.waitUntilExit()
        func read() throws {
            let session = try EvidenceSession(scratchParent: parent.url)
            #expect(try FileManager.default.contentsOfDirectory(atPath: parent.url.path).isEmpty, "made on first use, not before")
            var limits = ArchiveLimits()
            limits.maxEntryBytes = 1024
            _ = try session.stores(from: [bomb.path], limits: limits)
        }
        #expect(throws: (any Error).self) { try read() }
        #expect(try FileManager.default.contentsOfDirectory(atPath: parent.url.path).isEmpty, "the scratch folder went with its session")
        #expect(ScratchRegistry.shared.live.allSatisfy { !$0.path.hasPrefix(parent.url.path) })
    }

    @Test("a folder kept with --keep-scratch stays after its owner goes")
    func keptStays() throws {
        let parent = try TemporaryFolder("scratch-kept")
        do { _ = try ScratchFolder(parent: parent.url, keep: true) }
        #expect(try FileManager.default.contentsOfDirectory(atPath: parent.url.path).count == 1)
    }
}

/// Each evidence byte is read at most twice: once for the hash and the copy, once for
/// the after-hash. A store's `-journal` and, with a hot journal, its main file alone are read
/// later than the copy; they must come from the working folder, never from the originals again.
@Suite("after the working copy is made, the originals are not read again")
struct OriginalsReadOnceTests {
    /// A rollback-journal database: 300 rows, then a transaction whose pages spill into the file.
    /// `hot`: copied while that transaction is open (the journal holds the originals); otherwise
    /// journal_mode=PERSIST after it commits (a journal whose zeroed header keeps the old pages).
    static func store(in folder: TemporaryFolder, hot: Bool) throws -> URL {
        let work = folder.path("work")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        let live = work.appendingPathComponent("Store.sqlite")
        let db = try Connection.open(path: live.path, mode: .create)
        try db.execute("PRAGMA page_size = 4096; PRAGMA journal_mode = \(hot ? "DELETE" : "PERSIST")")
        try db.execute("CREATE TABLE item (id INTEGER PRIMARY KEY, v TEXT)")
        try db.execute("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 300) INSERT INTO item SELECT i, 'row ' || i || ' ' || hex(randomblob(40)) FROM n")
        try db.execute("PRAGMA cache_size = 2")
        try db.execute("BEGIN IMMEDIATE")
        try db.execute("UPDATE item SET v = v || ' (edited)'")
        let evidence = folder.path("evidence")
        try FileManager.default.createDirectory(at: evidence, withIntermediateDirectories: true)
        let target = evidence.appendingPathComponent("Store.sqlite")
        if hot {
            for suffix in ["", "-journal"] { try FileManager.default.copyItem(atPath: live.path + suffix, toPath: target.path + suffix) }
            try db.execute("ROLLBACK")
        } else {
            try db.execute("COMMIT")
            for suffix in ["", "-journal"] { try FileManager.default.copyItem(atPath: live.path + suffix, toPath: target.path + suffix) }
        }
        return target
    }

    /// What SQLite reads in a copy of the main file alone (no journal beside it).
    static func mainAloneTruth(_ url: URL, in folder: TemporaryFolder) throws -> String? {
        let scratch = folder.path("truth-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        let copy = scratch.appendingPathComponent("alone.sqlite")
        try FileManager.default.copyItem(at: url, to: copy)
        let db = try Connection.open(path: copy.path, mode: .readOnly)
        return try db.scalar("SELECT count(*) || ':' || sum(v LIKE '%(edited)') || ':' || sum(length(v)) FROM item").string
    }

    @Test("a hot journal rolled back in the copy: the journal and the main file alone come from the working folder", arguments: [true, false])
    func originalsGone(hot: Bool) throws {
        let folder = try TemporaryFolder("read-once")
        let url = try Self.store(in: folder, hot: hot)
        let journalBytes = try Data(contentsOf: URL(fileURLWithPath: url.path + "-journal"))
        #expect(journalBytes.count > 4096, "the journal holds pages")
        let truth = try Self.mainAloneTruth(url, in: folder)
        // The copy is what this test is about (a journal SQLite would not call hot is read in place otherwise).
        var options = OpenOptions(copyEvidence: true)
        options.rollBackJournal = true
        let session = try EvidenceSession()
        let copy = try session.workingCopy(of: url, options: options)
        #expect(copy.rollsBackJournal == hot)
        // The originals go away once the copy is made: nothing below may need them.
        let away = folder.path("away")
        try FileManager.default.moveItem(at: url.deletingLastPathComponent(), to: away)
        let withJournal = try copy.open()
        #expect(try withJournal.scalar("SELECT count(*) FROM item").int == 300)
        if hot {
            #expect(try withJournal.scalar("SELECT sum(v LIKE '%(edited)') FROM item").int == 0, "rolled back in the copy")
        }
        #expect(copy.journalData == journalBytes, "the journal as it came")
        let mainOnly = try copy.openMainFileOnly()
        #expect(try mainOnly.scalar("SELECT count(*) || ':' || sum(v LIKE '%(edited)') || ':' || sum(length(v)) FROM item").string == truth)
        try FileManager.default.moveItem(at: away, to: url.deletingLastPathComponent())
        try session.finish()
    }
}

extension OriginalsReadOnceTests {
    @Test("a -wal of the wrong page size, left out of the copy, is still read from the working folder")
    func mismatchedWAL() throws {
        let folder = try TemporaryFolder("read-once-wal")
        func walStore(_ name: String, pageSize: Int) throws -> URL {
            let url = folder.path("\(name)/db.sqlite")
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            let db = try Connection.open(path: url.path, mode: .create)
            try db.execute("PRAGMA page_size = \(pageSize); PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0")
            try db.disableCheckpointOnClose()
            try db.execute("CREATE TABLE item (id INTEGER PRIMARY KEY, v TEXT)")
            try db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            try db.execute("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200) INSERT INTO item SELECT i, hex(randomblob(50)) FROM n")
            return url
        }
        let main = try walStore("main", pageSize: 4096)
        let other = try walStore("other", pageSize: 1024)
        let evidence = folder.path("evidence/db.sqlite")
        try FileManager.default.createDirectory(at: evidence.deletingLastPathComponent(), withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: main, to: evidence)
        try FileManager.default.copyItem(atPath: other.path + "-wal", toPath: evidence.path + "-wal")
        let walBytes = try Data(contentsOf: URL(fileURLWithPath: evidence.path + "-wal"))
        #expect(walBytes.count > 1024 * 10)
        var options = OpenOptions(copyEvidence: true)
        options.ignoreMismatchedWAL = true
        let session = try EvidenceSession()
        let copy = try session.workingCopy(of: evidence, options: options)
        #expect(copy.notes.contains { if case .walPageSizeMismatch = $0 { return true } else { return false } })
        let away = folder.path("away")
        try FileManager.default.moveItem(at: evidence.deletingLastPathComponent(), to: away)
        #expect(copy.walData == walBytes, "the -wal as it came, without the original")
        #expect(copy.wal?.pageSize == 1024)
        try FileManager.default.moveItem(at: away, to: evidence.deletingLastPathComponent())
        try session.finish()
    }
}

/// A store read in place is hashed on a thread of its own while it is read: the hash recorded is
/// still the file's (coreutils' `sha256sum`), asking for it waits, and a change made while the
/// hash is being taken is still caught at the end (its identity was taken first).
@Suite("hashes taken beside reading in place")
struct HashedBesideTests {
    @Test("the recorded SHA-256 of each file read in place is sha256sum's; the store hashes name them")
    func hashesAreTheFiles() throws {
        let folder = try TemporaryFolder("hashed-beside")
        let url = try WorkingCopyTests.storeWithWAL(in: folder)
        let session = try EvidenceSession()
        let stores = try session.stores(from: [url.path])
        #expect(stores.first?.copy.readsInPlace == true)
        for (path, suffix) in [(url.path, ""), (url.path + "-wal", "-wal"), (url.path + "-shm", "-shm")] {
            let expected = try WorkingCopyTests.sha256sum(path)
            #expect(session.ledger.entry(for: path)?.sha256 == expected, "\(path)")
            #expect(stores.first?.found.sha256[url.path + suffix] == expected, "\(path) as the store names it")
        }
        try session.finish()
    }

    @Test("a file rewritten with its own bytes while it is read in place fails the run (exit 3's error), whatever the hashes say")
    func changeWhileHashedBeside() throws {
        let folder = try TemporaryFolder("hashed-beside-change")
        let url = try WorkingCopyTests.storeWithWAL(in: folder)
        let session = try EvidenceSession()
        let stores = try session.stores(from: [url.path])
        _ = try stores.first?.copy.open().scalar("SELECT count(*) FROM ZTODOLIST")
        // The same bytes written again: the hashes agree, the status time does not.
        let bytes = try Data(contentsOf: URL(fileURLWithPath: url.path + "-wal"))
        try bytes.write(to: URL(fileURLWithPath: url.path + "-wal"))
        #expect(throws: AcquisitionError.self) { try session.finish() }
    }
}
