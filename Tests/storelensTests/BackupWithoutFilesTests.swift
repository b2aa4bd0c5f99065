import Foundation
import StoreFormats
import StoreTestSupport
import Testing

/// A backup's Manifest.db copied without the folders beside it is a common mistake: every command
/// must say that the files are missing, not that the container holds no Library folder.
@Suite("a backup whose files did not come with it")
struct BackupWithoutFilesTests {
    static var folder: URL? { ProjectPaths.realFixtures()?.appendingPathComponent("backup-manifest-db") }

    @Test("every store command says the backup's files are missing, with the count Manifest.db gives; nothing changes",
          .enabled(if: BackupWithoutFilesTests.folder.map { FileManager.default.fileExists(atPath: $0.path) } ?? false,
                   Comment(rawValue: ProjectPaths.realFixturesMissing)))
    func saysFilesAreMissing() throws {
        let backup = try #require(Self.folder)
        let before = try FolderSnapshot(backup)
        // How many files Manifest.db lists, by SQLite on a copy: the count said can be no more.
        let scratch = try TemporaryFolder("lone-manifest")
        try FileManager.default.copyItem(at: backup.appendingPathComponent("Manifest.db"), to: scratch.path("Manifest.db"))
        let counted = Process()
        counted.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        counted.arguments = ["sqlite3", scratch.path("Manifest.db").path, "SELECT count(*) FROM Files WHERE flags = 1"]
        let pipe = Pipe()
        counted.standardOutput = pipe
        try counted.run()
        let files = Int(String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
        counted.waitUntilExit()
        #expect(files > 0)
        // scan lists each missing file; the error's count must be that list's length.
        let scan = try CLI.run(["scan", backup.path, "--format", "json"])
        #expect(scan.status == 0, "\(scan.stderr)")
        let object = try JSONSerialization.jsonObject(with: Data(scan.stdout.utf8)) as? [String: Any]
        let skipped = object?["skipped"] as? [[String: Any]] ?? []
        let missing = skipped.filter { ($0["reason"] as? String)?.contains("missing from the backup") == true }.count
        #expect(missing > 0 && missing <= files, "scan lists \(missing) missing of \(files) files")
        for command in [["inspect"], ["check"], ["history"], ["wal"], ["recover"], ["schema"]] {
            let run = try CLI.run(command + [backup.path])
            #expect(run.status == 2, "\(command): \(run.stderr)")
            #expect(run.stderr.contains("lists \(missing) files, but none of them is in the folder"), "\(command): \(run.stderr)")
            #expect(!run.stderr.contains("Library folder"), "\(command): \(run.stderr)")
        }
        #expect(try FolderSnapshot(backup) == before)
    }
}
