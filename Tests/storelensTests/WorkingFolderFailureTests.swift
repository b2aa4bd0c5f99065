import Foundation
import StoreBuilder
import StoreTestSupport
import Testing

/// Our own failures (a full or unwritable TMPDIR) are reported as ours, exit 3, and never as a
/// finding about the evidence.
@Suite("a full or unwritable working folder is storelens' failure, not the evidence's", .serialized)
struct WorkingFolderFailureTests {
    /// Words that blame the evidence: none may appear when the failure is ours.
    static let blamesEvidence = ["does not appear to belong", "damaged", "wal-may-not-belong", "\"sqlite\"", "plausible but wrong"]

    @Test("every command, with TMPDIR filling up at every point: the same answer as with room, or exit 3 saying the working folder is full",
          .enabled(if: SmallTmpfs.available, Comment(rawValue: SmallTmpfs.unavailable)))
    func fullTMPDIR() throws {
        let folder = try TemporaryFolder("full-tmpdir")
        let store = try SampleStores.demo(in: folder)
        let out = try TemporaryFolder("full-tmpdir-out")
        let before = try FolderSnapshot(folder.url)
        let family = ["", "-wal"].map { fileSize(store.path + $0) }.reduce(0, +)
        let commands: [[String]] = [
            ["wal", store.path], ["wal", store.path, "--format", "json"], ["wal", store.path, "--diff"],
            ["inspect", store.path, "--format", "json"], ["check", store.path], ["rows", store.path, "TodoItem"],
            // recover writes its carved records into a scratch file in the working folder.
            ["recover", store.path, "--format", "jsonl"],
        ]
        var expected: [String: String] = [:]
        for command in commands {
            let roomy = try BoundedRun.run(command)
            #expect(roomy.status <= 1, "\(command): \(roomy.stderr)")
            expected[command.joined(separator: " ")] = roomy.stdout
        }
        var sawFull = 0, sawFine = 0
        // From too small for the copies to roomy enough for every image.
        for size in stride(from: family / 2, through: family * 3, by: max(4096, family / 6)) {
            let tmpfs = try SmallTmpfs(bytes: size)
            for command in commands + [["repair", store.path, "--out", out.path("r-\(size).store").path]] {
                let run = try BoundedRun.run(command, environment: ["TMPDIR": tmpfs.url.path])
                let label = "\(command.joined(separator: " ")) with \(size) bytes: \(run.status) \(run.stderr)"
                #expect(!run.crashed, "\(label)")
                if run.status == 3 && run.stderr.contains("working folder") {
                    sawFull += 1
                    #expect(run.stderr.contains("is full") || run.stderr.contains("failed"), "\(label)")
                    #expect(run.stderr.contains("storelens' own failure"), "\(label)")
                    #expect(run.stderr.split(separator: "\n").count == 1, "\(label)")
                    for word in Self.blamesEvidence { #expect(!run.stderr.contains(word), "\(label)") }
                } else {
                    sawFine += 1
                    #expect(run.status <= 1, "\(label)")
                    if let answer = expected[command.joined(separator: " ")] {
                        #expect(run.stdout == answer, "with room to spare the answer is the same: \(label)")
                    }
                }
                #expect(try FileManager.default.contentsOfDirectory(atPath: tmpfs.url.path).isEmpty, "scratch removed: \(label)")
            }
        }
        #expect(sawFull > 0 && sawFine > 0, "the sizes tried cover both a full and a roomy working folder")
        #expect(try FolderSnapshot(folder.url) == before)
    }

    @Test("a read-only TMPDIR: read in place, no working folder is needed; a copy is exit 3, one sentence saying the working folder cannot be written",
          .enabled(if: geteuid() != 0 || SmallTmpfs.available, Comment(rawValue: "root ignores permissions and " + SmallTmpfs.unavailable)))
    func readOnlyTMPDIR() throws {
        let folder = try TemporaryFolder("ro-tmpdir")
        let store = try SampleStores.demo(in: folder)
        // Root ignores permissions: it gets a read-only mount (EROFS) instead of a 0555 folder (EACCES).
        let tmpfs: SmallTmpfs? = geteuid() == 0 && SmallTmpfs.available ? try SmallTmpfs(bytes: 1 << 20, readOnly: true) : nil
        let readOnly = try TemporaryFolder("ro-tmpdir-folder")
        if tmpfs == nil { chmod(readOnly.url.path, 0o555) }
        defer { chmod(readOnly.url.path, 0o755) }
        let tmpdir = tmpfs?.url.path ?? readOnly.url.path
        for command in [["wal", store.path], ["inspect", store.path], ["repair", store.path, "--plan"]] {
            let inPlace = try BoundedRun.run(command, environment: ["TMPDIR": tmpdir])
            #expect(inPlace.status == 0, "read in place: \(command): \(inPlace.stderr)")
            let run = try BoundedRun.run(command + ["--copy"], environment: ["TMPDIR": tmpdir])
            #expect(run.status == 3, "\(command): \(run.stderr)")
            #expect(run.stderr.contains("the working folder \(tmpdir) cannot be written"), "\(command): \(run.stderr)")
            #expect(run.stderr.split(separator: "\n").count == 1, "\(command): \(run.stderr)")
        }
    }
}

/// The size of a file, 0 when it is missing.
private func fileSize(_ path: String) -> Int {
    ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.intValue ?? 0
}
