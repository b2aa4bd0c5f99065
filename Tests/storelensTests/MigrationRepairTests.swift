import Foundation
import SQLiteAccess
import StoreBuilder
import StoreTestSupport
import Testing

@Suite("repair --manifest")
struct MigrationRepairTests {
    @Test("imports the records never migrated, removes the double import, records history; the audit is then clean of them")
    func demo() throws {
        let folder = try TemporaryFolder("migration-repair")
        let container = folder.path("c")
        try DemoContainer.write(into: container)
        try Data(DemoContainer.manifest.utf8).write(to: folder.path("m.json"))
        let before = try FolderSnapshot(container)

        let plan = try CLI.run(["repair", container.path, "-m", folder.path("m.json").path, "--plan"])
        #expect(plan.status == 0, "\(plan.stderr)")
        #expect(plan.stdout.contains("remove-double-imports"))
        #expect(plan.stdout.contains("import-missing-records"))

        let out = try TemporaryFolder("migration-repair-out")
        let repaired = out.path("default.store")
        let run = try CLI.run(["repair", container.path, "-m", folder.path("m.json").path, "--record-history", "--out", repaired.path])
        #expect(run.status == 0, "\(run.stdout)\n\(run.stderr)")
        #expect(try FolderSnapshot(container) == before, "the input is untouched")

        let db = try Connection.open(path: repaired.path, mode: .readOnly)
        #expect(try db.scalar("SELECT count(*) FROM ZTODOITEM").int == 9, "7 + 3 imported − 1 duplicate")
        #expect(try db.scalar("SELECT count(*) FROM (SELECT ZID FROM ZTODOITEM GROUP BY ZID HAVING count(*) > 1)").int == 0)
        #expect(try db.scalar("SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_NAME = 'TodoItem'").int == 11)
        #expect(try db.scalar("SELECT ZTITLE FROM ZTODOITEM WHERE ZID = ?", [.blob(Data(withUnsafeBytes(of: UUID(uuidString: "00000000-0000-4000-8000-000000000009")!.uuid) { Array($0) }))]).string == "Renew the passport")
        #expect(try db.scalar("SELECT ZISCOMPLETED FROM ZTODOITEM WHERE ZTITLE = 'Renew the passport'").int == 1, "done → isCompleted carried over")
        #expect(try db.scalar("SELECT count(*) FROM ACHANGE c JOIN ATRANSACTION t ON t.Z_PK = c.ZTRANSACTIONID JOIN ATRANSACTIONSTRING s ON s.Z_PK = t.ZAUTHORTS WHERE s.ZNAME = 'storelens-repair'").int == 4)

        // Put the repaired store in a copy of the container: only the widget's policy violation remains.
        let after = folder.path("after")
        try FileManager.default.copyItem(at: container, to: after)
        for suffix in ["", "-wal", "-shm"] {
            try? FileManager.default.removeItem(atPath: after.path + "/Library/Application Support/default.store" + suffix)
        }
        try FileManager.default.copyItem(at: repaired, to: after.appendingPathComponent("Library/Application Support/default.store"))
        let audit = try CLI.run(["audit", after.path, "-m", folder.path("m.json").path, "--format", "json"])
        let json = try #require(try JSONSerialization.jsonObject(with: Data(audit.stdout.utf8)) as? [String: Any])
        let ids = ((json["findings"] as? [[String: Any]]) ?? []).compactMap { $0["id"] as? String }
        #expect(ids == ["writer-violation"], "\(ids)")
    }
}
