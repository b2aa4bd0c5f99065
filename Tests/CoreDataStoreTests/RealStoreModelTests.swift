import Acquisition
import CoreDataStore
import Foundation
import SQLiteAccess
import StoreTestSupport
import Testing

/// The model readers on the genuine Apple stores, read only through the evidence path
/// (hashed, copied, opened as a working copy) and checked unchanged afterwards.
@Suite("model, map, rows and history on genuine Apple stores")
struct RealStoreModelTests {
    static func withReal<T>(_ relative: String, xcodeModel: String? = nil, _ body: (OpenedStore) throws -> T) throws -> T? {
        let real = try #require(ProjectPaths.realFixtures())
        let url = real.appendingPathComponent(relative)
        let before = try FolderSnapshot(url.deletingLastPathComponent())
        let session = try EvidenceSession()
        defer { session.scratch.remove() }
        let opened = try OpenedStore.open(try session.workingCopy(of: url), displayPath: relative,
                                          xcodeModel: xcodeModel.map { url.deletingLastPathComponent().appendingPathComponent($0) })
        let result = try body(opened)
        try session.finish()
        #expect(try FolderSnapshot(url.deletingLastPathComponent()) == before)
        return result
    }

    /// SQLite on a private copy (WAL applied) of a genuine store.
    static func sqlite(_ relative: String) throws -> SQLiteOracle {
        try SQLiteOracle(copying: try #require(ProjectPaths.realFixtures()).appendingPathComponent(relative))
    }

    /// 32 hex digits as 8-4-4-4-12.
    static func dashed(_ hex: String) -> String {
        var rest = Substring(hex), parts: [String] = []
        for n in [8, 4, 4, 4, 12] { parts.append(String(rest.prefix(n))); rest = rest.dropFirst(n) }
        return parts.joined(separator: "-")
    }

    @Test("swiftdata-resources: the cached model as the app declared it", .enabled(if: ProjectPaths.hasRealFixtures, Comment(rawValue: ProjectPaths.realFixturesMissing)))
    func resourcesModel() throws {
        let truth = try Self.sqlite("swiftdata-resources/default.store")
        _ = try Self.withReal("swiftdata-resources/default.store") { (opened: OpenedStore) throws in
            let model = opened.model
            // What the store itself can confirm: the entity names Z_PRIMARYKEY numbers, one column
            // per attribute, and a unique index for the uniqueness constraint. The rest (types,
            // optionality, defaults, inverses, delete rules) exists only in Apple's archived model;
            // the app's source, as the fixtures README describes it, is the one other witness, so
            // those facts stay stated here.
            #expect(model.entities.map(\.name) == (try truth.primaryKeys().filter { $0.ent < 16000 }.map(\.name)))
            for entity in model.entities {
                let columns = Set(try truth.connection.columns(of: "Z" + entity.name.uppercased()).map(\.name))
                #expect(entity.attributes.allSatisfy { columns.contains("Z" + $0.name.uppercased()) }, "\(entity.name)")
            }
            #expect(try truth.scalar("SELECT count(*) FROM sqlite_master WHERE type = 'index' AND tbl_name = 'ZITEM' AND sql LIKE 'CREATE UNIQUE INDEX%(ZNAME %'").int == 1)
            #expect(model.source == .cache)
            #expect(model.versionIdentifiers == ["1.0.0"])
            #expect(model.entities.map(\.name) == ["Component", "CraftingRecipe", "Item"])
            #expect(model.entities.allSatisfy { $0.className == $0.name && $0.renamingIdentifier == $0.name && $0.parent == nil })
            let component = try #require(model.entity("Component"))
            #expect(component.attributes.map { "\($0.name):\($0.type.name):\($0.isOptional)" } == ["count:Integer 64:false", "id:UUID:false"])
            #expect(component.attributes.first?.defaultValue == "1")
            let item = try #require(component.relationships.first { $0.name == "item" })
            #expect(item.destination == "Item" && item.inverse == nil && !item.isToMany && item.deleteRule == .nullify && item.isOptional)
            let required = try #require(model.entity("CraftingRecipe")?.relationships.first { $0.name == "requiredComponents" })
            #expect(required.isToMany && required.maxCount == 0 && required.inverse == "craftingRecipe" && !required.isOrdered)
            #expect(model.entity("CraftingRecipe")?.attributes.first?.defaultValue == "1")
            #expect(model.entity("Item")?.uniqueConstraints == [["name"]])
            #expect(opened.map.unknownColumns.isEmpty && opened.map.problems.isEmpty && opened.map.unknownTables.isEmpty)
            #expect(opened.map.entity(named: "Item")?.uniqueConstraints.first?.present == true)
        }
    }

    @Test("swiftdata-resources: rows and every update mask decode", .enabled(if: ProjectPaths.hasRealFixtures, Comment(rawValue: ProjectPaths.realFixturesMissing)))
    func resourcesRowsAndHistory() throws {
        let truth = try Self.sqlite("swiftdata-resources/default.store")
        let itemRows = try truth.rows("SELECT Z_PK, ZNAME FROM ZITEM ORDER BY Z_PK")
        let itemPKs: [Int] = itemRows.compactMap { $0[0].int }
        let itemNames: [String] = itemRows.map { $0[1].string ?? "" }
        // ZID's 16 bytes as the UUID string (hex digits in SQLite's order); whether it has a recipe.
        let componentRows = try truth.rows("SELECT Z_PK, hex(ZID), ZCRAFTINGRECIPE IS NULL FROM ZCOMPONENT ORDER BY Z_PK")
        let componentTruth: [(pk: Int, uuid: String, orphan: Bool)] = componentRows.map {
            ($0[0].int ?? -1, "uuid:" + Self.dashed($0[1].string ?? ""), $0[2].int == 1)
        }
        let writerRows = try truth.rows("""
            SELECT DISTINCT b.ZNAME, p.ZNAME, t.ZAUTHOR, t.ZCONTEXTNAME FROM ATRANSACTION t
            LEFT JOIN ATRANSACTIONSTRING b ON b.Z_PK = t.ZBUNDLEIDTS LEFT JOIN ATRANSACTIONSTRING p ON p.Z_PK = t.ZPROCESSIDTS
            """)
        let writers: [[String?]] = writerRows.map { r in (0..<4).map { r[$0].string } }
        let transactionCount = try truth.count("ATRANSACTION")
        #expect(componentTruth.contains { $0.orphan }, "the orphan component SQLite shows")
        #expect(writers.count == 1)
        let writer: [String?] = writers.first ?? [nil, nil, nil, nil]
        _ = try Self.withReal("swiftdata-resources/default.store") { (opened: OpenedStore) throws in
            let items = try LibraryFixture.rows(opened, "Item")
            #expect(items.map { Int($0.pk) } == itemPKs)
            #expect(items.map { $0["name"]?.testText ?? "" } == itemNames)
            let components = try LibraryFixture.rows(opened, "Component")
            #expect(components.map { Int($0.pk) } == componentTruth.map(\.pk))
            for c in componentTruth {
                #expect(components.first { Int($0.pk) == c.pk }?["id"]?.testText == c.uuid)
                if c.orphan { #expect(components.first { Int($0.pk) == c.pk }?["craftingRecipe"]?.testText == "null") }
            }

            var reader = try HistoryReader(connection: opened.connection, store: opened.store, model: opened.model)
            var masks: [String: Set<String>] = [:]
            var count = 0
            try reader.forEachTransaction { t in
                count += 1
                #expect(t.bundleID == writer[0] && t.processName == writer[1])
                #expect(t.author == writer[2] && t.contextName == writer[3])
                for c in t.changes where c.type == .update {
                    #expect(c.columnsNote == nil)
                    masks[c.entity, default: []].insert((c.updatedProperties ?? ["?"]).joined(separator: ","))
                }
            }
            #expect(count == transactionCount)
            // Which properties an update changed is the ZCOLUMNS bitmap read in the model's bit
            // order: only the model (Apple's archive) knows that order, so these sets stay stated.
            #expect(masks["CraftingRecipe"] == ["requiredComponents", "producedItemCount", "producedItem"])
            #expect(masks["Item"] == ["craftingRecipe", "name"])
            #expect(masks["Component"] == ["craftingRecipe"])
        }
    }

    @Test("coredata-2014: the Xcode model and the inferred model map the same columns and relationship", .enabled(if: ProjectPaths.hasRealFixtures, Comment(rawValue: ProjectPaths.realFixturesMissing)))
    func coreData2014() throws {
        let fromXML = try Self.withReal("coredata-2014/Model.sqlite", xcodeModel: "Model.xcdatamodeld") { (opened: OpenedStore) throws -> [String] in
            #expect(opened.model.source == .xcdatamodel)
            #expect(opened.model.versionIdentifiers == [""])
            #expect(opened.map.problems.isEmpty && opened.map.unknownColumns.isEmpty)
            let subcategory = try #require(opened.map.entity(named: "FeedbackCategory")?.relationship(named: "subcategory"))
            #expect(subcategory.kind == .toMany && subcategory.foreignTable == "ZFEEDBACKSUBCATEGORY" && subcategory.foreignColumn == "ZCATEGORY")
            let truth = try Self.sqlite("coredata-2014/Model.sqlite")
            #expect(try LibraryFixture.rows(opened, "FeedbackSubCategory").count == (try truth.count("ZFEEDBACKSUBCATEGORY")))
            #expect(try LibraryFixture.rows(opened, "FeedbackCategory").count == (try truth.count("ZFEEDBACKCATEGORY")))
            return opened.map.entities.flatMap { e in e.attributes.map { "\(e.entity.name).\($0.column ?? "-")" } }
        }
        let inferred = try Self.withReal("coredata-2014/Model.sqlite") { (opened: OpenedStore) throws -> [String] in
            #expect(opened.model.source == .inferred)
            // ZCATEGORY has a to-one's index and every value is a FeedbackCategory key, but a
            // FeedbackSubCategory key too (every table's keys start at 1), and nothing else says
            // where it points: it is read as the number it stores, and said to be uncertain. The
            // Xcode model beside the store (`--model`) gives the reference.
            #expect(opened.model.uncertainColumns == ["ZFEEDBACKSUBCATEGORY.ZCATEGORY"])
            #expect(opened.model.notes.contains { $0.contains("ZFEEDBACKSUBCATEGORY.ZCATEGORY") })
            #expect(opened.map.entity(named: "FeedbackSubCategory")?.relationship(named: "category") == nil)
            let rows = try LibraryFixture.rows(opened, "FeedbackSubCategory")
            let truth = try Self.sqlite("coredata-2014/Model.sqlite")
            #expect(rows.count == (try truth.count("ZFEEDBACKSUBCATEGORY")))
            #expect(rows.allSatisfy { !($0["category"]?.testText.contains("#") ?? false) }, "numbers, never references")
            return opened.map.entities.flatMap { e in e.attributes.map { "\(e.entity.name).\($0.column ?? "-")" } }
                .filter { $0 != "FeedbackSubCategory.ZCATEGORY" }
        }
        if let fromXML, let inferred { #expect(fromXML == inferred) }
    }
}

@Suite("pre-Xcode-4 model on a genuine store")
struct LegacyElementsModelTests {
    @Test("coredata-2013-legacy-model: the elements archive gives every column of both tables, typed as SQLite declares them",
          .enabled(if: ProjectPaths.hasRealFixtures, Comment(rawValue: ProjectPaths.realFixturesMissing)))
    func legacyElements() throws {
        _ = try RealStoreModelTests.withReal("coredata-2013-legacy-model/CoreData.sqlite", xcodeModel: "Hotel.xcdatamodel") { (opened: OpenedStore) throws in
            let model = opened.model
            #expect(model.source == .xcdatamodel)
            #expect(opened.map.problems.isEmpty, "\(opened.map.problems)")
            #expect(opened.map.unknownColumns.isEmpty, "\(opened.map.unknownColumns)")
            // The facts come from the store itself: Z_PRIMARYKEY's names, each table's columns and declared types.
            let names = try opened.connection.rows("SELECT Z_NAME FROM Z_PRIMARYKEY ORDER BY Z_NAME").compactMap { $0[0].string }
            #expect(model.entities.map(\.name) == names)
            for entity in model.entities {
                let columns = try opened.connection.columns(of: "Z" + entity.name.uppercased()).filter { !$0.name.hasPrefix("Z_") }
                #expect(Set(entity.attributes.map { "Z" + $0.name.uppercased() }) == Set(columns.map(\.name)), "\(entity.name)")
                for a in entity.attributes {
                    let declared = columns.first { $0.name == "Z" + a.name.uppercased() }?.declaredType
                    #expect(a.type.sqlType == declared, "\(entity.name).\(a.name) is \(a.type.name); SQLite declares \(declared ?? "-")")
                }
            }
        }
    }
}
