import Acquisition
import CoreDataStore
import Deflate
import Foundation
import SQLiteAccess
import StoreBuilder
import StoreFormats
import StoreTestSupport
import Testing

/// Where a model comes from when the cache is damaged or absent: the Xcode model, the inferred
/// model, and how the cache and --model are compared.
@Suite("model sources: damaged caches, Xcode models, inferred models")
struct ModelSourcesTests {
    // MARK: - Damaged Z_MODELCACHE

    /// The library store's cached model as a decoded plist, for planting damage.
    static func cachePlist() throws -> PlistValue {
        let folder = try TemporaryFolder("cache-source")
        let url = folder.path("Library.sqlite")
        try LibraryStore.write(url)
        let db = try Connection.open(path: url.path, mode: .readOnly)
        let blob = try #require(try db.scalar("SELECT Z_CONTENT FROM Z_MODELCACHE").data)
        return try BinaryPlist.decode(try RawDeflate.inflate(blob, maxOutputBytes: 1 << 24))
    }

    static func blob(_ plist: PlistValue) throws -> Data {
        try RawDeflate.deflate(BinaryPlistWriter.encode(plist))
    }

    /// `$objects` with `edit` applied to the entry whose class is `className` and field `NSEntityName`
    /// (or `NSPropertyName`) names `name`.
    static func editing(_ plist: PlistValue, className: String, named name: String,
                        _ edit: (inout [String: PlistValue], _ selfUID: UInt64, _ objects: [PlistValue]) -> Void) throws -> PlistValue {
        guard case .dictionary(var root) = plist, case .array(var objects)? = root["$objects"] else {
            throw KeyedArchiveError.notKeyedArchive
        }
        func string(_ value: PlistValue?) -> String? {
            guard case .uid(let uid)? = value else { return nil }
            return objects[Int(uid)].stringValue
        }
        for (i, object) in objects.enumerated() {
            guard case .dictionary(var fields) = object, case .uid(let cls)? = fields["$class"],
                  objects[Int(cls)]["$classname"]?.stringValue == className,
                  string(fields["NSEntityName"]) == name || string(fields["NSPropertyName"]) == name else { continue }
            edit(&fields, UInt64(i), objects)
            objects[i] = .dictionary(fields)
        }
        root["$objects"] = .array(objects)
        return .dictionary(root)
    }

