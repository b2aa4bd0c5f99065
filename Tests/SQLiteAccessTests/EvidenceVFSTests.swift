import Foundation
import SQLiteAccess
import StoreTestSupport
import Testing

/// The read-only evidence VFS: SQLite reads a store family where it lies and changes nothing.
/// The truth is what SQLite itself reads from copies (the WAL applied; the main file alone), and
/// the proof of no change is the folder's bytes, names and times before and after.
// Serialized: the VFS's counters are the process's, and only this suite uses the VFS, so one
// test's counts are its own.
@Suite("the evidence VFS reads in place and writes nothing", .serialized)
struct EvidenceVFSTests {
    /// A store family as a device leaves it: a checkpointed base, then commits only in the `-wal`,
    /// copied while the writer still has it open (so no checkpoint ran), without its `-shm`.
    static func family(in folder: TemporaryFolder) throws -> URL {
        let live = folder.path("live.sqlite")
        let writer = try Connection.open(path: live.path, mode: .create)
        try writer.execute("PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0")
        try writer.disableCheckpointOnClose()
        try writer.execute("CREATE TABLE item (id INTEGER PRIMARY KEY, name TEXT); CREATE INDEX item_name ON item (name)")
        try writer.execute("BEGIN")
        for n in 0 ..< 500 { try writer.run("INSERT INTO item (name) VALUES (?)", [.text("base \(n)")]) }
        try writer.execute("COMMIT")
        _ = try writer.rows("PRAGMA wal_checkpoint(TRUNCATE)")
        for round in 0 ..< 5 {
            try writer.execute("BEGIN")
            for n in 0 ..< 40 { try writer.run("INSERT INTO item (name) VALUES (?)", [.text("wal \(round) \(n)")]) }
            try writer.run("DELETE FROM item WHERE id % 17 = ?", [.integer(Int64(round))])
            try writer.execute("COMMIT")
        }
        let evidence = folder.path("evidence")
        try FileManager.default.createDirectory(at: evidence, withIntermediateDirectories: true)
        for suffix in ["", "-wal"] {
            try FileManager.default.copyItem(at: URL(fileURLWithPath: live.path + suffix), to: evidence.appendingPathComponent("store.sqlite" + suffix))
        }
        return evidence.appendingPathComponent("store.sqlite")
    }

    /// What SQLite reads from a copy of the family (with the `-wal`, or without it).
    static func truth(_ store: URL, withWAL: Bool, _ sql: String) throws -> [[DatabaseValue]] {
        let folder = try TemporaryFolder("evidence-vfs-truth")
        let copy = folder.path("copy.sqlite")
        try FileManager.default.copyItem(at: store, to: copy)
        if withWAL { try FileManager.default.copyItem(at: URL(fileURLWithPath: store.path + "-wal"), to: URL(fileURLWithPath: copy.path + "-wal")) }
        let db = try Connection.open(path: copy.path, mode: .readWrite)
        try db.disableCheckpointOnClose()
        return try db.rows(sql).map(\.values)
    }

