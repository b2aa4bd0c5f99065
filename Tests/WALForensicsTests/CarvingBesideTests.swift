import Acquisition
import Foundation
import SQLiteAccess
import StoreTestSupport
import Testing
@testable import WALForensics

/// `recover` carves on a second thread while it reads the commits (`BackgroundWork`) when the
/// evidence is a working copy; the answer must be the one the sequence gives, version for version,
/// on a corpus with every kind of carved record and on Apple's own stores.
@Suite("Carving beside the commits gives what carving after them gives")
struct CarvingBesideTests {
    /// Everything a version says, in the order listed.
    static func described(_ versions: [RecordVersion]) -> [String] {
        versions.map { v in
            "\(v.entity)/\(v.table)/\(v.entityNumber)/\(v.pkIsKnown ? String(v.pk) : "?")/\(v.state)/\(v.confidence)/\(v.uncertainColumns)/"
                + RecordRecovery.fingerprint(v.values) + "/\(v.sources)/\(v.finds)/\(v.historyDeletes)"
        }
    }

    static func versions(_ evidence: WALEvidence, filter: RecordRecovery.Filter, beside: Bool) throws -> [RecordVersion] {
        var out: [RecordVersion] = []
        try RecordRecovery.forEachVersion(evidence, filter: filter, carve: true, decoder: .init(supportFolder: nil),
                                          carvingBeside: beside) { out.append($0) }
        return out
    }

    static let filters: [RecordRecovery.Filter] = [
        .init(), .init(states: [.deleted, .carved]), .init(states: [.carved, .uncommitted]), .init(entity: "Item", states: [.superseded]),
    ]

    static func compare(_ store: URL, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let session = try EvidenceSession()
        defer { try? session.finish() }
        let evidence = try WALEvidence(copy: try session.workingCopy(of: store), displayPath: store.lastPathComponent)
        #expect(evidence.imageFolder != nil, "a working copy: recover carves beside the commits by default", sourceLocation: sourceLocation)
        for filter in filters {
            let after = try versions(evidence, filter: filter, beside: false)
            let beside = try versions(evidence, filter: filter, beside: true)
            #expect(described(beside) == described(after), "\(store.lastPathComponent), \(filter.states.map { "\($0)" } ?? "every state")",
                    sourceLocation: sourceLocation)
            if filter.entity == nil && filter.states == nil {
                #expect(!after.isEmpty, sourceLocation: sourceLocation)
            }
        }
    }

    @Test("a corpus with freed cells, freelist pages, committed and uncommitted frames")
    func corpus() throws {
        let ledger = CarvingTests.Ledger()
        var builder = try SQLiteWALBuilder("carve-beside") { c in
            try c.execute("PRAGMA secure_delete = OFF")
            try c.execute(CarvingTests.schema)
            try c.execute("BEGIN")
            for pk in Int64(1) ... 300 { try ledger.item(c, pk, version: 0) }
            for pk in Int64(1) ... 40 { try ledger.tag(c, pk) }
            try c.execute("COMMIT")
            try c.execute("BEGIN")
            for pk in Int64(1) ... 300 where pk % 7 == 0 && !(100 ... 220).contains(pk) { try ledger.delete(c, pk) }
            for pk in Int64(100) ... 220 { try ledger.delete(c, pk) }
            try c.execute("COMMIT")
        }
        for round in 0 ..< 8 {
            try builder.writer.execute("BEGIN")
            let pk = Int64(1 + round * 13 % 90)
            if let current = ledger.items[pk] { try ledger.item(builder.writer, pk, version: current.version + 1) }
            if ledger.items[Int64(230 + round)] != nil { try ledger.delete(builder.writer, Int64(230 + round)) }
            try builder.writer.execute("COMMIT")
        }
        try builder.writer.execute("PRAGMA cache_size = 10")
        try builder.writer.execute("BEGIN")
        for pk in Int64(1001) ... 1800 { try ledger.item(builder.writer, pk, version: 0, pending: true) }
        let copy = try builder.copy()
        try builder.writer.execute("ROLLBACK")

        // The corpus holds what the comparison is about: carved and uncommitted versions, and deletes.
        let session = try EvidenceSession()
        defer { try? session.finish() }
        let evidence = try WALEvidence(copy: try session.workingCopy(of: copy.db), displayPath: "carve-beside")
        let all = try Self.versions(evidence, filter: .init(), beside: true)
        for state in [RecordVersion.State.carved, .uncommitted, .deleted, .superseded] {
            #expect(all.contains { $0.state == state }, "the corpus has \(state) versions")
        }
        try Self.compare(copy.db)
    }

    @Test("Apple's stores with a WAL", .enabled(if: ProjectPaths.hasRealFixtures, Comment(rawValue: ProjectPaths.realFixturesMissing)),
          arguments: ["swiftdata-resources/default.store", "notes-macos15-wal/NoteStore.sqlite", "photos-macos10157-wal/Photos.sqlite"])
    func realStores(relative: String) throws {
        let store = try #require(ProjectPaths.realFixtures()).appendingPathComponent(relative)
        try Self.compare(store)
    }
}
