import Foundation
import SQLiteAccess
import StoreTestSupport
import Testing

/// `storelens wal` on every genuine store that has a `-wal`, against the WAL's own frame headers
/// (StoreTestSupport's independent reader), the `-shm`'s header, and SQLite on copies: the last
/// commit SQLite recovers, every commit frame SQLite accepts, and the rows each `--as-of` image
/// holds. No frame or commit count is typed here; the fixtures README's are not used.
@Suite("wal on every genuine store with a -wal")
struct RealStoreWALCommandTests {
    /// The store files beside a `-wal` in the real fixtures, or one placeholder that makes the test skip.
    static let stores: [String] = {
        guard let real = ProjectPaths.realFixtures(),
              let folders = try? FileManager.default.contentsOfDirectory(atPath: real.path) else { return ["(no real fixtures)"] }
        var found: [String] = []
        for folder in folders.sorted() {
            let dir = real.appendingPathComponent(folder)
            for name in ((try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []).sorted() where name.hasSuffix("-wal") {
                let main = String(name.dropLast(4))
                if FileManager.default.fileExists(atPath: dir.appendingPathComponent(main).path) { found.append(folder + "/" + main) }
            }
        }
        return found.isEmpty ? ["(no real fixtures)"] : found
    }()

    struct Transaction: Decodable { let number: Int; let commitFrame: Int; let frames: Int; let pages: [Int] }
    struct WAL: Decodable {
        let present: Bool
        let frames: Int
        let validFrames: Int
        let commits: Int
        let lastCommitFrame: Int
        let salt1: String?
        let salt2: String?
        let checkpointSequence: Int?
        let transactions: [Transaction]
    }
    struct SHM: Decodable { let present: Bool; let mxFrame: Int?; let agreesWithWal: Bool? }
    struct Store: Decodable { let wal: WAL; let shm: SHM }
    struct Report: Decodable { let stores: [Store] }

    static func hex(_ value: UInt32) -> String { "0x" + String(format: "%08x", value) }

    @Test("frames, commits, salts, pages per transaction and the -shm's agreement are the files' own; SQLite ends each commit where the report says",
          .enabled(if: ProjectPaths.hasRealFixtures, Comment(rawValue: ProjectPaths.realFixturesMissing)), arguments: stores)
    func walReport(_ relative: String) throws {
        let store = try #require(ProjectPaths.realFixtures()).appendingPathComponent(relative)
        let folder = store.deletingLastPathComponent()
        let before = try FolderSnapshot(folder)
        let walBytes = try Data(contentsOf: URL(fileURLWithPath: store.path + "-wal"))
        let result = try CLI.run(["wal", store.path, "--format", "json"])
        #expect(result.status == 0, "\(relative): \(result.stderr)")
        let report = try #require(try JSONDecoder().decode(Report.self, from: Data(result.stdout.utf8)).stores.first)

        guard let truth = WALFrameOracle(data: walBytes) else {
            // An empty or headerless -wal: SQLite ignores it, so must the report.
            #expect(report.wal.commits == 0 && report.wal.transactions.isEmpty, "\(relative): a -wal without a valid header has no commits")
            #expect(try FolderSnapshot(folder) == before)
            return
        }
        #expect(report.wal.present)
        #expect(report.wal.frames == truth.frameSlots, "\(relative) frames")
        #expect(report.wal.validFrames == truth.validFrames, "\(relative) valid frames")
        #expect(report.wal.commits == truth.commitFrames.count, "\(relative) commits")
        #expect(report.wal.lastCommitFrame == truth.lastCommitFrame, "\(relative) last commit")
        #expect(report.wal.salt1 == Self.hex(truth.salt1) && report.wal.salt2 == Self.hex(truth.salt2), "\(relative) salts")
        #expect(report.wal.checkpointSequence == Int(truth.checkpointSequence))
        #expect(report.wal.transactions.map(\.commitFrame) == truth.commitFrames, "\(relative) commit frames")
        #expect(report.wal.transactions.map(\.pages) == truth.pagesByCommit, "\(relative) pages per transaction")

        // SQLite itself, on copies: the last commit it recovers, and (for a handful of commits,
        // first, middle, last) that a WAL cut there ends exactly at that commit.
        #expect(try SQLiteOracle(copying: store).walLastCommitFrame() == truth.lastCommitFrame, "\(relative): SQLite's mxFrame")
        let sample = Array(Set([0, truth.commitFrames.count / 2, truth.commitFrames.count - 1])).sorted()
        #expect(try SQLiteOracle.disagreements(commitFrames: truth.commitFrames, of: store, checking: sample) == [], "\(relative)")

        if let shmData = try? Data(contentsOf: URL(fileURLWithPath: store.path + "-shm")), let shm = SharedMemoryOracle(data: shmData) {
            #expect(report.shm.present)
            #expect(report.shm.mxFrame == Int(shm.mxFrame), "\(relative) -shm mxFrame")
            #expect(report.shm.agreesWithWal == shm.agrees(with: truth), "\(relative) -shm agreement")
        }
        #expect(try FolderSnapshot(folder) == before, "\(relative): the originals stay byte-identical")
    }

    @Test("--as-of the middle commit writes the rows SQLite shows on a copy cut at that commit's frame",
          .enabled(if: ProjectPaths.hasRealFixtures, Comment(rawValue: ProjectPaths.realFixturesMissing)), arguments: stores)
    func asOfMiddle(_ relative: String) throws {
        let store = try #require(ProjectPaths.realFixtures()).appendingPathComponent(relative)
        guard let truth = try WALFrameOracle.read(URL(fileURLWithPath: store.path + "-wal")), !truth.commitFrames.isEmpty else { return }
        let before = try FolderSnapshot(store.deletingLastPathComponent())
        let commit = (truth.commitFrames.count + 1) / 2
        let out = try TemporaryFolder("real-as-of")
        let image = out.path("as-of.sqlite")
        let result = try CLI.run(["wal", store.path, "--as-of", String(commit), "--out", image.path])
        #expect(result.status == 0, "\(relative): \(result.stderr)")
        let copy = try SQLiteOracle(copying: store, wal: .frames(truth.commitFrames[commit - 1]))
        let written = try Connection.open(path: image.path, mode: .readOnly)
        let tables = try copy.rows("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name").compactMap { $0[0].string }
        #expect(try written.rows("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name").compactMap { $0[0].string } == tables)
        for table in tables {
            // A table SQLite cannot read here (a private FTS tokenizer, an R-tree) is skipped on both sides.
            guard let expected = try? copy.count(table) else { continue }
            #expect((try? written.scalar("SELECT count(*) FROM \(Identifier.quoted(table))").int) == expected, "\(relative) \(table) at commit \(commit)")
        }
        #expect(try FolderSnapshot(store.deletingLastPathComponent()) == before)
    }
}
