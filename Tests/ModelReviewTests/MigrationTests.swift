import Acquisition
import CoreDataStore
import Findings
import Foundation
import ModelReview
import SQLiteAccess
import StoreBuilder
import StoreTestSupport
import Testing

/// A small library model, version 1, and the rows every hop starts from. Each rule of the
/// migration table gets its own version 2 (a mutation of this one) and one hop.
enum LibraryV1 {
    static let model = ModelDescription(entities: [
        EntityDescription("Author",
                          attributes: [AttributeDescription("name", .string, optional: false),
                                       AttributeDescription("nickname", .string)],
                          relationships: [RelationshipDescription("books", to: "Book", inverse: "author", toMany: true),
                                          RelationshipDescription("pinned", to: "Shelf")]),
        EntityDescription("Book",
                          attributes: [AttributeDescription("title", .string, optional: false),
                                       AttributeDescription("subtitle", .string),
                                       AttributeDescription("isbn", .string),
                                       AttributeDescription("code", .string),
                                       AttributeDescription("format", .string, optional: false, default: .string("paper")),
                                       AttributeDescription("pages", .integer64),
                                       AttributeDescription("cover", .binaryData)],
                          relationships: [RelationshipDescription("author", to: "Author", inverse: "books", optional: false),
                                          RelationshipDescription("shelf", to: "Shelf", inverse: "books")],
                          fetchIndexes: [FetchIndexDescription("byTitle", properties: ["title"])]),
        EntityDescription("Shelf",
                          attributes: [AttributeDescription("label", .string)],
                          relationships: [RelationshipDescription("books", to: "Book", inverse: "shelf", toMany: true)],
                          uniqueConstraints: [["label"]]),
    ], versionIdentifiers: ["1"])

    /// Two authors, four books (two share an ISBN, one has none; codes that an integer type
    /// cannot hold: "x7", and 3000000000 outside Integer 32), one shelf holding book 4.
    static func fill(_ w: StoreWriter) throws {
        try w.insert("Author", ["name": .string("Ann")])
        try w.insert("Author", ["name": .string("Bob")])
        try w.insert("Shelf", ["label": .string("top")])
        let ann = BuilderValue.object(entity: "Author", pk: 1), bob = BuilderValue.object(entity: "Author", pk: 2)
        try w.insert("Book", ["title": .string("A"), "subtitle": .string("first"), "isbn": .string("111"), "code": .string("42"),
                              "format": .string("paper"), "pages": .int(10), "author": ann])
        try w.insert("Book", ["title": .string("B"), "subtitle": .string("second"), "isbn": .string("111"), "code": .string("x7"),
                              "format": .string("paper"), "author": ann])
        try w.insert("Book", ["title": .string("C"), "isbn": .string("222"), "code": .string("7"), "format": .string("paper"), "author": bob])
        try w.insert("Book", ["title": .string("D"), "code": .string("3000000000"), "format": .string("paper"), "author": bob,
                              "shelf": .object(entity: "Shelf", pk: 1)])
    }
}

/// Edits of a model description, by entity and property name.
extension ModelDescription {
    mutating func edit(_ entity: String, _ body: (inout EntityDescription) -> Void) {
        if let i = entities.firstIndex(where: { $0.name == entity }) { body(&entities[i]) }
    }
}
extension EntityDescription {
    mutating func attribute(_ name: String, _ body: (inout AttributeDescription) -> Void) {
        if let i = attributes.firstIndex(where: { $0.name == name }) { body(&attributes[i]) }
    }
    mutating func relationship(_ name: String, _ body: (inout RelationshipDescription) -> Void) {
        if let i = relationships.firstIndex(where: { $0.name == name }) { body(&relationships[i]) }
    }
}

/// Builds the old store and the target, and plans the hop, all on the library's public API.
struct HopFixture {
    let folder: TemporaryFolder
    let old: URL

    init(old model: ModelDescription = LibraryV1.model, fill: (StoreWriter) throws -> Void = LibraryV1.fill) throws {
        folder = try TemporaryFolder("migration")
        old = folder.path("old.store")
        let w = try StoreWriter(url: old, model: model, options: .init(journalMode: .delete))
        try fill(w)
        try w.close()
    }

    /// An empty store of `model`: its cached model is the target.
    func targetStore(_ model: ModelDescription, name: String = "new.store") throws -> URL {
        let url = folder.path(name)
        try StoreWriter(url: url, model: model, options: .init(journalMode: .delete)).close()
        return url
    }