    static func expectUnreadable(_ blob: Data, mentioning words: [String]) {
        do {
            let model = try ModelCacheReader.decode(blob, path: "Damaged.sqlite")
            Issue.record("a damaged cache decoded into \(model.entities.count) entities")
        } catch {
            let text = error.description
            #expect(text.hasPrefix("Damaged.sqlite: the cached model in Z_MODELCACHE cannot be read"))
            for word in words { #expect(text.contains(word), "\(text)") }
        }
    }

    @Test("bad DEFLATE, a non-archive and an out-of-range UID are clear errors")
    func unreadableCaches() throws {
        Self.expectUnreadable(Data([0xFF, 0xFF, 0xFF, 0xFF, 0x00, 0x01]), mentioning: ["DEFLATE"])
        Self.expectUnreadable(try RawDeflate.deflate(Data("not a plist at all".utf8)), mentioning: ["keyed archive"])
        Self.expectUnreadable(try Self.blob(.dictionary(["$archiver": .string("NSKeyedArchiver"), "$objects": .array([.string("$null")]),
                                                         "$top": .dictionary(["root": .uid(0)])])),
                              mentioning: ["NSManagedObjectModel"])
        let plist = try Self.cachePlist()
        let outOfRange = try Self.editing(plist, className: "NSEntityDescription", named: "Tag") { fields, _, _ in
            fields["NSProperties"] = .uid(999_999)
        }
        Self.expectUnreadable(try Self.blob(outOfRange), mentioning: ["UID 999999"])
        let wrongType = try Self.editing(plist, className: "NSAttributeDescription", named: "title") { fields, _, _ in
            fields["NSPropertyName"] = .uid(0)
            fields["NSRenamingIdentifier"] = .array([])
        }
        Self.expectUnreadable(try Self.blob(wrongType), mentioning: ["NSRenamingIdentifier"])
    }

    @Test("cycles in the archived graph (self-parent, parent loop, self-containing properties) terminate")
    func cyclicCaches() throws {
        let plist = try Self.cachePlist()
        // Tag is its own parent; Shelf and Borrower are each other's.
        var cyclic = try Self.editing(plist, className: "NSEntityDescription", named: "Tag") { fields, me, _ in
            fields["NSSuperentity"] = .uid(me)
        }
        var shelf: UInt64 = 0, borrower: UInt64 = 0
        _ = try Self.editing(cyclic, className: "NSEntityDescription", named: "Shelf") { _, me, _ in shelf = me }
        _ = try Self.editing(cyclic, className: "NSEntityDescription", named: "Borrower") { _, me, _ in borrower = me }
        cyclic = try Self.editing(cyclic, className: "NSEntityDescription", named: "Shelf") { f, _, _ in f["NSSuperentity"] = .uid(borrower) }
        cyclic = try Self.editing(cyclic, className: "NSEntityDescription", named: "Borrower") { f, _, _ in f["NSSuperentity"] = .uid(shelf) }
        let model = try ModelCacheReader.decode(try Self.blob(cyclic), path: "Cyclic.sqlite")
        #expect(model.entity("Tag")?.parent == "Tag")
        #expect(model.lineage(of: "Tag").map(\.name) == ["Tag"])
        #expect(model.lineage(of: "Shelf").count == 2)
        #expect(model.entitiesInNumberingOrder.count == model.entities.count)
        #expect(!model.updateBitOrder(entity: "Shelf").isEmpty)

        // The map of a store with such a model finishes and says what is wrong.
        let folder = try TemporaryFolder("cyclic")
        let url = folder.path("Library.sqlite")
        try LibraryStore.write(url)
        do {
            let db = try Connection.open(path: url.path, mode: .readWrite)
            try db.run("UPDATE Z_MODELCACHE SET Z_CONTENT = ?", [.blob(try Self.blob(cyclic))])
        }
        let session = try EvidenceSession()
        defer { session.scratch.remove() }
        let opened = try OpenedStore.open(try session.workingCopy(of: url), displayPath: url.path)
        #expect(opened.model.source == .cache)
        #expect(opened.map.problems.contains { $0.contains("entity Tag has parent Tag in the model but none in Z_PRIMARYKEY") })

        // A properties dictionary that contains the entity itself is skipped with a note.
        let selfContaining = try Self.editing(plist, className: "NSEntityDescription", named: "Tag") { fields, me, _ in
            fields["NSProperties"] = .uid(me)
        }
        Self.expectUnreadable(try Self.blob(selfContaining), mentioning: ["NSDictionary"])
    }

    @Test("composite attributes nested without end (or containing themselves) are refused, not recursed forever")
    func deepComposites() throws {
        let plist = try Self.cachePlist()
        let selfNested = try Self.editing(plist, className: "NSCompositeAttributeDescription", named: "address") { fields, _, objects in
            // The composite's element list holds the composite itself.
            guard case .uid(let list)? = fields["NSElements"] else { return }
            _ = objects[Int(list)]
        }
        // Make the elements array contain the composite: rewrite that array's members.
        guard case .dictionary(var root) = selfNested, case .array(var objects)? = root["$objects"] else { return }
        var compositeUID: UInt64?
        var listUID: UInt64?
        for (i, o) in objects.enumerated() {
            if case .uid(let cls)? = o["$class"], objects[Int(cls)]["$classname"]?.stringValue == "NSCompositeAttributeDescription",
               case .uid(let list)? = o["NSElements"] {
                compositeUID = UInt64(i)
                listUID = list
            }
        }
        let composite = try #require(compositeUID), list = try #require(listUID)
        guard case .dictionary(var listFields) = objects[Int(list)] else { return }
        listFields["NS.objects"] = .array([.uid(composite)])
        objects[Int(list)] = .dictionary(listFields)
        root["$objects"] = .array(objects)
        Self.expectUnreadable(try Self.blob(.dictionary(root)), mentioning: ["nested more than 8"])
    }

    @Test("a store whose cache is damaged falls back to --model, or to the inferred model, and says so")
    func fallback() throws {
        let folder = try TemporaryFolder("fallback")
        let url = folder.path("Library.sqlite")
        try LibraryStore.write(url)
        do {
            let db = try Connection.open(path: url.path, mode: .readWrite)
            try db.run("UPDATE Z_MODELCACHE SET Z_CONTENT = ?", [.blob(Data(repeating: 0xEE, count: 64))])
        }
        let bundle = try XcodeModelWriter.write(versions: [("Library", LibraryStore.model)], to: folder.path("Library.xcdatamodeld"))
        let session = try EvidenceSession()
        defer { session.scratch.remove() }
        let withXML = try OpenedStore.open(try session.workingCopy(of: url), displayPath: url.path, xcodeModel: bundle)
        #expect(withXML.model.source == .xcdatamodel)
        #expect(withXML.model.notes.contains { $0.contains("cannot be read") && $0.contains("--model is used instead") })
        #expect(withXML.map.unknownColumns.isEmpty)
        let inferred = try OpenedStore.open(try session.workingCopy(of: url), displayPath: url.path)
        #expect(inferred.model.source == .inferred)
        #expect(inferred.model.notes.first?.contains("inferred from the SQL schema instead") == true)
        try session.finish()
    }

    // MARK: - Xcode models

    @Test("an .xcdatamodeld's current version maps exactly like the cache; entity and property renames come from elementID")
    func xcodeModel() throws {
        let folder = try TemporaryFolder("xcode")
        let url = folder.path("NoCache.sqlite")
        try LibraryStore.write(url, modelCache: false)
        var old = LibraryStore.model
        old.entities.removeAll { $0.name == "Tag" }
        for i in old.entities.indices { old.entities[i].relationships.removeAll { $0.destination == "Tag" } }
        let bundle = try XcodeModelWriter.write(versions: [("Library", old), ("Library 2", LibraryStore.model)],
                                                current: "Library 2", to: folder.path("Library.xcdatamodeld"))
        let model = try XcodeModelReader.read(bundle)
        #expect(model.source == .xcdatamodel)
        #expect(model.origin == "Library.xcdatamodeld/Library 2.xcdatamodel")
        #expect(model.entity("Tag") != nil)
        #expect(model.notes.contains { $0.contains("holds 2 versions") })
        #expect(model.entity("Borrower")?.legacyName == "Patron")
        #expect(model.entity("Borrower")?.className == "LibraryApp.BorrowerModel")
        #expect(model.entity("Borrower")?.attributes.first { $0.name == "fullName" }?.legacyName == "name")
        #expect(model.entity("Borrower")?.attributes.first { $0.name == "address" }?.elements.map(\.name) == ["street", "city", "postcode"])
        #expect(model.entity("Media")?.attributes.first { $0.name == "cover" }?.allowsExternalBinaryDataStorage == true)
        #expect(model.entity("Shelf")?.relationships.first { $0.name == "items" }?.isOrdered == true)
        #expect(model.entity("Tag")?.uniqueConstraints == [["name"]])
        #expect(model.entity("Media")?.fetchIndexes.first?.elements.map(\.property) == ["title"])
        // One version folder, and its contents file, are accepted too.
        #expect(try XcodeModelReader.read(bundle.appendingPathComponent("Library.xcdatamodel")).entity("Tag") == nil)
        #expect(try XcodeModelReader.read(bundle.appendingPathComponent("Library 2.xcdatamodel/contents")).entity("Tag") != nil)

        let session = try EvidenceSession()
        defer { session.scratch.remove() }
        let fromXML = try OpenedStore.open(try session.workingCopy(of: url), displayPath: url.path, xcodeModel: bundle)
        let cached = folder.path("Cached.sqlite")
        try LibraryStore.write(cached)
        let fromCache = try OpenedStore.open(try session.workingCopy(of: cached), displayPath: cached.path)
        #expect(fromXML.map.unknownColumns.isEmpty && fromXML.map.problems.isEmpty, "\(fromXML.map.problems)")
        for e in fromCache.map.entities {
            let other = try #require(fromXML.map.entity(named: e.entity.name))
            #expect(e.attributes.map { $0.column ?? "-" } == other.attributes.map { $0.column ?? "-" }, "\(e.entity.name)")
            #expect(e.relationships.map { "\($0.column ?? "")|\($0.entityKeyColumn ?? "")|\($0.foreignColumn ?? "")|\($0.joinTable ?? "")" }
                    == other.relationships.map { "\($0.column ?? "")|\($0.entityKeyColumn ?? "")|\($0.foreignColumn ?? "")|\($0.joinTable ?? "")" },
                    "\(e.entity.name)")
        }
        try session.finish()
    }

