import Foundation
import SQLiteAccess
import StoreBuilder
import StoreFormats
import StoreTestSupport
import Testing

@Suite("check and repair commands")
struct RepairCommandTests {
    @Test("check finds, repair --plan plans, repair writes, check passes on the output; input unchanged")
    func roundTrip() throws {
        let folder = try TemporaryFolder("repair-cli")
        let url = try InvariantFixture.make(in: folder.url) { w in
            try w.executeRaw("UPDATE Z_PRIMARYKEY SET Z_MAX = 1 WHERE Z_NAME = 'Note'")
            try w.executeRaw("UPDATE ZATTACHMENT SET \(w.layout.column(entity: "Attachment", property: "note")!) = 999 WHERE Z_PK = 1")
        }
        let before = try FolderSnapshot(folder.url)
        let check = try CLI.run(["check", url.path, "--format", "json"])
        #expect(check.status == 1, "errors found")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(check.stdout.utf8)) as? [String: Any])
        #expect(((json["findings"] as? [[String: Any]]) ?? []).compactMap { $0["id"] as? String } == ["zmax-below-max-pk", "dangling-to-one"])

        let plan = try CLI.run(["repair", url.path, "--plan"])
        #expect(plan.status == 0)
        #expect(plan.stdout.contains("1. nullify-dangling-to-one"))
        #expect(plan.stdout.contains("2. raise-z-max"))
        #expect(plan.stdout.contains("nothing was written"))

        let out = try TemporaryFolder("repair-cli-out")
        let log = out.path("repair.json")
        let repair = try CLI.run(["repair", url.path, "--out", out.path("fixed.store").path, "--log", log.path])
        #expect(repair.status == 0, "\(repair.stderr)")
        #expect(repair.stdout.contains("verified"))
        let logJSON = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: log)) as? [String: Any])
        #expect(logJSON["written"] as? Bool == true)
        #expect(logJSON["outputSHA256"] as? String == (try SHA256.hexOfFile(at: out.path("fixed.store"))))
        #expect(((logJSON["plan"] as? [String: Any])?["actions"] as? [Any])?.count == 2)
        let recheck = try CLI.run(["check", out.path("fixed.store").path])
        #expect(recheck.status == 0, "\(recheck.stdout)")
        #expect(try FolderSnapshot(folder.url) == before)

        let again = try CLI.run(["repair", url.path, "--out", out.path("fixed.store").path])
        #expect(again.status == 2)
        #expect(again.stderr.contains("already exists"))
        let noOut = try CLI.run(["repair", url.path])
        #expect(noOut.status == 2)
        #expect(noOut.stderr.contains("--out"))
        let inPlace = try CLI.run(["repair", url.path, "--in-place"])
        #expect(inPlace.status == 2)
        #expect(inPlace.stderr.contains("--backup"))
    }

    @Test("--in-place --backup keeps a verified copy of the family, then replaces the store")
    func inPlace() throws {
        let folder = try TemporaryFolder("repair-inplace")
        let url = try InvariantFixture.make(in: folder.url) { try $0.executeRaw("UPDATE Z_PRIMARYKEY SET Z_MAX = 1 WHERE Z_NAME = 'Note'") }
        let originalHash = try SHA256.hexOfFile(at: url)
        let backup = try TemporaryFolder("repair-backup")
        let r = try CLI.run(["repair", url.path, "--in-place", "--backup", backup.url.path])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(try SHA256.hexOfFile(at: backup.path(url.lastPathComponent)) == originalHash)
        #expect(try SHA256.hexOfFile(at: url) != originalHash)
        #expect(try CLI.run(["check", url.path]).status == 0)
        #expect(!FileManager.default.fileExists(atPath: url.path + "-wal"))
    }

    /// A store whose last commit (two notes, a join row, an attachment) and damage (a Z_MAX that
    /// lags, a dangling attachment) live only in its `-wal`, and what SQLite must find changed
    /// between a WAL-applied copy of it and the repaired store.
    static func walStore(in folder: URL) throws -> (url: URL, expected: (Connection) throws -> Set<RowChange>) {
        let layout = try StoreLayout(model: InvariantFixture.model)
        let noteColumn = layout.column(entity: "Attachment", property: "note")!
        let url = try InvariantFixture.make(in: folder, leavingWAL: true) { w in
            try w.executeRaw("UPDATE Z_PRIMARYKEY SET Z_MAX = 1 WHERE Z_NAME = 'Note'")
            try w.executeRaw("UPDATE ZATTACHMENT SET \(noteColumn) = 999 WHERE Z_PK = 1")
        }
        return (url, { db in
            let ent = try #require(try db.scalar("SELECT Z_ENT FROM Z_PRIMARYKEY WHERE Z_NAME = 'Note'").int)
            let zOpt = try #require(try db.scalar("SELECT Z_OPT FROM ZATTACHMENT WHERE Z_PK = 1").int64)
            return [.changed("Z_PRIMARYKEY", "\(ent)", "Z_MAX", to: try db.scalar("SELECT max(Z_PK) FROM ZNOTE")),
                    .changed("ZATTACHMENT", "1", noteColumn, to: .null),
                    .changed("ZATTACHMENT", "1", layout.foreignEntityKeyColumn(entity: "Attachment", relationship: "note")!, to: .null),
                    .changed("ZATTACHMENT", "1", "Z_OPT", to: .integer(zOpt + 1))]
        })
    }

    /// The note titles of the single file at `url` read alone (a copy without any -wal).
    static func titlesAlone(_ url: URL) throws -> [String] {
        let copy = try TemporaryFolder("repair-alone")
        let db = try Connection.open(path: try SQLiteCopies.mainFileOnly(url, in: copy.url).path, mode: .readOnly)
        return try db.rows("SELECT ZTITLE FROM ZNOTE ORDER BY Z_PK").compactMap { $0[0].string }
    }

    @Test("repair --out of a store with a -wal: exactly the planned changes against a WAL-applied copy, the -wal's rows merged, the evidence byte-identical")
    func outWithWAL() throws {
        let folder = try TemporaryFolder("repair-cli-wal")
        let (url, expected) = try Self.walStore(in: folder.url)
        #expect(try SQLiteCopies.walFrames(URL(fileURLWithPath: url.path + "-wal")) > 0)
        let truth = try TemporaryFolder("repair-cli-wal-truth")
        let applied = try SQLiteCopies.walApplied(url, in: truth.url)
        #expect(try Self.titlesAlone(url).count + InvariantFixture.walTitles.count == (try Self.titlesAlone(applied).count), "the main file lacks the -wal's notes")
        let before = try FolderSnapshot(folder.url)
        let out = try TemporaryFolder("repair-cli-wal-out")
        let fixed = out.path("fixed.store")
        let r = try CLI.run(["repair", url.path, "--out", fixed.path])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(try FolderSnapshot(folder.url) == before, "the evidence (store, -wal, -shm, support folder) is byte-identical")
        let diff = try StoreDiff(before: applied, after: fixed)
        #expect(diff.schemaChanges.isEmpty, "\(diff.schemaChanges)")
        #expect(diff.changes == (try expected(try Connection.open(path: applied.path, mode: .readOnly))), "found: \(diff.listed)")
        #expect(try Self.titlesAlone(fixed) == (try Self.titlesAlone(applied)), "the output file alone holds the -wal's notes")
        #expect(try Set(FileManager.default.contentsOfDirectory(atPath: out.url.path)) == ["fixed.store", ".fixed_SUPPORT"], "nothing else beside the output")
    }

    @Test("--in-place on a store with a -wal: the backup is the family byte for byte, the store becomes exactly the planned changes of its WAL-applied self, one file")
    func inPlaceWithWAL() throws {
        let folder = try TemporaryFolder("repair-inplace-wal")
        let (url, expected) = try Self.walStore(in: folder.url)
        let family = try FolderSnapshot(folder.url)
        let truth = try TemporaryFolder("repair-inplace-wal-truth")
        let applied = try SQLiteCopies.walApplied(url, in: truth.url)
        let backup = try TemporaryFolder("repair-inplace-wal-backup")
        let r = try CLI.run(["repair", url.path, "--in-place", "--backup", backup.url.path])
        #expect(r.status == 0, "\(r.stderr)")
        // The backup: every file of the family (main, -wal, -shm), byte for byte.
        let names = try FileManager.default.contentsOfDirectory(atPath: backup.url.path).sorted()
        let familyFiles = family.entries.keys.map { URL(fileURLWithPath: $0).lastPathComponent }.filter { $0.hasPrefix("default.store") }
        #expect(names == familyFiles.sorted(), "every file of the family is backed up")
        for name in names {
            #expect(try SHA256.hexOfFile(at: backup.path(name)) == family.entries[folder.path(name).path]?.sha256, "\(name) backed up byte for byte")
        }
        #expect(names.contains("default.store-wal"), "the -wal is backed up")
        // The store: one file, nothing of the swap left.
        let left = try FileManager.default.contentsOfDirectory(atPath: folder.url.path).sorted()
        #expect(left == [".default_SUPPORT", "default.store"], "\(left)")
        let diff = try StoreDiff(before: applied, after: url)
        #expect(diff.schemaChanges.isEmpty, "\(diff.schemaChanges)")
        #expect(diff.changes == (try expected(try Connection.open(path: applied.path, mode: .readOnly))), "found: \(diff.listed)")
        #expect(try Self.titlesAlone(url) == (try Self.titlesAlone(applied)), "the -wal's notes are in the main file")
        // The support folder was left as it was.
        for (path, entry) in family.entries where path.contains("_SUPPORT") {
            #expect(try FolderSnapshot(folder.url).entries[path] == entry, "\(path)")
        }
        #expect(try CLI.run(["check", url.path]).status == 0)
    }
}