    func plan(to target: ModelDescription, tweak: ((inout StoreModel) -> Void)? = nil) throws -> MigrationPlan {
        let url = try targetStore(target)
        guard let tweak else { return try MigrationPlanner.plan(inputs: [old.path], to: url.path) }
        // Builder models cannot say everything (transient attributes): the target's decoded model is edited.
        let session = try EvidenceSession()
        defer { session.scratch.remove() }
        var loaded = try MigrationTarget.load(url.path, session: session)
        var model = loaded.model
        tweak(&model)
        loaded = MigrationTarget(model: model, name: loaded.name)
        let copy = try session.workingCopy(of: old)
        let opened = try OpenedStore.open(copy, displayPath: old.path)
        let plan = try MigrationPlanner.plan([opened], to: loaded)
        try session.finish()
        return plan
    }

    /// Primary keys SQLite itself returns for `sql`, on a copy of the old store (never the store the planner read).
    func keys(_ sql: String) throws -> [Int] {
        let copy = try TemporaryFolder("migration-truth")
        let url = copy.path("copy.store")
        try FileManager.default.copyItem(at: old, to: url)
        let db = try Connection.open(path: url.path, mode: .readOnly)
        return try db.rows(sql).compactMap { $0[0].int }
    }
}

@Suite("migration: every rule of the table, one hop each, against the data")
struct MigrationTests {
    struct Case: Sendable, CustomStringConvertible {
        let rule: MigrationRule
        let entity: String
        let severity: Finding.Severity
        /// SQL whose Z_PKs are the rows the finding must count and list, on the old store.
        let truth: String?
        let edit: @Sendable (inout ModelDescription) -> Void
        var tweak: (@Sendable (inout StoreModel) -> Void)? = nil
        var description: String { "\(rule.id) (\(severity.rawValue))" }
    }

