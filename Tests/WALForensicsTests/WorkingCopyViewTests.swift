import Acquisition
import Foundation
import SQLiteAccess
import StoreFormats
import StoreTestSupport
import Testing
@testable import WALForensics

/// `PointInTime.open` serves commit 0 and the last commit from the working copy's own views (the
/// main file opened alone, and the copy opened with its WAL) instead of writing an image; every
/// table must read exactly as the image of that commit (`DatabaseImage`, deserialized) reads.
@Suite("Working-copy views of commit 0 and the last commit, against the images")
struct WorkingCopyViewTests {
    /// Every row of every table, in rowid (or key) order, as one string per table.
    static func contents(_ connection: Connection) throws -> [String: String] {
        let tables = try connection.rows("SELECT name FROM sqlite_master WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL%' ORDER BY name")
            .compactMap { $0[0].string }
        var result: [String: String] = [:]
        for table in tables {
            // A table SQLite cannot read (a private FTS5 tokenizer's shadow tables) reads the same way in both.
            guard let rows = try? connection.rows("SELECT * FROM \(Identifier.quoted(table))") else {
                result[table] = "unreadable"
                continue
            }
            result[table] = "\(rows.count) rows: " + rows.map { $0.values.map { "\($0)" }.joined(separator: "|") }.joined(separator: "\n")
        }
        return result
    }

    static func compare(_ store: URL, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let session = try EvidenceSession()
        defer { try? session.finish() }
        let copy = try session.workingCopy(of: store)
        let evidence = try WALEvidence(copy: copy, displayPath: store.lastPathComponent)
        for commit in Set([0, evidence.commitCount]).sorted() {
            let view = try #require(PointInTime.workingCopyView(evidence, commit: commit),
                                    "\(store.lastPathComponent): the copy has a view of commit \(commit)", sourceLocation: sourceLocation)
            let image = try PointInTime.open(image: try PointInTime.image(evidence, commit: commit), name: store.lastPathComponent, commit: commit)
            let seen = try contents(view), truth = try contents(image)
            #expect(!truth.isEmpty, sourceLocation: sourceLocation)
            #expect(seen == truth, "\(store.lastPathComponent), commit \(commit): tables differ: \(Set(seen.keys).symmetricDifference(truth.keys).sorted()) \(truth.keys.filter { seen[$0] != truth[$0] }.sorted().prefix(5))",
                    sourceLocation: sourceLocation)
        }
    }

    @Test("Apple's stores with a WAL", .enabled(if: ProjectPaths.hasRealFixtures, Comment(rawValue: ProjectPaths.realFixturesMissing)),
          arguments: ["swiftdata-resources/default.store", "notes-macos15-wal/NoteStore.sqlite", "photos-macos1571-wal/Photos.sqlite",
                      "photos-macos10157-wal/Photos.sqlite", "ios17-derived-attributes/ChatModel.sqlite",
                      "plain-fts5-private-tokenizer/psi.sqlite"])
    func realStores(relative: String) throws {
        let real = try #require(ProjectPaths.realFixtures())
        try Self.compare(real.appendingPathComponent(relative))
    }

    @Test("a generated WAL with deletes, updates and overflow pages")
    func generated() throws {
        var builder = try SQLiteWALBuilder("views") { db in
            try db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, blob BLOB); CREATE INDEX t_name ON t (name)")
            for i in 1...300 { try db.run("INSERT INTO t VALUES (?, ?, randomblob(?))", [.integer(Int64(i)), .text("n\(i)"), .integer(Int64(i * 41 % 9000))]) }
        }
        try builder.commit("DELETE FROM t WHERE id % 3 = 0")
        try builder.commit("UPDATE t SET name = name || '-changed' WHERE id % 5 = 0")
        try builder.commit("INSERT INTO t VALUES (1000, 'late', randomblob(20000))")
        let copy = try builder.copy()
        // Through the safe path: hashed, copied to scratch, as every command reads a store.
        try Self.compare(copy.db)
    }
}
