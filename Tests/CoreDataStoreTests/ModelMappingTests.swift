import Acquisition
import CoreDataStore
import Foundation
import SQLiteAccess
import StoreBuilder
import StoreFormats
import StoreTestSupport
import Testing

/// The cached model, the schema map and decoded values on the builder's library store.
@Suite("Core Data model and schema map")
struct ModelMappingTests {
    static func withLibrary<T>(modelCache: Bool = true, xcodeModel: URL? = nil, _ body: (OpenedStore) throws -> T) throws -> T {
        let folder = try TemporaryFolder("library")
        let url = folder.path("Library.sqlite")
        try LibraryFixture.write(url, modelCache: modelCache)
        let session = try EvidenceSession()
        defer { session.scratch.remove() }
        let opened = try LibraryFixture.open(url, xcodeModel: xcodeModel, session: session)
        let result = try body(opened)
        try session.finish()
        return result
    }

    @Test("the cached model: entities, class and legacy names, parents, attributes, relationships, constraints")
    func cachedModel() throws {
        try Self.withLibrary { (opened: OpenedStore) throws in
            let model = opened.model
            #expect(model.source == .cache)
            #expect(model.versionIdentifiers == ["2"])
            #expect(model.entities.map(\.name) == ["Audiobook", "Book", "Borrower", "Film", "Media", "Shelf", "Tag"])
            let borrower = try #require(model.entity("Borrower"))
            #expect(borrower.className == "LibraryApp.BorrowerModel")
            #expect(borrower.legacyName == "Patron")
            #expect(borrower.attributes.first { $0.name == "fullName" }?.legacyName == "name")
            #expect(borrower.attributes.first { $0.name == "id" }?.type == .uuid)
            #expect(borrower.attributes.first { $0.name == "id" }?.isOptional == false)
            #expect(borrower.attributes.first { $0.name == "preferences" }?.valueTransformerName == "NSSecureUnarchiveFromData")
            let address = try #require(borrower.attributes.first { $0.name == "address" })
            #expect(address.type == .composite)
            #expect(address.elements.map(\.name) == ["street", "city", "postcode"])
            #expect(borrower.relationships.first?.legacyName == "pick")
            let media = try #require(model.entity("Media"))
            #expect(media.isAbstract)
            #expect(media.attributes.first { $0.name == "cover" }?.allowsExternalBinaryDataStorage == true)
            #expect(media.fetchIndexes.map(\.name) == ["byTitle"])
            #expect(model.entity("Audiobook")?.parent == "Book")
            let items = try #require(model.entity("Shelf")?.relationships.first { $0.name == "items" })
            #expect(items.isToMany && items.isOrdered && items.inverse == "shelf" && items.destination == "Media")
            #expect(model.entity("Tag")?.uniqueConstraints == [["name"]])
            #expect(model.entity("Tag")?.relationships.first?.deleteRule == .nullify)
        }
    }

    @Test("schema map: suffixed columns in entity order, FEK, FOK, join table, hidden key, indexes, nothing unknown")
    func schemaMap() throws {
        try Self.withLibrary { (opened: OpenedStore) throws in
            let map = opened.map
            #expect(map.unknownColumns.isEmpty, "\(map.unknownColumns)")
            #expect(map.unknownTables.isEmpty)
            #expect(map.problems.isEmpty, "\(map.problems)")
            func column(_ entity: String, _ attribute: String) -> String? {
                map.entity(named: entity)?.attribute(named: attribute)?.column
            }
            // Book (3) and Audiobook (4) come before Film (5): Film gets the suffixes.
            #expect(column("Book", "summary") == "ZSUMMARY")
            #expect(column("Film", "summary") == "ZSUMMARY1")
            #expect(column("Audiobook", "duration") == "ZDURATION")
            #expect(column("Film", "duration") == "ZDURATION1")
            #expect(column("Audiobook", "summary") == "ZSUMMARY")  // inherited from Book
            #expect(column("Film", "title") == "ZTITLE")
            let address = try #require(map.entity(named: "Borrower")?.attribute(named: "address"))
            #expect(address.elements.map { $0.column ?? "-" } == ["ZSTREET", "ZCITY", "ZPOSTCODE"], "a composite element is stored in a column named after the element alone, as SwiftData does")

            let media = try #require(map.entity(named: "Media"))
            #expect(media.table == "ZMEDIA")
            #expect(media.entityNumbers == [2, 3, 4, 5])
            #expect(map.entity(named: "Book")?.entityNumbers == [3, 4])
            let shelf = try #require(media.relationship(named: "shelf"))
            #expect(shelf.kind == .toOne && shelf.column == "ZSHELF" && shelf.orderColumn == "Z_FOK_SHELF")
            let favorite = try #require(map.entity(named: "Borrower")?.relationship(named: "favorite"))
            #expect(favorite.column == "ZFAVORITE")
            #expect(favorite.entityKeyColumn == "Z2_FAVORITE")
            let items = try #require(map.entity(named: "Shelf")?.relationship(named: "items"))
            #expect(items.kind == .toMany && items.foreignTable == "ZMEDIA" && items.foreignColumn == "ZSHELF")
            #expect(items.orderColumn == "Z_FOK_SHELF")
            let featured = try #require(map.entity(named: "Shelf")?.relationship(named: "featured"))
            #expect(featured.foreignColumn == "Z6FEATURED")
            let tags = try #require(media.relationship(named: "tags"))
            let tagMedia = try #require(map.entity(named: "Tag")?.relationship(named: "media"))
            #expect(tags.kind == .manyToMany && tags.joinTable != nil && tags.joinTable == tagMedia.joinTable)
            // Each join column is named after the relationship pointing at the rows it holds.
            #expect(tags.joinSourceColumn == "Z_2MEDIA" && tags.joinDestinationColumn == "Z_7TAGS")
            #expect(tagMedia.joinSourceColumn == "Z_7TAGS" && tagMedia.joinDestinationColumn == "Z_2MEDIA")
            #expect(map.joinTables == [tags.joinTable!])
            #expect(map.entity(named: "Tag")?.uniqueConstraints == [IndexMapping(properties: ["name"], name: "Z_Tag_UNIQUE_name", present: true)])
            #expect(media.fetchIndexes == [IndexMapping(properties: ["title"], name: "Z_Media_byTitle", present: true)])
        }
    }

