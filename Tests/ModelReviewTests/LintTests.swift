import Acquisition
import CoreDataStore
import Findings
import Foundation
import ModelReview
import SQLiteAccess
import StoreBuilder
import StoreTestSupport
import Testing

/// Lints a store through the evidence path: hashed, copied, read on the copy, verified after.
func lintStore(_ url: URL, model: URL? = nil) throws -> [Finding] {
    let session = try EvidenceSession()
    defer { session.scratch.remove() }
    let copy = try session.workingCopy(of: url)
    let opened = try OpenedStore.open(copy, displayPath: url.path, xcodeModel: model)
    let findings = try CloudKitLint.lint(opened)
    try session.finish()
    return findings
}

extension Finding {
    /// The property names a lint finding lists (constraints, relationships or attributes).
    var listed: [String] {
        for key in ["constraints", "relationships", "attributes"] {
            if case .list(let items)? = evidence[key] { return items.map(\.text) }
        }
        return []
    }
}

@Suite("lint: CloudKit readiness and what the store shows")
struct LintTests {
    /// One entity per rule, so each finding can be traced to the model element that causes it.
    static let model = ModelDescription(entities: [
        EntityDescription("Clean",
                          attributes: [AttributeDescription("name", .string), AttributeDescription("count", .integer64, optional: false, default: .int(0)),
                                       AttributeDescription("photo", .binaryData, externalStorage: true)],
                          relationships: [RelationshipDescription("owner", to: "Owner", inverse: "cleans")]),
        EntityDescription("Owner",
                          attributes: [AttributeDescription("email", .string, optional: false)],
                          relationships: [RelationshipDescription("cleans", to: "Clean", inverse: "owner", toMany: true),
                                          RelationshipDescription("pets", to: "Pet", inverse: "owner", toMany: true, ordered: true, deleteRule: .deny)],
                          uniqueConstraints: [["email"]]),
        EntityDescription("Pet",
                          attributes: [AttributeDescription("picture", .binaryData), AttributeDescription("thumb", .binaryData)],
                          relationships: [RelationshipDescription("owner", to: "Owner", inverse: "pets", optional: false),
                                          RelationshipDescription("vet", to: "Clean")]),
    ])

