import Acquisition
import CoreDataStore
import Foundation
import SQLiteAccess
import StoreBuilder
import StoreTestSupport
import Testing

/// The layouts Apple's own stores showed (Notes, Photos, knowledgeC), made by the builder so
/// every run covers them: inherited property copies or proxies in the model cache, a reflexive
/// many-to-many join table, an R-tree fetch index, an ordered to-many without inverse.
@Suite("layouts of Apple's own stores, built")
struct AppleLayoutTests {
    static func model(_ form: ModelDescription.InheritedPropertiesInCache) -> ModelDescription {
        ModelDescription(entities: [
            EntityDescription("Asset", attributes: [
                .init("latitude", .double), .init("longitude", .double), .init("title", .string),
            ], relationships: [
                .init("album", to: "Album", inverse: "assets"),
            ], fetchIndexes: [.init("boundedByRect", properties: ["latitude", "longitude"], rtree: true),
                              .init("byTitleIndex", properties: ["title"])]),
            EntityDescription("Photo", parent: "Asset", attributes: [.init("pixels", .integer64)]),
            EntityDescription("Album", attributes: [.init("name", .string)], relationships: [
                .init("assets", to: "Asset", inverse: "album", toMany: true),
                .init("pinned", to: "Asset", toMany: true, ordered: true),
            ]),
            EntityDescription("Person", attributes: [.init("name", .string)], relationships: [
                .init("mergeCandidates", to: "Person", inverse: "mergeCandidates", toMany: true),
            ]),
        ], inheritedPropertiesInCache: form)
    }

    struct Form: CustomStringConvertible, Sendable {
        let form: ModelDescription.InheritedPropertiesInCache
        var description: String { "\(form)" }
    }