    @Test("the cached model and a different --model: the cache wins and every difference is listed")
    func disagreements() throws {
        let folder = try TemporaryFolder("disagree")
        let url = folder.path("Library.sqlite")
        try LibraryStore.write(url)
        var other = LibraryStore.model
        other.entities.removeAll { $0.name == "Shelf" }
        for i in other.entities.indices { other.entities[i].relationships.removeAll { $0.destination == "Shelf" } }
        if let i = other.entities.firstIndex(where: { $0.name == "Tag" }) {
            other.entities[i].attributes[0].type = .integer64
            other.entities[i].uniqueConstraints = []
        }
        if let i = other.entities.firstIndex(where: { $0.name == "Borrower" }) { other.entities[i].renamingIdentifier = "Member" }
        let bundle = try XcodeModelWriter.write(versions: [("Library", other)], to: folder.path("Other.xcdatamodeld"))
        let session = try EvidenceSession()
        defer { session.scratch.remove() }
        let opened = try OpenedStore.open(try session.workingCopy(of: url), displayPath: url.path, xcodeModel: bundle)
        #expect(opened.model.source == .cache)
        let d = opened.model.disagreements
        #expect(d.contains("entity Shelf is in the cached model but not in the Xcode model"))
        #expect(d.contains("Tag.name type: String in the cache, Integer 64 in the Xcode model"))
        #expect(d.contains("relationship Media.shelf is only in the cached model"))
        #expect(d.contains("Borrower renaming identifier: \"Patron\" in the cache, \"Member\" in the Xcode model"))
        #expect(d.contains { $0.hasPrefix("Tag uniqueness constraints") })
        try session.finish()
    }

