import Acquisition
import CoreDataStore
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
        try RecordRecovery.forEachVersion(evidence, filter: filter, carve: true, decoder: ValueDecoder(),
                                          carvingBeside: beside) { out.append($0) }
        return out
    }

    static let filters: [RecordRecovery.Filter] = [
        .init(), .init(states: [.deleted, .carved]), .init(states: [.carved, .uncommitted]), .init(entity: "Item", states: [.superseded]),
    ]

    /// On Apple's stores (57 entities in Photos, each decoded from its model cache): every version, and the states carving adds
    /// to; each filter's own path is compared on the corpus, which has every kind of version.
    static let realStoreFilters: [RecordRecovery.Filter] = [.init(), .init(states: [.deleted, .carved])]

    static func compare(_ store: URL, filters: [RecordRecovery.Filter] = filters, sourceLocation: SourceLocation = #_sourceLocation) throws {
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

    @Test("the carving corpus: freed cells, freelist pages, committed, uncommitted and older-generation frames")
    func corpus() throws {
        let (_, copy, builder) = try CarvingCorpus.makeWAL("carve-beside")
        defer { withExtendedLifetime(builder) {} }
        // The corpus holds what the comparison is about: carved, uncommitted and superseded versions
        // (its deletes were checkpointed with the older generation; the SwiftData store below has
        // records a commit deleted).
        let session = try EvidenceSession()
        defer { try? session.finish() }
        let evidence = try WALEvidence(copy: try session.workingCopy(of: copy.db), displayPath: "carve-beside")
        let all = try Self.versions(evidence, filter: .init(), beside: true)
        for state in [RecordVersion.State.carved, .uncommitted, .superseded] {
            #expect(all.contains { $0.state == state }, "the corpus has \(state) versions")
        }
        try Self.compare(copy.db)
    }

    @Test("Apple's stores with a WAL", .enabled(if: ProjectPaths.hasRealFixtures, Comment(rawValue: ProjectPaths.realFixturesMissing)),
          arguments: ["swiftdata-resources/default.store", "notes-macos15-wal/NoteStore.sqlite", "photos-macos10157-wal/Photos.sqlite"])
    func realStores(relative: String) throws {
        let store = try #require(ProjectPaths.realFixtures()).appendingPathComponent(relative)
        try Self.compare(store, filters: Self.realStoreFilters)
    }
}