    @Test("both views are SQLite's own, the folder stays byte-identical, no -shm is made, nothing is asked to be written")
    func twoViews() throws {
        let folder = try TemporaryFolder("evidence-vfs")
        let store = try Self.family(in: folder)
        let before = try FolderSnapshot(store.deletingLastPathComponent())
        let refused = Connection.evidenceWritesRefusedOnThisThread, opened = Connection.evidenceFilesOpenedOnThisThread
        let query = "SELECT count(*), sum(id), group_concat(name, '|') FROM (SELECT id, name FROM item ORDER BY id)"

        do {
        let applied = try Connection.openEvidence(path: store.path, view: .walApplied, label: nil)
        #expect(try applied.rows(query).map(\.values) == Self.truth(store, withWAL: true, query))
        #expect(try applied.scalar("PRAGMA integrity_check").string == "ok")
        let byIndex = "SELECT name FROM item INDEXED BY item_name WHERE name >= 'wal 4' ORDER BY name"
        #expect(try applied.rows(byIndex).map(\.values) == Self.truth(store, withWAL: true, byIndex))
        let mainOnly = try Connection.openEvidence(path: store.path, view: .mainFileOnly, label: nil)
        #expect(try mainOnly.rows(query).map(\.values) == Self.truth(store, withWAL: false, query))
        #expect(try mainOnly.rows(query).map(\.values) != applied.rows(query).map(\.values), "the two views differ: the -wal holds commits")

        // SQLite's own temporary files (a temp table, on disk) are not evidence: they work.
        try applied.execute("PRAGMA temp_store = FILE; CREATE TEMP TABLE copied AS SELECT * FROM item")
        #expect(try applied.scalar("SELECT count(*) FROM temp.copied").int == Self.truth(store, withWAL: true, "SELECT count(*) FROM item").first?.first?.int)
        // A write is refused before it reaches the files.
        #expect(throws: SQLiteError.self) { try applied.execute("CREATE TABLE added (a)") }
        #expect(throws: SQLiteError.self) { try applied.execute("DELETE FROM item") }
        }  // both connections closed here
        #expect(Connection.evidenceFilesOpenedOnThisThread == opened + 3, "main file twice and the -wal once went through the VFS")
        #expect(Connection.evidenceWritesRefusedOnThisThread == refused, "SQLite asked to write nothing, even for the refused statements")
        #expect(try FolderSnapshot(store.deletingLastPathComponent()) == before, "the evidence must stay byte-identical, with no -shm beside it")
        #expect(!FileManager.default.fileExists(atPath: store.path + "-shm"))
    }

    @Test("two connections read the same family at once, each with its own wal-index")
    func twoReaders() throws {
        let folder = try TemporaryFolder("evidence-vfs-two")
        let store = try Self.family(in: folder)
        let before = try FolderSnapshot(store.deletingLastPathComponent())
        do {
            let a = try Connection.openEvidence(path: store.path, view: .walApplied, label: nil)
            let b = try Connection.openEvidence(path: store.path, view: .walApplied, label: nil)
            let count = "SELECT count(*) FROM item"
            #expect(try a.scalar(count).int == b.scalar(count).int)
            #expect(try a.scalar(count).int == Self.truth(store, withWAL: true, count).first?.first?.int)
        }
        #expect(try FolderSnapshot(store.deletingLastPathComponent()) == before)
    }