    @Test("bad --model inputs are clear errors: missing, no version, a DTD, not a model, escaping .xccurrentversion")
    func badXcodeModels() throws {
        let folder = try TemporaryFolder("bad-xcode")
        func expectError(_ url: URL, _ words: String) {
            do {
                _ = try XcodeModelReader.read(url)
                Issue.record("\(url.lastPathComponent) was accepted")
            } catch {
                #expect(error.description.contains(words), "\(error.description)")
            }
        }
        expectError(folder.path("Nope.xcdatamodeld"), "no such file")
        let empty = folder.path("Empty.xcdatamodeld")
        try FileManager.default.createDirectory(at: empty, withIntermediateDirectories: true)
        expectError(empty, "no .xcdatamodel version inside")
        let dtd = folder.path("dtd-contents")
        try Data("<?xml version=\"1.0\"?><!DOCTYPE model [<!ENTITY a \"aaaa\">]><model>&a;</model>".utf8).write(to: dtd)
        expectError(dtd, "DTD")
        let html = folder.path("html-contents")
        try Data("<html><body>hello</body></html>".utf8).write(to: html)
        expectError(html, "not a Core Data model")
        let broken = folder.path("broken-contents")
        try Data("<model><entity name=\"A\"".utf8).write(to: broken)
        expectError(broken, "line")
        let escaping = try XcodeModelWriter.write(versions: [("M", LibraryStore.model)], to: folder.path("Escape.xcdatamodeld"))
        try Data("<?xml version=\"1.0\"?><plist version=\"1.0\"><dict><key>_XCCurrentVersionName</key><string>../../etc</string></dict></plist>".utf8)
            .write(to: escaping.appendingPathComponent(".xccurrentversion"))
        expectError(escaping, "not a model version in this folder")
    }

    @Test("--model files are read with bounds: a FIFO and an oversized file are refused at once; a linked model is read")
    func boundedModelFiles() throws {
        let folder = try TemporaryFolder("bounded-model")
        // Xcode's own layout, then each of its files swapped for one that must not be read whole.
        let bundle = try XcodeModelWriter.write(versions: [("Library", LibraryStore.model)], to: folder.path("Library.xcdatamodeld"))
        let contents = bundle.appendingPathComponent("Library.xcdatamodel/contents")
        let good = try XcodeModelReader.read(bundle)
        #expect(good.entities.map(\.name).sorted() == LibraryStore.model.entities.map(\.name).sorted())

        // A link to the model (a checkout's usual shape) reads the model it names.
        let link = folder.path("Linked.xcdatamodeld")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: bundle)
        #expect(try XcodeModelReader.read(link).entities.count == good.entities.count)