    @Test("each inherited property is listed once, where it is declared; the map has no problem; bitmaps decode",
          arguments: [Form(form: .declaredOnly), Form(form: .copies), Form(form: .proxies)])
    func layouts(_ form: Form) throws {
        let folder = try TemporaryFolder("apple-layouts")
        let url = folder.path("Photos.sqlite")
        let model = Self.model(form.form)
        let writer = try StoreWriter(url: url, model: model)
        var asset = 0, photo = 0, a = 0, b = 0, album = 0
        try writer.transaction { w in
            album = try w.insert("Album", ["name": .string("Trip")])
            asset = try w.insert("Asset", ["latitude": .double(48.1), "longitude": .double(11.5), "title": .string("x"),
                                           "album": .object(entity: "Album", pk: album)])
            photo = try w.insert("Photo", ["latitude": .double(1), "longitude": .double(2), "pixels": .int(12)])
            a = try w.insert("Person", ["name": .string("A")])
            b = try w.insert("Person", ["name": .string("B")])
        }
        try writer.link("Person", pk: a, "mergeCandidates", to: [b])
        // Album.pinned (ordered, no inverse): the owner's key and the order live in ZASSET.
        let assetColumns = try #require(writer.layout.table(for: "Asset")).columns
        let owner = try #require(assetColumns.first { $0.role == .foreignKey(entity: "Album", relationship: "pinned") }).name
        let order = try #require(assetColumns.first { $0.role == .foreignOrderKey(entity: "Album", relationship: "pinned") }).name
        try writer.executeRaw("UPDATE ZASSET SET \(owner) = \(album), \(order) = 2048 WHERE Z_PK = \(asset)")
        try writer.transaction { w in
            try w.update("Photo", pk: photo, ["title": .string("renamed"), "pixels": .int(13)])
        }
        try writer.close()

        let session = try EvidenceSession()
        defer { session.scratch.remove() }
        let opened = try OpenedStore.open(try session.workingCopy(of: url), displayPath: url.path)
        let map = opened.map
        #expect(map.problems.isEmpty, "\(map.problems)")
        #expect(map.unknownTables.isEmpty, "\(map.unknownTables)")
        #expect(map.unknownColumns.isEmpty, "\(map.unknownColumns)")
        // Photo declares one attribute; the copies or proxies of Asset's are Asset's.
        #expect(opened.model.entity("Photo")?.attributes.map(\.name) == ["pixels"])
        #expect(opened.model.entity("Photo")?.relationships.isEmpty == true)
        let photoMap = try #require(map.entity(named: "Photo"))
        #expect(photoMap.attributes.map { "\($0.declaredBy).\($0.attribute.name)" } == ["Asset.latitude", "Asset.longitude", "Asset.title", "Photo.pixels"])

        // The reflexive join table: Z_<n>MERGECANDIDATES with its REFLEXIVE column.
        let person = try #require(map.entity(named: "Person"))
        let merge = try #require(person.relationship(named: "mergeCandidates"))
        let n = try #require(person.number)
        #expect(merge.kind == .manyToMany && merge.joinTable == "Z_\(n)MERGECANDIDATES")
        #expect(merge.joinSourceColumn == "Z_\(n)MERGECANDIDATES" && merge.joinDestinationColumn == "REFLEXIVE")
        #expect(map.joinTables.contains("Z_\(n)MERGECANDIDATES"))

        // The R-tree fetch index: the virtual table, present, kept by triggers.
        let rtree = try #require(map.entity(named: "Asset")?.fetchIndexes.first { $0.name.hasPrefix("Z_RT_") })
        #expect(rtree.name == "Z_RT_Asset_boundedByRect" && rtree.present && rtree.properties == ["latitude", "longitude"])
        let boxes = try opened.connection.scalar("SELECT count(*) FROM Z_RT_Asset_boundedByRect").int
        let located = try opened.connection.scalar("SELECT count(*) FROM ZASSET").int
        #expect(boxes == located, "the triggers keep one box per asset")
        #expect(map.entity(named: "Asset")?.fetchIndexes.first { $0.name == "Z_Asset_byTitleIndex" }?.present == true)

        // The ordered to-many without inverse: owner key and Z_FOK_ order in the target table.
        let pinned = try #require(map.entity(named: "Album")?.relationship(named: "pinned"))
        #expect(pinned.foreignTable == "ZASSET" && pinned.foreignColumn != nil && pinned.orderColumn?.hasPrefix("Z_FOK_") == true)
        // rows of Asset show the owner and the order.
        let rowReader = RowReader(map: map, entity: try #require(map.entity(named: "Asset")), decoder: opened.decoder)
        var shown: [(Int64, String, String)] = []
        try rowReader.forEach(opened.connection) { row in
            let values = Dictionary(row.values.map { ($0.name, $0.value) }, uniquingKeysWith: { a, _ in a })
            shown.append((row.pk, "\(values["Album.pinned"].map { "\($0)" } ?? "-")", "\(values["Album.pinned order"].map { "\($0)" } ?? "-")"))
        }
        let pinnedRow = try #require(shown.first { $0.0 == Int64(asset) })
        #expect(pinnedRow.1.contains("Album") && pinnedRow.1.contains("\(album)") && pinnedRow.2.contains("2048"), "\(shown)")

        // The update of Photo decodes against the properties counted once.
        var reader = try HistoryReader(connection: opened.connection, store: opened.store, model: opened.model)
        var updates: [[String]?] = []
        try reader.forEachTransaction { t in
            for c in t.changes where c.type == .update { updates.append(c.updatedProperties) }
        }
        #expect(updates.count == 1)
        #expect(updates.first.flatMap { $0 }.map(Set.init) == ["title", "pixels"])
        try session.finish()
    }

    @Test("tombstones: a delete keeps the preserved values in ZTOMBSTONE0…n, named root level first, by name")
    func tombstones() throws {
        var uuid = AttributeDescription("uuid", .string)
        uuid.preservesValueOnDeletion = true
        var sync = AttributeDescription("shouldSync", .boolean)
        sync.preservesValueOnDeletion = true
        let model = ModelDescription(entities: [
            EntityDescription("Object", attributes: [uuid, .init("note", .string)]),
            EntityDescription("Event", parent: "Object", attributes: [sync, .init("value", .integer64)]),
        ], inheritedPropertiesInCache: .copies)
        let folder = try TemporaryFolder("tombstones")
        let url = folder.path("knowledgeC.db")
        let writer = try StoreWriter(url: url, model: model)
        var pk = 0
        try writer.transaction { pk = try $0.insert("Event", ["uuid": .string("D951"), "shouldSync": .bool(false), "value": .int(3)]) }
        try writer.transaction { try $0.delete("Event", pk: pk) }
        try writer.close()

        let session = try EvidenceSession()
        defer { session.scratch.remove() }
        let opened = try OpenedStore.open(try session.workingCopy(of: url), displayPath: url.path)
        #expect(opened.model.entity("Object")?.attributes.first { $0.name == "uuid" }?.preservesValueOnDeletion == true)
        #expect(opened.model.entity("Object")?.attributes.first { $0.name == "note" }?.preservesValueOnDeletion == false)
        // What SQLite holds, read back: the columns the delete filled.
        let stored = try #require(try opened.connection.rows("SELECT ZTOMBSTONE0, ZTOMBSTONE1 FROM ACHANGE WHERE ZCHANGETYPE = 2").first)
        var reader = try HistoryReader(connection: opened.connection, store: opened.store, model: opened.model)
        var kept: [(name: String, value: DatabaseValue)] = []
        try reader.forEachTransaction { t in
            for c in t.changes where c.type == .delete { kept = c.tombstone }
        }
        #expect(kept.map(\.name) == ["uuid", "shouldSync"])
        #expect(kept.map(\.value) == [stored[0], stored[1]])
        #expect(kept.first?.value == .text("D951"))
        try session.finish()
    }

    @Test("tombstones decode by their attribute's type, as rows shows values: a UUID, a date, a Boolean")
    func tombstonesDecoded() throws {
        var id = AttributeDescription("id", .uuid)
        id.preservesValueOnDeletion = true
        var when = AttributeDescription("createdAt", .date)
        when.preservesValueOnDeletion = true
        var flag = AttributeDescription("isDone", .boolean)
        flag.preservesValueOnDeletion = true
        let model = ModelDescription(entities: [EntityDescription("Task", attributes: [id, when, flag, .init("title", .string)])])
        let folder = try TemporaryFolder("tombstones-decoded")
        let url = folder.path("default.store")
        let writer = try StoreWriter(url: url, model: model)
        var pk = 0
        try writer.transaction {
            pk = try $0.insert("Task", ["id": .uuid(UUID()), "createdAt": .date(Date(timeIntervalSince1970: 1_722_000_000.25)),
                                        "isDone": .bool(true), "title": .string("gone")])
        }
        try writer.transaction { try $0.delete("Task", pk: pk) }
        try writer.close()

        let session = try EvidenceSession()
        defer { session.scratch.remove() }
        let opened = try OpenedStore.open(try session.workingCopy(of: url), displayPath: url.path)
        // The truth: what SQLite holds in the columns, in the model's tombstone order (createdAt, id, isDone).
        let stored = try #require(try opened.connection.rows("SELECT ZTOMBSTONE0, ZTOMBSTONE1, ZTOMBSTONE2 FROM ACHANGE WHERE ZCHANGETYPE = 2").first)
        var reader = try HistoryReader(connection: opened.connection, store: opened.store, model: opened.model)
        var decoded: [(name: String, value: FieldValue)] = []
        try reader.forEachTransaction { t in
            for c in t.changes where c.type == .delete { decoded = c.tombstoneValues }
        }
        #expect(decoded.map(\.name) == ["createdAt", "id", "isDone"])
        guard decoded.count == 3 else { return }
        if case .date(let iso, let seconds) = decoded[0].value {
            #expect(seconds == stored[0].double)
            #expect(iso == ValueDecoder.iso8601(referenceSeconds: try #require(stored[0].double)))
        } else { Issue.record("createdAt decodes as a date: \(decoded[0].value)") }
        if case .uuid(let text) = decoded[1].value, let uuid = UUID(uuidString: text) {
            #expect(stored[1] == .blob(withUnsafeBytes(of: uuid.uuid) { Data($0) }))
        } else { Issue.record("id decodes as a UUID: \(decoded[1].value)") }
        if case .bool(let b) = decoded[2].value { #expect(stored[2] == .integer(b ? 1 : 0)) } else { Issue.record("isDone decodes as a Boolean") }
        try session.finish()
    }
}