    @Test("a link is not followed, and a missing store is not created")
    func linksAndMissing() throws {
        let folder = try TemporaryFolder("evidence-vfs-links")
        let store = try Self.family(in: folder)
        let link = folder.path("link.sqlite")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: store)
        #expect(throws: SQLiteError.self) { _ = try Connection.openEvidence(path: link.path, view: .walApplied, label: nil).scalar("SELECT count(*) FROM item") }
        let missing = folder.path("missing.sqlite")
        #expect(throws: SQLiteError.self) { _ = try Connection.openEvidence(path: missing.path, view: .walApplied, label: nil).scalar("SELECT 1 FROM item") }
        #expect(!FileManager.default.fileExists(atPath: missing.path))
    }

    /// The two-view diff attaches one view to the other: both through the VFS, both SQLite's own.
    @Test("a view attached to the other reads through the VFS too, and changes nothing")
    func attachedView() throws {
        let folder = try TemporaryFolder("evidence-vfs-attach")
        let store = try Self.family(in: folder)
        let before = try FolderSnapshot(store.deletingLastPathComponent())
        let opened = Connection.evidenceFilesOpenedOnThisThread
        do {
            let db = try Connection.openEvidence(path: store.path, view: .walApplied, label: nil)
            try db.attachEvidence(store.path, view: .mainFileOnly, as: "checkpointed")
            let both = try db.rows("SELECT (SELECT count(*) FROM main.item), (SELECT count(*) FROM checkpointed.item)").first?.values
            let count = "SELECT count(*) FROM item"
            #expect(both == [try Self.truth(store, withWAL: true, count)[0][0], try Self.truth(store, withWAL: false, count)[0][0]])
            #expect(throws: SQLiteError.self) { try db.execute("DELETE FROM checkpointed.item") }
        }
        #expect(Connection.evidenceFilesOpenedOnThisThread == opened + 3, "the attached main file went through the VFS too")
        #expect(try FolderSnapshot(store.deletingLastPathComponent()) == before)
    }

    /// A `-wal` as devices and copies damage it: cut inside a frame, emptied, or with garbage
    /// after its header. The VFS shows what SQLite shows on copies (it applies the same valid
    /// prefix), and nothing is written.
    @Test("damaged -wal files read as SQLite reads copies of them", arguments: ["cut", "empty", "garbage"])
    func damagedWAL(kind: String) throws {
        let folder = try TemporaryFolder("evidence-vfs-damaged")
        let store = try Self.family(in: folder)
        let walURL = URL(fileURLWithPath: store.path + "-wal")
        var wal = try Data(contentsOf: walURL)
        switch kind {
        case "cut": wal = wal.prefix(wal.count - 1000)
        case "empty": wal = Data()
        default: wal.replaceSubrange(32 ..< min(wal.count, 32 + 5000), with: Data(repeating: 0x5A, count: min(wal.count - 32, 5000)))
        }
        try wal.write(to: walURL)
        let before = try FolderSnapshot(store.deletingLastPathComponent())
        let query = "SELECT count(*), sum(id) FROM item"
        do {
            let db = try Connection.openEvidence(path: store.path, view: .walApplied, label: nil)
            #expect(try db.rows(query).map(\.values) == Self.truth(store, withWAL: true, query), "\(kind)")
        }
        #expect(try FolderSnapshot(store.deletingLastPathComponent()) == before, "\(kind): the evidence must stay byte-identical")
    }

    /// Apple's stores: every table's row count through the VFS is SQLite's on copies, in both views.
    @Test("genuine stores: every table's rows through the VFS are SQLite's on copies, in both views",
          .enabled(if: ProjectPaths.hasRealFixtures, Comment(rawValue: ProjectPaths.realFixturesMissing)),
          arguments: ProjectPaths.realFixtureFolders())
    func genuineStores(folder: String) throws {
        let root = try #require(ProjectPaths.realFixtures())
        guard let store = try ProjectPaths.realStoreFile(in: root.appendingPathComponent(folder)) else { return }
        let before = try FolderSnapshot(store.deletingLastPathComponent())
        let hasWAL = FileManager.default.fileExists(atPath: store.path + "-wal")
        let times = Self.statusTimes(store)
        let tables = "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name"
        for (view, withWAL) in [(Connection.EvidenceView.walApplied, hasWAL), (.mainFileOnly, false)] {
            // Closed at the end of each pass (the connection goes out of scope).
            let db = try Connection.openEvidence(path: store.path, view: view, label: nil)
            let names = try db.rows(tables).compactMap { $0[0].string }
            #expect(names == (try Self.truth(store, withWAL: withWAL, tables).compactMap { $0.first?.string }), "\(folder) \(view)")
            for name in names {
                let count = "SELECT count(*) FROM \(Identifier.quoted(name))"
                // A private tokenizer's FTS table cannot be read anywhere but on its device: both sides fail alike.
                let mine = try? db.scalar(count).int
                let theirs = try? Self.truth(store, withWAL: withWAL, count).first?.first?.int
                #expect(mine == theirs, "\(folder) \(view) \(name)")
            }
        }
        #expect(try FolderSnapshot(store.deletingLastPathComponent()) == before, "\(folder): the evidence must stay byte-identical")
        // Not even a file's status changes (as root, SQLite's own VFS gives a -wal its database's
        // owner on open, which moves the status time: these files are opened by the VFS itself).
        #expect(Self.statusTimes(store) == times, "\(folder): a file's status time changed")
    }

    /// The status-change times (seconds and nanoseconds) of a family's main file and -wal.
    static func statusTimes(_ store: URL) -> [String] {
        [store.path, store.path + "-wal"].map { path in
            var st = stat()
            guard stat(path, &st) == 0 else { return "\(path): none" }
            #if os(Linux)
            return "\(path): \(st.st_ctim.tv_sec).\(st.st_ctim.tv_nsec)"
            #else
            return "\(path): \(st.st_ctimespec.tv_sec).\(st.st_ctimespec.tv_nsec)"
            #endif
        }
    }
}