        // A sparse file over the limit: refused by its size, without reading 32 MiB.
        let saved = try Data(contentsOf: contents)
        try FileManager.default.removeItem(at: contents)
        #expect(FileManager.default.createFile(atPath: contents.path, contents: nil))
        let handle = try FileHandle(forWritingTo: contents)
        try handle.truncate(atOffset: UInt64(XcodeModelReader.maxContentsBytes + 1))
        try handle.close()
        #expect(throws: ModelError.self) { try XcodeModelReader.read(bundle) }
        do { _ = try XcodeModelReader.read(bundle) } catch { #expect(error.description.contains("above the \(XcodeModelReader.maxContentsBytes)-byte limit"), "\(error)") }

        // A FIFO where the contents file was: opening it must not wait for a writer.
        try FileManager.default.removeItem(at: contents)
        #expect(mkfifo(contents.path, 0o600) == 0)
        do { _ = try XcodeModelReader.read(bundle); Issue.record("a FIFO was read as a model") } catch {
            #expect(error.description.contains("not a regular file"), "\(error)")
        }
        try FileManager.default.removeItem(at: contents)
        try saved.write(to: contents)
        #expect(try XcodeModelReader.read(bundle).entities.count == good.entities.count)

        // A compiled model in the way of a .mom, as a FIFO.
        let mom = folder.path("Model.mom")
        #expect(mkfifo(mom.path, 0o600) == 0)
        do { _ = try CompiledModelReader.read(mom); Issue.record("a FIFO was read as a compiled model") } catch {
            #expect(error.description.contains("not a regular file"), "\(error)")
        }
    }

    @Test("hostile entity and table names are only ever quoted identifiers")
    func hostileNames() throws {
        let folder = try TemporaryFolder("hostile")
        let url = folder.path("NoCache.sqlite")
        try LibraryStore.write(url, modelCache: false)
        let odd = "We\"ird); DROP TABLE ZMEDIA; --"
        do {
            let db = try Connection.open(path: url.path, mode: .readWrite)
            try db.run("UPDATE Z_PRIMARYKEY SET Z_NAME = ? WHERE Z_NAME = 'Tag'", [.text(odd)])
            try db.execute("ALTER TABLE ZTAG RENAME TO \(Identifier.quoted("Z" + odd.uppercased()))")
        }
        let session = try EvidenceSession()
        defer { session.scratch.remove() }
        let opened = try OpenedStore.open(try session.workingCopy(of: url), displayPath: url.path)
        let entity = try opened.entity(odd)
        #expect(entity.tableExists)
        let rows = try LibraryFixture.rows(opened, odd, filters: ["name=sf"])
        #expect(rows.map(\.entity) == [odd])
        #expect(try LibraryFixture.rows(opened, "Media").count == 3, "ZMEDIA is still there")
        try session.finish()
    }

    // MARK: - Inferred model

    @Test("the inferred model of the library store: FEK destination, hierarchy owners, suffixes, join table, hidden key, index names")
    func inferredModel() throws {
        let folder = try TemporaryFolder("inferred")
        let url = folder.path("NoCache.sqlite")
        try LibraryStore.write(url, modelCache: false)
        let session = try EvidenceSession()
        defer { session.scratch.remove() }
        let opened = try OpenedStore.open(try session.workingCopy(of: url), displayPath: url.path)
        let model = opened.model
        #expect(model.source == .inferred)
        #expect(opened.map.unknownColumns.isEmpty, "\(opened.map.unknownColumns)")
        #expect(model.entity("Audiobook")?.parent == "Book")
        let favorite = try #require(model.entity("Borrower")?.relationships.first { $0.name == "favorite" })
        #expect(favorite.destination == "Media", "from the FEK column Z2_FAVORITE")
        #expect(model.entity("Audiobook")?.attributes.map(\.name) == ["duration", "narrator"])
        #expect(model.entity("Film")?.attributes.map(\.name).contains("summary") == true, "ZSUMMARY1 is Film's summary")
        #expect(opened.map.entity(named: "Film")?.attribute(named: "summary")?.column == "ZSUMMARY1")
        #expect(model.entity("Borrower")?.attributes.first { $0.name == "id" }?.type == .uuid)
        #expect(model.entity("Tag")?.uniqueConstraints == [["name"]])
        #expect(model.entity("Media")?.fetchIndexes.map(\.name) == ["byTitle"])
        let tags = try #require(opened.map.entity(named: "Media")?.relationship(named: "tags"))
        #expect(tags.kind == .manyToMany && tags.joinSourceColumn == "Z_2MEDIA")
        let featured = try #require(model.entity("Shelf")?.relationships.first { $0.name == "featured" })
        #expect(featured.isToMany && featured.destination == "Book" && featured.inverse == nil)
        let items = try #require(model.entity("Shelf")?.relationships.first { $0.name.hasPrefix("(inverse of") })
        #expect(items.isOrdered, "Z_FOK_SHELF beside the foreign key")
        // Rows still decode by the inferred types.
        let borrower = try #require(try LibraryFixture.rows(opened, "Borrower").first)
        #expect(borrower["id"]?.testText == "uuid:6F1C2A53-9B0E-4C7D-8E21-3D5A7B9C0E14")
        #expect(borrower["favorite"]?.testText == "Film#3")
        try session.finish()
    }
}
