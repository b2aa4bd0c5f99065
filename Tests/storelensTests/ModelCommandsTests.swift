import Foundation
import SQLiteAccess
import StoreBuilder
import StoreFormats
import StoreTestSupport
import Testing

/// `schema`, `rows` and `history` through the executable: on the genuine Apple stores (which must
/// stay byte-identical) and on the builder's library store.
@Suite("schema, rows and history commands")
struct ModelCommandsTests {
    /// Runs storelens on a real fixture, checking the folder is unchanged; nil when absent.
    static func runReal(_ relative: String, _ arguments: [String]) throws -> CommandResult? {
        let real = try #require(ProjectPaths.realFixtures())
        let store = real.appendingPathComponent(relative)
        let folder = store.deletingLastPathComponent()
        let before = try FolderSnapshot(folder)
        let arguments = arguments.map { $0 == "STORE" ? store.path : $0.replacingOccurrences(of: "FOLDER", with: folder.path) }
        let result = try CLI.run(arguments)
        let after = try FolderSnapshot(folder)
        #expect(before == after, "the originals must stay byte-identical")
        return result
    }

    static func entity(_ schema: [String: Any], _ name: String) -> [String: Any]? {
        (schema["entities"] as? [[String: Any]])?.first { $0["name"] as? String == name }
    }

    static func property(_ entity: [String: Any]?, _ kind: String, _ name: String) -> [String: Any]? {
        (entity?[kind] as? [[String: Any]])?.first { $0["name"] as? String == name }
    }