    @Test("entities resolve by current, legacy and class name")
    func entityLookup() throws {
        try Self.withLibrary { (opened: OpenedStore) throws in
            #expect(opened.map.resolveEntity("Borrower")?.entity.name == "Borrower")
            #expect(opened.map.resolveEntity("Patron")?.entity.name == "Borrower")
            #expect(opened.map.resolveEntity("LibraryApp.BorrowerModel")?.entity.name == "Borrower")
            #expect(opened.map.resolveEntity("BorrowerModel")?.entity.name == "Borrower")
            #expect(throws: ModelError.self) { try opened.entity("Patrons") }
            #expect(opened.map.suggestion(for: "Boroower") == "Borrower")
        }
    }

    @Test("decoded values: dates, UUIDs, Booleans, decimals, URIs, external and inline data, archives, composites, FEK targets")
    func decodedValues() throws {
        try Self.withLibrary { (opened: OpenedStore) throws in
            let media = try LibraryFixture.rows(opened, "Media")
            #expect(media.map(\.entity) == ["Book", "Audiobook", "Film"])
            let book = media[0], audio = media[1], film = media[2]
            #expect(book["title"]?.testText == "Dune")
            #expect(book["added"]?.testText == "2024-07-29T03:19:53.5Z")
            #expect(book["isSigned"]?.testText == "true")
            #expect(book["price"]?.testText == "decimal:9.99")
            #expect(book["cover"]?.testText == "external:\(LibraryFixture.coverFile.uuidString):true:4096")
            #expect(book["shelf"]?.testText == "Shelf#1")
            #expect(book["narrator"] == nil, "a Book row has no Audiobook properties")
            #expect(audio["cover"]?.testText == "inline:3:010203")
            #expect(audio["narrator"]?.testText == "Scott")
            #expect(audio["duration"]?.testText == "75600.0")
            #expect(film["cover"]?.testText == "external:\(LibraryFixture.missingFile.uuidString):false:-1")
            #expect(film["trailer"]?.testText == "https://example.com/dune")
            #expect(film["summary"]?.testText == "Sand and worms", "the WAL's update is visible")
            #expect(film["duration"]?.testText == "9360.0")

            let borrower = try #require(try LibraryFixture.rows(opened, "Patron").first)
            #expect(borrower.entity == "Borrower")
            #expect(borrower["id"]?.testText == "uuid:6F1C2A53-9B0E-4C7D-8E21-3D5A7B9C0E14")
            #expect(borrower["visits"]?.testText == "4")
            #expect(borrower["address"]?.testText == "{street=1 Main St,city=Springfield,postcode=12345}")
            // The FEK says which subentity the favorite is.
            #expect(borrower["favorite"]?.testText == "Film#3")
            guard case .archived(let tree)? = borrower["preferences"] else {
                Issue.record("preferences should decode as a keyed archive, got \(String(describing: borrower["preferences"]))")
                return
            }
            #expect(tree == .dictionary(["theme": .string("dark"), "fontSize": .integer(14)]))
        }
    }