    static let cases: [Case] = [
        Case(rule: .entityAdded, entity: "Tag", severity: .info, truth: nil) { m in m.entities.append(EntityDescription("Tag", attributes: [AttributeDescription("name", .string)])) },
        Case(rule: .entityRemoved, entity: "Shelf", severity: .error, truth: "SELECT Z_PK FROM ZSHELF ORDER BY Z_PK") { m in
            m.entities.removeAll { $0.name == "Shelf" }
            m.edit("Book") { $0.relationships.removeAll { $0.name == "shelf" } }
            m.edit("Author") { $0.relationships.removeAll { $0.name == "pinned" } }
        },
        Case(rule: .entityRenamed, entity: "Rack", severity: .info, truth: nil) { m in renameShelf(&m, identifier: true) },
        Case(rule: .probableEntityRename, entity: "Rack", severity: .error, truth: "SELECT Z_PK FROM ZSHELF ORDER BY Z_PK") { m in renameShelf(&m, identifier: false) },
        Case(rule: .entityParentChanged, entity: "Shelf", severity: .error, truth: nil) { m in
            m.entities.append(EntityDescription("Furniture", attributes: [AttributeDescription("material", .string)]))
            m.edit("Shelf") { $0.parent = "Furniture" }
        },
        Case(rule: .attributeAddedOptional, entity: "Book", severity: .info, truth: nil) { m in m.edit("Book") { $0.attributes.append(AttributeDescription("edition", .string)) } },
        Case(rule: .attributeAddedDefault, entity: "Book", severity: .info, truth: nil) { m in
            m.edit("Book") { $0.attributes.append(AttributeDescription("language", .string, optional: false, default: .string("en"))) }
        },
        Case(rule: .attributeAddedRequired, entity: "Book", severity: .error, truth: "SELECT Z_PK FROM ZBOOK ORDER BY Z_PK") { m in
            m.edit("Book") { $0.attributes.append(AttributeDescription("publisher", .string, optional: false)) }
        },
        Case(rule: .attributeRemoved, entity: "Book", severity: .error, truth: "SELECT Z_PK FROM ZBOOK WHERE ZSUBTITLE IS NOT NULL ORDER BY Z_PK") { m in
            m.edit("Book") { $0.attributes.removeAll { $0.name == "subtitle" } }
        },
        Case(rule: .attributeRenamed, entity: "Book", severity: .info, truth: nil) { m in
            m.edit("Book") { $0.attribute("subtitle") { $0.name = "tagline"; $0.renamingIdentifier = "subtitle" } }
        },
        Case(rule: .probableRename, entity: "Book", severity: .error, truth: "SELECT Z_PK FROM ZBOOK WHERE ZSUBTITLE IS NOT NULL ORDER BY Z_PK") { m in
            m.edit("Book") { $0.attribute("subtitle") { $0.name = "tagline" } }
        },
        // The truth, in SQLite's terms: text that does not survive CAST to INTEGER and back, or lies outside Integer 32.
        Case(rule: .attributeTypeChanged, entity: "Book", severity: .error,
             truth: "SELECT Z_PK FROM ZBOOK WHERE ZCODE IS NOT NULL AND NOT (CAST(CAST(ZCODE AS INTEGER) AS TEXT) = ZCODE AND CAST(ZCODE AS INTEGER) BETWEEN -2147483648 AND 2147483647) ORDER BY Z_PK") { m in
            m.edit("Book") { $0.attribute("code") { $0.type = .integer32 } }
        },
        Case(rule: .attributeMadeOptional, entity: "Book", severity: .info, truth: nil) { m in m.edit("Book") { $0.attribute("title") { $0.isOptional = true } } },
        Case(rule: .attributeMadeRequiredDefault, entity: "Book", severity: .warning, truth: "SELECT Z_PK FROM ZBOOK WHERE ZISBN IS NULL ORDER BY Z_PK") { m in
            m.edit("Book") { $0.attribute("isbn") { $0.isOptional = false; $0.defaultValue = .string("none") } }
        },
        Case(rule: .attributeMadeRequired, entity: "Book", severity: .error, truth: "SELECT Z_PK FROM ZBOOK WHERE ZISBN IS NULL ORDER BY Z_PK") { m in
            m.edit("Book") { $0.attribute("isbn") { $0.isOptional = false } }
        },
        Case(rule: .defaultChanged, entity: "Book", severity: .info, truth: nil) { m in m.edit("Book") { $0.attribute("format") { $0.defaultValue = .string("ebook") } } },
        Case(rule: .externalStorageChanged, entity: "Book", severity: .info, truth: nil) { m in m.edit("Book") { $0.attribute("cover") { $0.allowsExternalBinaryDataStorage = true } } },
        Case(rule: .transientChanged, entity: "Book", severity: .error, truth: "SELECT Z_PK FROM ZBOOK WHERE ZPAGES IS NOT NULL ORDER BY Z_PK", edit: { _ in },
             tweak: { model in
                 if let e = model.entities.firstIndex(where: { $0.name == "Book" }), let a = model.entities[e].attributes.firstIndex(where: { $0.name == "pages" }) {
                     model.entities[e].attributes[a].isTransient = true
                 }
             }),
        Case(rule: .uniqueAdded, entity: "Book", severity: .error,
             truth: "SELECT Z_PK FROM ZBOOK WHERE ZISBN IN (SELECT ZISBN FROM ZBOOK WHERE ZISBN IS NOT NULL GROUP BY ZISBN HAVING count(*) > 1) ORDER BY Z_PK") { m in
            m.edit("Book") { $0.uniqueConstraints = [["isbn"]] }
        },
        Case(rule: .uniqueRemoved, entity: "Shelf", severity: .info, truth: nil) { m in m.edit("Shelf") { $0.uniqueConstraints = [] } },
        Case(rule: .indexChanged, entity: "Book", severity: .info, truth: nil) { m in m.edit("Book") { $0.fetchIndexes = [] } },
        Case(rule: .relationshipAddedOptional, entity: "Author", severity: .info, truth: nil) { m in
            m.edit("Author") { $0.relationships.append(RelationshipDescription("favorite", to: "Book")) }
        },
        Case(rule: .relationshipAddedRequired, entity: "Book", severity: .error, truth: "SELECT Z_PK FROM ZBOOK ORDER BY Z_PK") { m in
            m.edit("Book") { $0.relationships.append(RelationshipDescription("editor", to: "Author", optional: false)) }
        },
        Case(rule: .relationshipRemoved, entity: "Book", severity: .error, truth: "SELECT Z_PK FROM ZBOOK WHERE ZSHELF IS NOT NULL ORDER BY Z_PK") { m in
            m.edit("Book") { $0.relationships.removeAll { $0.name == "shelf" } }
            m.edit("Shelf") { $0.relationships.removeAll { $0.name == "books" } }
        },
        Case(rule: .relationshipRenamed, entity: "Book", severity: .info, truth: nil) { m in
            m.edit("Book") { $0.relationship("shelf") { $0.name = "location"; $0.renamingIdentifier = "shelf" } }
            m.edit("Shelf") { $0.relationship("books") { $0.inverse = "location" } }
        },
        Case(rule: .probableRelationshipRename, entity: "Book", severity: .error, truth: "SELECT Z_PK FROM ZBOOK WHERE ZSHELF IS NOT NULL ORDER BY Z_PK") { m in
            m.edit("Book") { $0.relationship("shelf") { $0.name = "location" } }
            m.edit("Shelf") { $0.relationship("books") { $0.inverse = "location" } }
        },
        Case(rule: .deleteRuleChanged, entity: "Author", severity: .info, truth: nil) { m in m.edit("Author") { $0.relationship("books") { $0.deleteRule = .cascade } } },
        Case(rule: .relationshipToMany, entity: "Book", severity: .info, truth: nil) { m in m.edit("Book") { $0.relationship("shelf") { $0.isToMany = true } } },
        Case(rule: .relationshipToOne, entity: "Shelf", severity: .error, truth: nil) { m in m.edit("Shelf") { $0.relationship("books") { $0.isToMany = false } } },
        Case(rule: .orderingChanged, entity: "Author", severity: .info, truth: nil) { m in m.edit("Author") { $0.relationship("books") { $0.isOrdered = true } } },
        Case(rule: .destinationChanged, entity: "Author", severity: .error, truth: nil) { m in m.edit("Author") { $0.relationship("pinned") { $0.destination = "Book" } } },
        Case(rule: .relationshipMadeOptional, entity: "Book", severity: .info, truth: nil) { m in m.edit("Book") { $0.relationship("author") { $0.isOptional = true } } },
        Case(rule: .relationshipMadeRequired, entity: "Book", severity: .error, truth: "SELECT Z_PK FROM ZBOOK WHERE ZSHELF IS NULL ORDER BY Z_PK") { m in
            m.edit("Book") { $0.relationship("shelf") { $0.isOptional = false } }
        },
    ]