    @Test("each rule on a builder-made model, with the severity the store's data decides")
    func rules() throws {
        let folder = try TemporaryFolder("lint")
        let url = folder.path("pets.store")
        let w = try StoreWriter(url: url, model: Self.model, options: .init(journalMode: .delete))
        try w.transaction(.init(bundleID: "com.example.pets", processName: "Pets")) { w in
            try w.insert("Owner", ["email": .string("a@example.com")])
        }
        try w.transaction(.init(bundleID: "com.example.pets.widget", processName: "PetsWidget")) { w in
            try w.insert("Pet", ["owner": .object(entity: "Owner", pk: 1), "picture": .data(Data(count: 200 * 1024)), "thumb": .data(Data(count: 10))])
            try w.insert("Owner", ["email": .string("b@example.com")])
        }
        try w.close()
        let findings = try lintStore(url)
        let got = Set(findings.map { "\($0.id) \($0.entity ?? "-") \($0.severity.rawValue) \($0.listed.joined(separator: ","))" })
        #expect(got == [
            "cloudkit-unique-constraint Owner error (email)",
            "cloudkit-required-attribute-without-default Owner error email",
            "cloudkit-deny-delete-rule Owner error pets",
            "cloudkit-ordered-relationship Owner error pets",
            "cloudkit-required-relationship Pet error owner",
            "cloudkit-missing-inverse Pet error vet → Clean",
            // 200 KB in one row of Pet.picture: a warning; Clean.photo has external storage.
            "binary-without-external-storage Pet warning picture,thumb",
            // Owner is written by the app and the widget; Pet by the widget alone.
            "several-writing-processes Owner info ",
        ], "\(findings.map(\.message))")
        // The sizes are SQLite's own.
        let copy = try TemporaryFolder("lint-truth")
        try FileManager.default.copyItem(at: url, to: copy.path("c.store"))
        let db = try Connection.open(path: copy.path("c.store").path, mode: .readOnly)
        let large = try db.scalar("SELECT count(*) FROM ZPET WHERE length(ZPICTURE) >= 102400 OR length(ZTHUMB) >= 102400").int
        let binary = try #require(findings.first { $0.id == "binary-without-external-storage" })
        #expect(binary.evidence["rows-at-least-100KB"] == large.map(EvidenceValue.int))
        let processes = try db.rows("""
            SELECT DISTINCT s.ZNAME FROM ACHANGE c JOIN ATRANSACTION t ON c.ZTRANSACTIONID = t.Z_PK JOIN ATRANSACTIONSTRING s ON t.ZPROCESSIDTS = s.Z_PK
            WHERE c.ZENTITY = (SELECT Z_ENT FROM Z_PRIMARYKEY WHERE Z_NAME = 'Owner')
            """).compactMap { $0[0].string }
        #expect(try #require(findings.first { $0.id == "several-writing-processes" }).evidence["processes"] == .list(processes.sorted().map(EvidenceValue.string)))
        #expect(findings.first?.severity == .error, "errors first")
    }

    @Test("a store without history, and an inferred model linted only for what it proves")
    func historyOffAndInferred() throws {
        let folder = try TemporaryFolder("lint")
        let url = folder.path("old.sqlite")
        let w = try StoreWriter(url: url, model: Self.model, options: .init(journalMode: .delete, modelCache: false, historyTracking: false))
        try w.insert("Owner", ["email": .string("a@example.com")])
        try w.close()
        let findings = try lintStore(url)
        let ids = Set(findings.map(\.id))
        #expect(ids.contains("history-off"))
        #expect(ids.contains("lint-model-inferred"))
        // The unique index proves the constraint; optionality and inverses are not guessed.
        #expect(findings.contains { $0.id == "cloudkit-unique-constraint" && $0.entity == "Owner" })
        #expect(!ids.contains("cloudkit-missing-inverse") && !ids.contains("cloudkit-required-relationship")
                && !ids.contains("cloudkit-required-attribute-without-default"))
        // With the Xcode model, the rules apply again.
        let xcode = try XcodeModelWriter.write(versions: [("Pets", Self.model)], to: folder.path("Pets.xcdatamodeld"))
        let withModel = try lintStore(url, model: xcode)
        #expect(withModel.contains { $0.id == "cloudkit-missing-inverse" && $0.entity == "Pet" })
        #expect(!withModel.contains { $0.id == "lint-model-inferred" })
    }

    @Test("a model alone: an Xcode model and a compiled model give the same findings")
    func modelAlone() throws {
        let folder = try TemporaryFolder("lint")
        let xcode = try XcodeModelReader.read(try XcodeModelWriter.write(versions: [("Pets", Self.model)], to: folder.path("Pets.xcdatamodeld")))
        let compiled = try CompiledModelReader.read(try CompiledModelWriter.writeBundle(Self.model, to: folder.path("Pets.momd")))
        #expect(compiled.source == .compiled)
        let a = CloudKitLint.lint(model: xcode, name: "x").map { "\($0.id) \($0.entity ?? "") \($0.severity)" }
        let b = CloudKitLint.lint(model: compiled, name: "c").map { "\($0.id) \($0.entity ?? "") \($0.severity)" }
        #expect(a == b)
        // Without a store the sizes are unknown: inline binary data is information only.
        #expect(a.contains("binary-without-external-storage Pet info"))
    }

    /// The genuine SwiftData store: every expected finding is derived from its cached model, read
    /// by the project's reader from Z_MODELCACHE on a copy, and from SQLite's own schema.
    @Test("swiftdata-resources: Item's unique name and Component.item without inverse, and only what its model proves",
          .enabled(if: ProjectPaths.hasRealFixtures, Comment(rawValue: ProjectPaths.realFixturesMissing)))
    func realResourcesStore() throws {
        let real = try #require(ProjectPaths.realFixtures()).appendingPathComponent("swiftdata-resources/default.store")
        let findings = try lintStore(real)

        let session = try EvidenceSession()
        defer { session.scratch.remove() }
        let connection = try session.workingCopy(of: real).open()
        let model = try #require(try ModelCacheReader.read(connection))
        let indexes = Set(try connection.rows("SELECT name FROM sqlite_master WHERE type = 'index'").compactMap { $0[0].string })

        var expected: Set<String> = []
        for e in model.entities {
            // @Attribute(.unique) on Item.name: the constraint is in the model and SQLite holds its index.
            for tuple in e.uniqueConstraints {
                #expect(indexes.contains("Z_\(e.name)_UNIQUE_\(tuple.joined(separator: "_"))"))
                expected.insert("cloudkit-unique-constraint \(e.name) (\(tuple.joined(separator: ", ")))")
            }
            // Component.item is declared `item: Item?` with no inverse: _NSInverseRelationshipName is absent.
            let noInverse = e.relationships.filter { $0.inverse == nil }.map { "\($0.name) → \($0.destination)" }
            if !noInverse.isEmpty { expected.insert("cloudkit-missing-inverse \(e.name) \(noInverse.joined(separator: ","))") }
            // CraftingRecipe.requiredComponents is `[Component]`, not optional: the cache says so.
            let required = e.relationships.filter { !$0.isOptional }.map(\.name)
            if !required.isEmpty { expected.insert("cloudkit-required-relationship \(e.name) \(required.joined(separator: ","))") }
            // Item.name is `var name: String` with no default in the model (Component's count and id have `= 1`, `= UUID()`).
            let noDefault = e.attributes.filter { !$0.isOptional && $0.defaultValue == nil }.map(\.name)
            if !noDefault.isEmpty { expected.insert("cloudkit-required-attribute-without-default \(e.name) \(noDefault.joined(separator: ","))") }
            #expect(!e.relationships.contains { $0.deleteRule == .deny || $0.isOrdered })
            #expect(!e.attributes.contains { $0.type == .binary || $0.isTransformable })
        }
        #expect(expected.contains("cloudkit-unique-constraint Item (name)"))
        #expect(expected.contains("cloudkit-missing-inverse Component item → Item"))
        // History is on and one process wrote every transaction (SQLite's count), so no history finding.
        let processes = try connection.scalar("SELECT count(DISTINCT coalesce(ZPROCESSIDTS, ZPROCESSID)) FROM ATRANSACTION").int
        #expect(processes == 1)
        let got = Set(findings.map { "\($0.id) \($0.entity ?? "-") \($0.listed.joined(separator: ","))" })
        #expect(got == expected, "\(findings.map(\.message))")
    }
}