    @Test("--where filters are typed by the model and bound; unknown names and bad values are errors")
    func filters() throws {
        try Self.withLibrary { (opened: OpenedStore) throws in
            #expect(try LibraryFixture.rows(opened, "Media", filters: ["title=Dune"]).map(\.pk) == [1])
            #expect(try LibraryFixture.rows(opened, "Book", filters: ["isSigned=true"]).map(\.pk) == [1])
            #expect(try LibraryFixture.rows(opened, "Media", filters: ["shelf=Shelf#1"]).map(\.pk) == [1, 2])
            #expect(try LibraryFixture.rows(opened, "Media", filters: ["shelf=null"]).map(\.pk) == [3])
            #expect(try LibraryFixture.rows(opened, "Borrower", filters: ["id=6f1c2a53-9b0e-4c7d-8e21-3d5a7b9c0e14"]).count == 1)
            #expect(try LibraryFixture.rows(opened, "Borrower", filters: ["name=Ada"]).count == 1, "legacy attribute name")
            #expect(try LibraryFixture.rows(opened, "Borrower", filters: ["favorite=Film#3"]).count == 1)
            #expect(try LibraryFixture.rows(opened, "Borrower", filters: ["favorite=Book#3"]).isEmpty, "FEK must match too")
            #expect(try LibraryFixture.rows(opened, "Media", filters: ["added=2024-07-29"]).map(\.pk) == [1])
            #expect(try LibraryFixture.rows(opened, "Media", filters: ["title=x' OR 1=1 --"]).isEmpty)
            #expect(throws: ModelError.self) { try LibraryFixture.rows(opened, "Media", filters: ["nosuch=1"]) }
            #expect(throws: ModelError.self) { try LibraryFixture.rows(opened, "Borrower", filters: ["visits=many"]) }
            #expect(throws: ModelError.self) { try LibraryFixture.rows(opened, "Borrower", filters: ["visits"]) }
        }
    }

    @Test("history: writers resolved, update bitmaps decoded by the per-level bit order")
    func history() throws {
        try Self.withLibrary { (opened: OpenedStore) throws in
            var reader = try HistoryReader(connection: opened.connection, store: opened.store, model: opened.model)
            var transactions: [HistoryTransaction] = []
            try reader.forEachTransaction { transactions.append($0) }
            #expect(transactions.count == 2)
            let first = transactions[0], second = transactions[1]
            #expect(first.author == "importer" && first.contextName == "ImportContext")
            #expect(first.bundleID == "com.example.Library" && first.processName == "Library")
            #expect(first.timestamp == "2024-07-29T03:19:53.5Z")
            #expect(second.author == "editor" && second.contextName == "ViewContext")
            #expect(second.changes.map(\.type) == [.update, .update, .delete])
            let film = second.changes[0]
            #expect(film.entity == "Film" && film.pk == 3)
            #expect(film.updatedProperties == ["duration", "summary"])
            #expect(second.changes[1].updatedProperties == ["visits"])
            // Filters.
            var editorOnly: [Int64] = []
            try reader.forEachTransaction(.init(author: "editor")) { editorOnly.append($0.id) }
            #expect(editorOnly == [second.id])
            var tagChanges: [String] = []
            try reader.forEachTransaction(.init(entityNumbers: opened.map.entity(named: "Tag")?.entityNumbers)) { t in
                tagChanges += t.changes.map { "\($0.type.name) \($0.entity)#\($0.pk ?? -1)" }
            }
            #expect(tagChanges == ["insert Tag#1", "insert Tag#2", "delete Tag#2"])
            var later: [Int64] = []
            try reader.forEachTransaction(.init(since: LibraryFixture.added.timeIntervalSinceReferenceDate + 1)) { later.append($0.id) }
            #expect(later == [second.id])

            let summary = try reader.summary()
            let byEntity = Dictionary(uniqueKeysWithValues: summary.map { ($0.entity, $0) })
            #expect(byEntity["Film"]?.writers.map(\.author) == ["editor", "importer"])
            #expect(byEntity["Tag"]?.writers.first { $0.author == "importer" }?.inserts == 2)
            #expect(byEntity["Tag"]?.writers.first { $0.author == "editor" }?.deletes == 1)
        }
    }

    @Test("an update bitmap whose length does not fit the model is reported, not guessed")
    func mismatchedBitmap() throws {
        try Self.withLibrary { (opened: OpenedStore) throws in
            var reader = try HistoryReader(connection: opened.connection, store: opened.store, model: opened.model)
            let order = opened.model.updateBitOrder(entity: "Film")
            #expect(order.count == 10, "\(order)")
            let decoded = reader.updatedProperties(entityNumber: 5, bitmap: Data([0x80, 0x00, 0x00]))
            #expect(decoded.names == nil)
            #expect(decoded.note?.contains("3 bytes") == true)
            let unknown = reader.updatedProperties(entityNumber: 99, bitmap: Data([0x80]))
            #expect(unknown.names == nil && unknown.note != nil)
        }
    }

    @Test("the builder's bit order and the reader's agree for every entity")
    func bitOrderAgrees() throws {
        try Self.withLibrary { (opened: OpenedStore) throws in
            let layout = try StoreLayout(model: LibraryFixture.model)
            for entity in LibraryFixture.model.entities {
                #expect(opened.model.updateBitOrder(entity: entity.name) == layout.updateBitOrder(entity: entity.name), "\(entity.name)")
            }
        }
    }
}
