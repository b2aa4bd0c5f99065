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

    @Test("a repair killed part-way leaves the input untouched and nothing under the output's name", arguments: [0.05, 0.15, 0.4, 0.8])
    func killed(_ delay: Double) throws {
        let folder = try TemporaryFolder("repair-kill")
        let url = folder.path("big.store")
        do {
            let w = try StoreWriter(url: url, model: BenchCorpus.model)
            try w.transaction(nil) { w in
                for i in 0..<3000 { try w.insert("Note", ["title": .string("note \(i)"), "body": .string(String(repeating: "x", count: 400))]) }
            }
            try w.executeRaw("UPDATE Z_PRIMARYKEY SET Z_MAX = 1 WHERE Z_NAME = 'Note'")
            try w.close()
        }
        let before = try FolderSnapshot(folder.url)
        let out = try TemporaryFolder("repair-kill-out")
        let target = out.path("fixed.store")
        let process = Process()
        process.executableURL = ProjectPaths.executable()
        process.arguments = ["repair", url.path, "--out", target.path]
        // A killed process cannot remove its working folder: give it one that this test removes.
        let scratch = try TemporaryFolder("repair-kill-scratch")
        process.environment = ProcessInfo.processInfo.environment.merging(["TMPDIR": scratch.url.path]) { $1 }
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        usleep(useconds_t(delay * 1_000_000))
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        #expect(try FolderSnapshot(folder.url) == before, "the input is untouched")
        if FileManager.default.fileExists(atPath: target.path) {
            // The output only appears once verified: whatever exists under the final name is complete.
            let recheck = try CLI.run(["check", target.path])
            #expect(recheck.status == 0, "never a half-written file under the final name: \(recheck.stdout)")
        }
    }
}