    static func renameShelf(_ m: inout ModelDescription, identifier: Bool) {
        m.edit("Shelf") { $0.name = "Rack"; $0.className = "Rack"; $0.renamingIdentifier = identifier ? "Shelf" : nil }
        m.edit("Book") { $0.relationship("shelf") { $0.destination = "Rack" } }
        m.edit("Author") { $0.relationship("pinned") { $0.destination = "Rack" } }
    }

    @Test("the cases cover every rule of the table")
    func everyRuleHasACase() {
        #expect(Set(Self.cases.map(\.rule.id)) == Set(MigrationRule.all.map(\.id)))
        #expect(MigrationRule.all.count == Set(MigrationRule.all.map(\.id)).count, "rule ids are unique")
    }

    @Test("docs/migration.md lists every rule with its classification and source, and docs/lint.md every lint rule")
    func docsAgree() throws {
        let root = ProjectPaths.root()
        let migration = try String(contentsOf: root.appendingPathComponent("docs/migration.md"), encoding: .utf8)
        let words: [MigrationClass: String] = [.lightweight: "lightweight", .custom: "needs a custom stage", .lossy: "loses data"]
        for rule in MigrationRule.all {
            let row = migration.split(separator: "\n").first { $0.hasPrefix("| `\(rule.id)` |") }
            let line = try #require(row, "docs/migration.md has no row for \(rule.id)")
            #expect(line.contains("| \(words[rule.classification]!) |"), "\(rule.id): \(line)")
            #expect(line.contains(rule.source), "\(rule.id): the source differs")
        }
        let lint = try String(contentsOf: root.appendingPathComponent("docs/lint.md"), encoding: .utf8)
        for rule in CloudKitLint.Rule.allCases { #expect(lint.contains("| `\(rule.rawValue)` |"), "docs/lint.md lacks \(rule.rawValue)") }
    }

    @Test("one hop: the change is found, classified by its rule, and its rows and keys are SQLite's", arguments: cases)
    func hop(_ c: Case) throws {
        let fixture = try HopFixture()
        var target = LibraryV1.model
        c.edit(&target)
        target.versionIdentifiers = ["2"]
        let plan = try fixture.plan(to: target, tweak: c.tweak)
        #expect(plan.hops.count == 1)
        let hop = try #require(plan.hops.first)
        #expect(hop.versionIdentifiers == ["1"])
        let found = hop.findings.filter { $0.id == c.rule.id && $0.entity == c.entity }
        let f = try #require(found.first, "no \(c.rule.id) on \(c.entity); found \(hop.findings.map { "\($0.id) [\($0.entity ?? "")]" })")
        #expect(found.count == 1)
        #expect(f.evidence["classification"] == .string(c.rule.classification.rawValue))
        #expect(f.severity == c.severity, "\(f.message)")
        #expect(f.explanation.contains(c.rule.source))
        if let truth = c.truth {
            let keys = try fixture.keys(truth)
            #expect(!keys.isEmpty || c.severity != .error, "the data plants rows for this rule")
            #expect(f.evidence["rows"] == .int(keys.count), "\(f.message)")
            #expect(f.evidence["keys"] == (keys.isEmpty ? nil : .keys(keys)), "\(f.message)")
        } else {
            #expect(f.evidence["rows"] == nil)
        }
        // Exit 1 exactly when a hop fails or loses data.
        #expect(plan.failsOrLosesData == hop.findings.contains { $0.severity == .error })
    }

    @Test("a unique constraint the data does not break only warns, and names no keys")
    func uniqueWithoutDuplicates() throws {
        let fixture = try HopFixture()
        var target = LibraryV1.model
        target.edit("Book") { $0.uniqueConstraints = [["title"]] }
        let plan = try fixture.plan(to: target)
        let f = try #require(plan.findings.first { $0.id == MigrationRule.uniqueAdded.id })
        let duplicates = try fixture.keys("SELECT count(*) FROM (SELECT ZTITLE FROM ZBOOK GROUP BY ZTITLE HAVING count(*) > 1)")
        #expect(duplicates == [0])
        #expect(f.severity == .warning)
        #expect(f.evidence["rows"] == .int(0))
        #expect(!plan.failsOrLosesData)
    }

    @Test("duplicates that block a new unique constraint are listed with their values and keys")
    func duplicateGroups() throws {
        let fixture = try HopFixture()
        var target = LibraryV1.model
        target.edit("Book") { $0.uniqueConstraints = [["isbn"]] }
        let plan = try fixture.plan(to: target)
        let f = try #require(plan.findings.first { $0.id == MigrationRule.uniqueAdded.id })
        let groups = try fixture.keys("SELECT count(*) FROM (SELECT ZISBN FROM ZBOOK WHERE ZISBN IS NOT NULL GROUP BY ZISBN HAVING count(*) > 1)")
        #expect(f.evidence["duplicate-groups"] == .int(groups[0]))
        let firstGroup = try fixture.keys("SELECT Z_PK FROM ZBOOK WHERE ZISBN = (SELECT ZISBN FROM ZBOOK WHERE ZISBN IS NOT NULL GROUP BY ZISBN HAVING count(*) > 1 ORDER BY min(Z_PK) LIMIT 1) ORDER BY Z_PK")
        guard case .list(let list)? = f.evidence["duplicates"], case .record(let members)? = list.first else {
            Issue.record("no duplicate groups in \(f.evidence)")
            return
        }
        #expect(members.first { $0.0 == "keys" }?.1 == .keys(firstGroup))
        #expect(members.first { $0.0 == "values" }?.1 == .string("\"111\""))
    }

    @Test("the values a type change cannot convert are shown")
    func unconvertibleValues() throws {
        let fixture = try HopFixture()
        var target = LibraryV1.model
        target.edit("Book") { $0.attribute("code") { $0.type = .integer64 } }
        let plan = try fixture.plan(to: target)
        let f = try #require(plan.findings.first { $0.id == MigrationRule.attributeTypeChanged.id })
        // Integer 64 holds 3000000000; only the text that is no number stays.
        let keys = try fixture.keys("SELECT Z_PK FROM ZBOOK WHERE ZCODE IS NOT NULL AND CAST(CAST(ZCODE AS INTEGER) AS TEXT) <> ZCODE")
        #expect(f.evidence["keys"] == .keys(keys))
        #expect(f.evidence["values"] == .list([.string("\"x7\"")]))
    }

    @Test("one hop per model version among the old stores; data is counted per store")
    func hopsPerVersion() throws {
        let fixture = try HopFixture()
        // A second store at version 1 with one more book, and a store at another version.
        let second = fixture.folder.path("second.store")
        let w = try StoreWriter(url: second, model: LibraryV1.model, options: .init(journalMode: .delete))
        try LibraryV1.fill(w)
        try w.insert("Book", ["title": .string("E"), "format": .string("paper"), "author": .object(entity: "Author", pk: 1)])
        try w.close()
        var v15 = LibraryV1.model
        v15.versionIdentifiers = ["1.5"]
        v15.edit("Book") { $0.attributes.append(AttributeDescription("edition", .string)) }
        let third = fixture.folder.path("third.store")
        let t = try StoreWriter(url: third, model: v15, options: .init(journalMode: .delete))
        try t.insert("Author", ["name": .string("Cy")])
        try t.close()

        var target = v15
        target.versionIdentifiers = ["2"]
        target.edit("Book") { $0.attributes.append(AttributeDescription("publisher", .string, optional: false)) }
        let url = try fixture.targetStore(target)
        let plan = try MigrationPlanner.plan(inputs: [fixture.old.path, second.path, third.path], to: url.path)
        #expect(plan.hops.map(\.versionIdentifiers) == [["1"], ["1.5"]])
        #expect(plan.hops[0].stores == [fixture.old.path, second.path])
        #expect(plan.hops[1].stores == [third.path])
        // Hop 1: edition is added (optional) and publisher (required) — rows of both stores count.
        let f = try #require(plan.hops[0].findings.first { $0.id == MigrationRule.attributeAddedRequired.id })
        let rows = try fixture.keys("SELECT count(*) FROM ZBOOK")[0]
        let copy = try TemporaryFolder("migration-truth")
        try FileManager.default.copyItem(at: second, to: copy.path("s.store"))
        let secondRows = try Connection.open(path: copy.path("s.store").path, mode: .readOnly).scalar("SELECT count(*) FROM ZBOOK").int ?? -1
        #expect(f.evidence["rows"] == .int(rows + secondRows))
        #expect(plan.hops[0].findings.contains { $0.id == MigrationRule.attributeAddedOptional.id })
        // Hop 2 has no books: the required attribute passes there, so it only warns.
        let g = try #require(plan.hops[1].findings.first { $0.id == MigrationRule.attributeAddedRequired.id })
        #expect(g.severity == .warning)
        #expect(!plan.hops[1].findings.contains { $0.id == MigrationRule.attributeAddedOptional.id })
        #expect(plan.hops[0].failsOrLosesData && !plan.hops[1].failsOrLosesData)
    }

    @Test("the target as a store, an Xcode model and a compiled model gives the same changes")
    func targetForms() throws {
        let fixture = try HopFixture()
        var target = LibraryV1.model
        target.versionIdentifiers = ["2"]
        target.edit("Book") {
            $0.uniqueConstraints = [["isbn"]]
            $0.attributes.removeAll { $0.name == "subtitle" }
            $0.attributes.append(AttributeDescription("tagline", .string))
        }
        let store = try fixture.targetStore(target)
        let xcode = try XcodeModelWriter.write(versions: [("Library 2", target)], to: fixture.folder.path("Library.xcdatamodeld"))
        let momd = try CompiledModelWriter.writeBundle(target, name: "Library 2", to: fixture.folder.path("Library.momd"))
        var seen: [[String]] = []
        for t in [store, xcode, momd, momd.appendingPathComponent("Library 2.mom")] {
            let plan = try MigrationPlanner.plan(inputs: [fixture.old.path], to: t.path)
            seen.append(plan.findings.map { "\($0.id) \($0.entity ?? "") \($0.severity.rawValue)" }.sorted())
        }
        #expect(seen[0].contains("probable-rename-without-original-name Book error"))
        #expect(seen[0].contains("unique-constraint-added Book error"))
        for other in seen.dropFirst() { #expect(other == seen[0]) }
    }

    @Test("a property moved up into the parent entity is neither removed nor added")
    func movedUpTheHierarchy() throws {
        var v1 = ModelDescription(entities: [
            EntityDescription("Item", attributes: [AttributeDescription("name", .string)]),
            EntityDescription("Special", parent: "Item", attributes: [AttributeDescription("label", .string)]),
        ], versionIdentifiers: ["1"])
        let fixture = try HopFixture(old: v1) { w in try w.insert("Special", ["name": .string("a"), "label": .string("x")]) }
        v1.versionIdentifiers = ["2"]
        v1.edit("Special") { $0.attributes = [] }
        v1.edit("Item") { $0.attributes.append(AttributeDescription("label", .string)) }
        let plan = try fixture.plan(to: v1)
        #expect(plan.findings.map(\.id) == ["no-model-changes"], "\(plan.findings.map(\.message))")
    }

    @Test("a property moved down into a subentity is lost only by the parent's other rows")
    func movedDownTheHierarchy() throws {
        var v1 = ModelDescription(entities: [
            EntityDescription("Item", attributes: [AttributeDescription("name", .string), AttributeDescription("label", .string)]),
            EntityDescription("Special", parent: "Item", attributes: [AttributeDescription("size", .integer64)]),
        ], versionIdentifiers: ["1"])
        let fixture = try HopFixture(old: v1) { w in
            try w.insert("Item", ["name": .string("plain"), "label": .string("p")])
            try w.insert("Special", ["name": .string("special"), "label": .string("s")])
        }
        v1.versionIdentifiers = ["2"]
        v1.edit("Item") { $0.attributes.removeAll { $0.name == "label" } }
        v1.edit("Special") { $0.attributes.append(AttributeDescription("label", .string)) }
        let plan = try fixture.plan(to: v1)
        let f = try #require(plan.findings.first { $0.id == MigrationRule.attributeRemoved.id })
        #expect(f.entity == "Item")
        // The truth: rows of Item itself (not Special) holding a label, by Z_ENT from Z_PRIMARYKEY.
        let keys = try fixture.keys("SELECT Z_PK FROM ZITEM WHERE ZLABEL IS NOT NULL AND Z_ENT = (SELECT Z_ENT FROM Z_PRIMARYKEY WHERE Z_NAME = 'Item') ORDER BY Z_PK")
        #expect(f.evidence["rows"] == .int(keys.count) && f.evidence["keys"] == .keys(keys))
        #expect(!plan.findings.contains { $0.id == MigrationRule.attributeAddedOptional.id }, "\(plan.findings.map(\.message))")
    }

    @Test("a uniqueness constraint listed in another order is the same constraint")
    func constraintOrder() throws {
        var v1 = LibraryV1.model
        v1.edit("Book") { $0.uniqueConstraints = [["title", "isbn"]] }
        let fixture = try HopFixture(old: v1)
        var v2 = v1
        v2.versionIdentifiers = ["2"]
        v2.edit("Book") { $0.uniqueConstraints = [["isbn", "title"]] }
        let plan = try fixture.plan(to: v2)
        #expect(plan.findings.map(\.id) == ["no-model-changes"], "\(plan.findings.map(\.message))")
    }

    @Test("the stores and the target are left byte-identical")
    func evidenceUntouched() throws {
        let fixture = try HopFixture()
        var target = LibraryV1.model
        target.edit("Book") { $0.uniqueConstraints = [["isbn"]] }
        _ = try fixture.targetStore(target)
        let before = try FolderSnapshot(fixture.folder.url)
        _ = try MigrationPlanner.plan(inputs: [fixture.old.path], to: fixture.folder.path("new.store").path)
        #expect(try FolderSnapshot(fixture.folder.url) == before)
    }

    @Test("an old store without a cached model is not compared by guesswork")
    func inferredOldModel() throws {
        let folder = try TemporaryFolder("migration")
        let old = folder.path("old.store")
        let w = try StoreWriter(url: old, model: LibraryV1.model, options: .init(journalMode: .delete, modelCache: false))
        try LibraryV1.fill(w)
        try w.close()
        let target = folder.path("new.store")
        try StoreWriter(url: target, model: LibraryV1.model, options: .init(journalMode: .delete)).close()
        let plan = try MigrationPlanner.plan(inputs: [old.path], to: target.path)
        #expect(plan.findings.map(\.id) == ["old-model-unknown"])
        // With the model it was written with, the hop is compared, and nothing changed.
        let xcode = try XcodeModelWriter.write(versions: [("Library", LibraryV1.model)], to: folder.path("Library.xcdatamodeld"))
        let known = try MigrationPlanner.plan(inputs: [old.path], to: target.path, oldModel: xcode)
        #expect(!known.failsOrLosesData, "\(known.findings.map(\.message))")
    }
}