    /// SQLite on a private copy of a genuine store (WAL applied): the truth the commands must show.
    static func sqlite(_ relative: String) throws -> SQLiteOracle {
        try SQLiteOracle(copying: try #require(ProjectPaths.realFixtures()).appendingPathComponent(relative))
    }

    /// A 16-byte blob as the canonical UUID string.
    static func uuid(_ value: DatabaseValue) -> String? {
        guard case .blob(let data) = value, data.count == 16 else { return nil }
        return UUID(uuid: data.withUnsafeBytes { $0.loadUnaligned(as: uuid_t.self) }).uuidString
    }

    // MARK: - swiftdata-resources

    @Test("swiftdata-resources: schema from the cached model, every column mapped", .enabled(if: ProjectPaths.hasRealFixtures, Comment(rawValue: ProjectPaths.realFixturesMissing)))
    func resourcesSchema() throws {
        guard let result = try Self.runReal("swiftdata-resources/default.store", ["schema", "STORE", "--format", "json"]) else { return }
        #expect(result.status == 0, "\(result.stderr)")
        let schema = try CommandJSON.object(result.stdout)
        #expect(schema["modelSource"] as? String == "cache")
        #expect((schema["unknownColumns"] as? [Any])?.isEmpty == true)
        #expect((schema["problems"] as? [Any])?.isEmpty == true)
        let item = Self.entity(schema, "Item")
        #expect(item?["className"] as? String == "Item")
        #expect(item?["table"] as? String == "ZITEM")
        #expect(item?["uniqueConstraints"] as? [[String]] == [["name"]])
        #expect(Self.property(item, "attributes", "name")?["column"] as? String == "ZNAME")
        let itemRecipe = Self.property(item, "relationships", "craftingRecipe")
        #expect(itemRecipe?["destination"] as? String == "CraftingRecipe")
        #expect(itemRecipe?["inverse"] as? String == "producedItem")
        #expect(itemRecipe?["toMany"] as? Bool == false)
        #expect(itemRecipe?["column"] as? String == "ZCRAFTINGRECIPE")

        let component = Self.entity(schema, "Component")
        #expect(Self.property(component, "attributes", "id")?["type"] as? String == "UUID")
        #expect(Self.property(component, "attributes", "id")?["column"] as? String == "ZID")
        #expect(Self.property(component, "attributes", "count")?["type"] as? String == "Integer 64")
        #expect(Self.property(component, "attributes", "count")?["column"] as? String == "ZCOUNT")
        let componentItem = Self.property(component, "relationships", "item")
        #expect(componentItem?["destination"] as? String == "Item")
        #expect(componentItem?["inverse"] is NSNull)
        #expect(componentItem?["column"] as? String == "ZITEM")
        #expect(Self.property(component, "relationships", "craftingRecipe")?["inverse"] as? String == "requiredComponents")

        let recipe = Self.entity(schema, "CraftingRecipe")
        let required = Self.property(recipe, "relationships", "requiredComponents")
        #expect(required?["toMany"] as? Bool == true)
        #expect(required?["column"] as? String == "ZCOMPONENT.ZCRAFTINGRECIPE")
        #expect(Self.property(recipe, "attributes", "producedItemCount")?["type"] as? String == "String")
        let produced = Self.property(recipe, "relationships", "producedItem")
        #expect(produced?["destination"] as? String == "Item")
        #expect(produced?["inverse"] as? String == "craftingRecipe")
        #expect(produced?["column"] as? String == "ZPRODUCEDITEM")
    }

    @Test("swiftdata-resources: rows Item lists the names SQLite holds; Component UUIDs are canonical strings", .enabled(if: ProjectPaths.hasRealFixtures, Comment(rawValue: ProjectPaths.realFixturesMissing)))
    func resourcesRows() throws {
        guard let items = try Self.runReal("swiftdata-resources/default.store", ["rows", "STORE", "Item"]) else { return }
        #expect(items.status == 0, "\(items.stderr)")
        let truth = try Self.sqlite("swiftdata-resources/default.store")
        let names = try truth.rows("SELECT ZNAME FROM ZITEM ORDER BY Z_PK").compactMap { $0[0].string }
        #expect(!names.isEmpty)
        for name in names { #expect(items.stdout.contains(name), "\(name)") }
        #expect(items.stdout.contains("\(names.count) rows"))

        guard let components = try Self.runReal("swiftdata-resources/default.store", ["rows", "STORE", "Component", "--format", "json"]) else { return }
        #expect(components.status == 0, "\(components.stderr)")
        let output = try CommandJSON.object(components.stdout)
        let rows = try #require(output["rows"] as? [[String: Any]])
        let componentRows = try truth.rows("SELECT Z_PK, ZID, ZCRAFTINGRECIPE, ZITEM FROM ZCOMPONENT ORDER BY Z_PK")
        #expect(rows.count == componentRows.count)
        #expect(output["count"] as? Int == componentRows.count)
        let values = rows.compactMap { $0["values"] as? [String: Any] }
        let ids = values.compactMap { $0["id"] as? String }
        #expect(ids.sorted() == componentRows.compactMap { Self.uuid($0[1]) }.sorted(), "the 16-byte ZID blobs, as UUID strings")
        #expect(ids.allSatisfy { UUID(uuidString: $0)?.uuidString == $0 })
        // The orphan (README: a component with no recipe, a true anomaly): its item is a to-one as Entity#pk.
        let orphanRow = try #require(componentRows.first { $0[2] == .null && $0[3].int != nil }, "SQLite holds a component without a recipe")
        let orphan = try #require(rows.first { $0["pk"] as? Int == orphanRow[0].int }?["values"] as? [String: Any])
        #expect(orphan["craftingRecipe"] is NSNull)
        #expect(orphan["item"] as? String == "Item#\(orphanRow[3].int ?? -1)")

        guard let filtered = try Self.runReal("swiftdata-resources/default.store",
                                              ["rows", "STORE", "Component", "--where", "item=Item#8", "--format", "jsonl"]) else { return }
        #expect(filtered.stdout.split(separator: "\n").count == componentRows.filter { $0[3].int == 8 }.count)
    }

    @Test("swiftdata-resources: history --summary shows one writer with the counts SQLite finds in ACHANGE", .enabled(if: ProjectPaths.hasRealFixtures, Comment(rawValue: ProjectPaths.realFixturesMissing)))
    func resourcesHistory() throws {
        guard let result = try Self.runReal("swiftdata-resources/default.store", ["history", "STORE", "--summary", "--format", "json"]) else { return }
        #expect(result.status == 0, "\(result.stderr)")
        let output = try CommandJSON.object(result.stdout)
        let entities = try #require(output["entities"] as? [[String: Any]])
        let truth = try Self.sqlite("swiftdata-resources/default.store")
        // The one writer, as ATRANSACTION's interned strings name it.
        let writers = try truth.rows("""
            SELECT DISTINCT b.ZNAME, p.ZNAME FROM ATRANSACTION t
            LEFT JOIN ATRANSACTIONSTRING b ON b.Z_PK = t.ZBUNDLEIDTS LEFT JOIN ATRANSACTIONSTRING p ON p.Z_PK = t.ZPROCESSIDTS
            """).map { [$0[0].string ?? "-", $0[1].string ?? "-"] }
        let writer = try #require(writers.first)
        #expect(writers.count == 1)
        var counts: [String: [Int]] = [:]
        for e in entities {
            let writers = e["writers"] as? [[String: Any]] ?? []
            #expect(writers.count == 1)
            #expect(writers.first?["bundleID"] as? String == writer[0])
            #expect(writers.first?["processName"] as? String == writer[1])
            #expect(writers.first?["author"] is NSNull)
            counts[e["entity"] as? String ?? "?"] = ["inserts", "updates", "deletes"].map { writers.first?[$0] as? Int ?? -1 }
        }
        var expected: [String: [Int]] = [:]
        for k in try truth.primaryKeys() where k.ent < 16000 {
            expected[k.name] = try (0...2).map { try truth.count("ACHANGE", where: "ZENTITY = \(k.ent) AND ZCHANGETYPE = \($0)") }
        }
        #expect(counts == expected)

        guard let full = try Self.runReal("swiftdata-resources/default.store", ["history", "STORE", "--format", "json"]) else { return }
        let transactions = try #require(try CommandJSON.object(full.stdout)["transactions"] as? [[String: Any]])
        #expect(transactions.count == (try truth.count("ATRANSACTION")))
        let changes = transactions.flatMap { $0["changes"] as? [[String: Any]] ?? [] }
        #expect(changes.count == (try truth.count("ACHANGE")))
        let updates = changes.filter { $0["type"] as? String == "update" }
        #expect(updates.count == (try truth.count("ACHANGE", where: "ZCHANGETYPE = 1")))
        #expect(updates.allSatisfy { ($0["updatedProperties"] as? [String])?.isEmpty == false }, "every mask decodes")
        let recipeMasks = Set(updates.filter { $0["entity"] as? String == "CraftingRecipe" }.compactMap { ($0["updatedProperties"] as? [String])?.joined(separator: ",") })
        #expect(recipeMasks.contains("requiredComponents"))
        #expect(transactions.first?["bundleID"] as? String == writer[0])

        guard let items = try Self.runReal("swiftdata-resources/default.store", ["history", "STORE", "--entity", "Item", "--format", "json"]) else { return }
        let itemChanges = (try CommandJSON.object(items.stdout)["transactions"] as? [[String: Any]] ?? []).flatMap { $0["changes"] as? [[String: Any]] ?? [] }
        let itemEnt = try #require(try truth.primaryKeys().first { $0.name == "Item" }?.ent)
        #expect(itemChanges.count == (try truth.count("ACHANGE", where: "ZENTITY = \(itemEnt)")))
        #expect(itemChanges.allSatisfy { $0["entity"] as? String == "Item" })
    }

    // MARK: - coredata-2014

    @Test("coredata-2014: --model and the inferred model both map FeedbackCategory/FeedbackSubCategory; every row SQLite holds", .enabled(if: ProjectPaths.hasRealFixtures, Comment(rawValue: ProjectPaths.realFixturesMissing)))
    func coreData2014() throws {
        guard let xml = try Self.runReal("coredata-2014/Model.sqlite",
                                         ["schema", "STORE", "--model", "FOLDER/Model.xcdatamodeld", "--format", "json"]) else { return }
        #expect(xml.status == 0, "\(xml.stderr)")
        let fromXML = try CommandJSON.object(xml.stdout)
        #expect(fromXML["modelSource"] as? String == "xcdatamodel")
        #expect((fromXML["unknownColumns"] as? [Any])?.isEmpty == true)
        let subcategory = Self.property(Self.entity(fromXML, "FeedbackCategory"), "relationships", "subcategory")
        #expect(subcategory?["toMany"] as? Bool == true)
        #expect(subcategory?["inverse"] as? String == "category")
        #expect(subcategory?["column"] as? String == "ZFEEDBACKSUBCATEGORY.ZCATEGORY")
        let category = Self.property(Self.entity(fromXML, "FeedbackSubCategory"), "relationships", "category")
        #expect(category?["destination"] as? String == "FeedbackCategory")
        #expect(category?["column"] as? String == "ZCATEGORY")

        guard let inferred = try Self.runReal("coredata-2014/Model.sqlite", ["schema", "STORE", "--format", "json"]) else { return }
        let guessed = try CommandJSON.object(inferred.stdout)
        #expect(guessed["modelSource"] as? String == "inferred")
        #expect((guessed["unknownColumns"] as? [Any])?.isEmpty == true)
        // ZCATEGORY's values are keys of both tables: nothing in the SQL proves the reference, so
        // the inferred model reads the number and says so; the Xcode model above gives it.
        #expect(guessed["uncertainColumns"] as? [String] == ["ZFEEDBACKSUBCATEGORY.ZCATEGORY"])
        #expect(Self.property(Self.entity(guessed, "FeedbackSubCategory"), "relationships", "category") == nil)
        #expect(Self.property(Self.entity(guessed, "FeedbackSubCategory"), "attributes", "category")?["column"] as? String == "ZCATEGORY")

        guard let text = try Self.runReal("coredata-2014/Model.sqlite", ["schema", "STORE"]) else { return }
        #expect(text.stdout.contains("INFERRED"))

        guard let rows = try Self.runReal("coredata-2014/Model.sqlite", ["rows", "STORE", "FeedbackSubCategory", "--format", "csv",
                                                                          "--model", "FOLDER/Model.xcdatamodeld"]) else { return }
        #expect(rows.status == 0, "\(rows.stderr)")
        let lines = rows.stdout.split(separator: "\r\n")
        #expect(lines.first == "entity,pk,name,category")
        #expect(lines.count == 1 + (try Self.sqlite("coredata-2014/Model.sqlite").count("ZFEEDBACKSUBCATEGORY")))
        #expect(lines.dropFirst().allSatisfy { $0.contains(",FeedbackCategory#") })
        guard let numbers = try Self.runReal("coredata-2014/Model.sqlite", ["rows", "STORE", "FeedbackSubCategory", "--format", "csv"]) else { return }
        #expect(numbers.status == 0, "\(numbers.stderr)")
        #expect(!numbers.stdout.contains("#"), "inferred: the numbers SQLite holds, never references")

        guard let noHistory = try Self.runReal("coredata-2014/Model.sqlite", ["history", "STORE"]) else { return }
        #expect(noHistory.status == 2)
        #expect(noHistory.stderr.contains("Model.sqlite has no persistent history"))
        #expect(!noHistory.stderr.contains("storelens-"), "errors name the original, not the working copy")
    }

    // MARK: - The builder's library store

    static func library(modelCache: Bool = true) throws -> (TemporaryFolder, URL) {
        let folder = try TemporaryFolder("library-cli")
        let url = folder.path("Library.sqlite")
        try LibraryStore.write(url, modelCache: modelCache)
        return (folder, url)
    }

    @Test("library: schema JSON keys, legacy names, FEK, composite elements; input unchanged")
    func librarySchema() throws {
        let (folder, url) = try Self.library()
        let before = try FolderSnapshot(folder.url)
        let result = try CLI.run(["schema", url.path, "--format", "json"])
        #expect(try FolderSnapshot(folder.url) == before)
        #expect(result.status == 0, "\(result.stderr)")
        let schema = try CommandJSON.object(result.stdout)
        #expect(schema["schemaVersion"] as? Int == 1)
        let borrower = Self.entity(schema, "Borrower")
        #expect(borrower?["renamingIdentifier"] as? String == "Patron")
        #expect(borrower?["className"] as? String == "LibraryApp.BorrowerModel")
        #expect(Self.property(borrower, "attributes", "fullName")?["renamingIdentifier"] as? String == "name")
        #expect(Self.property(borrower, "attributes", "fullName")?["optional"] as? Bool == true)
        let elements = Self.property(borrower, "attributes", "address")?["elements"] as? [[String: Any]]
        #expect(elements?.compactMap { $0["column"] as? String } == ["ZSTREET", "ZCITY", "ZPOSTCODE"], "a composite element is stored in a column named after the element alone, as SwiftData does")
        #expect(Self.property(borrower, "relationships", "favorite")?["entityKeyColumn"] as? String == "Z2_FAVORITE")
        let film = Self.entity(schema, "Film")
        #expect(film?["parent"] as? String == "Media")
        #expect(Self.property(film, "attributes", "summary")?["column"] as? String == "ZSUMMARY1")
        let tags = Self.property(Self.entity(schema, "Media"), "relationships", "tags")
        #expect(tags?["joinTable"] as? String != nil)
        #expect(tags?["column"] is NSNull)
        let text = try CLI.run(["schema", url.path])
        #expect(text.stdout.contains("Borrower  (Z_ENT 1, was Patron, class LibraryApp.BorrowerModel"))
        #expect(text.stdout.contains("every column of every entity table is mapped"))
    }

    @Test("library: rows by legacy name, subentities named, --where, formats, limit, unknown entity")
    func libraryRows() throws {
        let (folder, url) = try Self.library()
        let before = try FolderSnapshot(folder.url)
        let media = try CLI.run(["rows", url.path, "Media", "--format", "jsonl"])
        #expect(media.status == 0, "\(media.stderr)")
        let lines = media.stdout.split(separator: "\n").map { line -> [String: Any]? in
            do { return try CommandJSON.object(line) } catch { Issue.record("\(error)"); return nil }
        }
        #expect(lines.map { $0?["_entity"] as? String } == ["Book", "Audiobook", "Film"])
        #expect(lines.allSatisfy { $0?["values"] == nil }, "jsonl lines are flat")
        let bookValues = lines.first ?? nil
        #expect(bookValues?["added"] as? String == "2024-07-29T03:19:53.5Z")
        let cover = bookValues?["cover"] as? [String: Any]
        #expect(cover?["storage"] as? String == "external")
        #expect((cover?["externalFile"] as? [String: Any])?["exists"] as? Bool == true)

        let patron = try CLI.run(["rows", url.path, "Patron", "--format", "json"])
        let patronRows = try #require(try CommandJSON.object(patron.stdout)["rows"] as? [[String: Any]])
        let values = try #require(patronRows.first?["values"] as? [String: Any])
        #expect(patronRows.first?["entity"] as? String == "Borrower")
        #expect(values["id"] as? String == LibraryStore.borrowerID.uuidString)
        #expect((values["address"] as? [String: Any])?["city"] as? String == "Springfield")
        #expect((values["preferences"] as? [String: Any])?["theme"] as? String == "dark")
        #expect(values["favorite"] as? String == "Film#3")

        let filtered = try CLI.run(["rows", url.path, "Media", "--where", "shelf=Shelf#1", "--where", "title=Dune", "--format", "csv"])
        #expect(filtered.stdout.split(separator: "\r\n").count == 2)
        let limited = try CLI.run(["rows", url.path, "Media", "--limit", "1"])
        #expect(limited.stdout.contains("1 row\n"))
        #expect(limited.stdout.contains("Dune"))

        let unknown = try CLI.run(["rows", url.path, "Borrowr"])
        #expect(unknown.status == 2)
        #expect(unknown.stderr.contains("did you mean 'Borrower'"))
        let badWhere = try CLI.run(["rows", url.path, "Borrower", "--where", "visits=lots"])
        #expect(badWhere.status == 2)
        #expect(badWhere.stderr.contains("is not an integer"))
        #expect(try FolderSnapshot(folder.url) == before)
    }

    @Test("library: rows --as-of reads the store as it stood after an earlier commit")
    func libraryAsOf() throws {
        let (folder, url) = try Self.library()
        defer { withExtendedLifetime(folder) {} }
        // Commit 1 (in the WAL) is the update transaction; commit 0 is the main file alone.
        let before = try CLI.run(["rows", url.path, "Film", "--as-of", "0", "--format", "json"])
        #expect(before.status == 0, "\(before.stderr)")
        let old = try #require((try CommandJSON.object(before.stdout)["rows"] as? [[String: Any]])?.first?["values"] as? [String: Any])
        #expect(old["summary"] as? String == "Sand")
        let now = try CLI.run(["rows", url.path, "Film", "--format", "json"])
        let new = try #require((try CommandJSON.object(now.stdout)["rows"] as? [[String: Any]])?.first?["values"] as? [String: Any])
        #expect(new["summary"] as? String == "Sand and worms")
        let tooFar = try CLI.run(["rows", url.path, "Film", "--as-of", "99"])
        #expect(tooFar.status == 2, "\(tooFar.stderr)")
    }

    @Test("library: history text and filters")
    func libraryHistory() throws {
        let (folder, url) = try Self.library()
        defer { withExtendedLifetime(folder) {} }
        let text = try CLI.run(["history", url.path])
        #expect(text.status == 0, "\(text.stderr)")
        #expect(text.stdout.contains("author editor"))
        #expect(text.stdout.contains("context ViewContext"))
        #expect(text.stdout.contains("update  Film#3  {duration, summary}"))
        let json = try CLI.run(["history", url.path, "--author", "editor", "--format", "json"])
        let transactions = try #require(try CommandJSON.object(json.stdout)["transactions"] as? [[String: Any]])
        #expect(transactions.count == 1)
        #expect(transactions.first?["contextName"] as? String == "ViewContext")
        let since = try CLI.run(["history", url.path, "--since", "2030-01-01", "--format", "json"])
        #expect((try CommandJSON.object(since.stdout)["transactions"] as? [Any])?.isEmpty == true)
        let badDate = try CLI.run(["history", url.path, "--since", "yesterday"])
        #expect(badDate.status == 2)
    }

    @Test("a damaged Z_MODELCACHE falls back to the inferred model with a clear note; schema still maps the store")
    func damagedCache() throws {
        let (folder, url) = try Self.library()
        defer { withExtendedLifetime(folder) {} }
        do {
            let db = try Connection.open(path: url.path, mode: .readWrite)
            try db.run("UPDATE Z_MODELCACHE SET Z_CONTENT = ?", [.blob(Data([0xFF, 0xFF, 0xFF, 0xFF, 0x00, 0x01]))])
        }
        let result = try CLI.run(["schema", url.path, "--format", "json"])
        #expect(result.status == 0, "\(result.stderr)")
        let schema = try CommandJSON.object(result.stdout)
        #expect(schema["modelSource"] as? String == "inferred")
        let notes = schema["modelNotes"] as? [String] ?? []
        #expect(notes.contains { $0.contains("Z_MODELCACHE is present but cannot be read") && $0.contains("DEFLATE") })
    }
}
