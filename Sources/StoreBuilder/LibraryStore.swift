import Foundation
import StoreFormats

/// A builder-made store with what the real ones lack: three-level inheritance with suffixed
/// columns, an FEK column, ordered and many-to-many relationships, a to-many without inverse,
/// renamed entity and attributes, external storage, transformable and composite attributes, and
/// history with authors, context names and update bitmaps.
///
/// Entity numbers: 1 Borrower, 2 Media, 3 Book, 4 Audiobook, 5 Film, 6 Shelf, 7 Tag.
public enum LibraryStore {
    public static let model = ModelDescription(entities: [
        EntityDescription("Media", isAbstract: true,
                          attributes: [AttributeDescription("title", .string, optional: false),
                                       AttributeDescription("added", .date),
                                       AttributeDescription("price", .decimal),
                                       AttributeDescription("cover", .binaryData, externalStorage: true)],
                          relationships: [RelationshipDescription("shelf", to: "Shelf", inverse: "items"),
                                          RelationshipDescription("tags", to: "Tag", inverse: "media", toMany: true)],
                          fetchIndexes: [FetchIndexDescription("byTitle", properties: ["title"])]),
        EntityDescription("Book", parent: "Media",
                          attributes: [AttributeDescription("summary", .string),
                                       AttributeDescription("isSigned", .boolean, default: .bool(false))]),
        EntityDescription("Audiobook", parent: "Book",
                          attributes: [AttributeDescription("duration", .double),
                                       AttributeDescription("narrator", .string)]),
        EntityDescription("Film", parent: "Media",
                          attributes: [AttributeDescription("duration", .double),
                                       AttributeDescription("summary", .string),
                                       AttributeDescription("trailer", .uri)]),
        EntityDescription("Borrower", className: "LibraryApp.BorrowerModel", renamingIdentifier: "Patron",
                          attributes: [AttributeDescription("id", .uuid, optional: false),
                                       AttributeDescription("fullName", .string, renamingIdentifier: "name"),
                                       AttributeDescription("memberSince", .date),
                                       AttributeDescription("visits", .integer32, default: .int(0)),
                                       AttributeDescription("preferences", .transformable, transformer: "NSSecureUnarchiveFromData"),
                                       AttributeDescription("address", .composite, elements: [
                                           AttributeDescription("street", .string),
                                           AttributeDescription("city", .string),
                                           AttributeDescription("postcode", .integer32),
                                       ])],
                          relationships: [RelationshipDescription("favorite", to: "Media", renamingIdentifier: "pick")]),
        EntityDescription("Shelf",
                          attributes: [AttributeDescription("label", .string)],
                          relationships: [RelationshipDescription("items", to: "Media", inverse: "shelf", toMany: true, ordered: true),
                                          RelationshipDescription("featured", to: "Book", toMany: true)]),
        EntityDescription("Tag",
                          attributes: [AttributeDescription("name", .string, optional: false)],
                          relationships: [RelationshipDescription("media", to: "Media", inverse: "tags", toMany: true)],
                          uniqueConstraints: [["name"]]),
    ], versionIdentifiers: ["2"])

    public static let borrowerID = UUID(uuidString: "6F1C2A53-9B0E-4C7D-8E21-3D5A7B9C0E14")!
    public static let coverFile = UUID(uuidString: "0A1B2C3D-4E5F-4071-8293-A4B5C6D7E8F9")!
    public static let missingFile = UUID(uuidString: "11111111-2222-4333-8444-555555555555")!
    /// 2024-07-29T03:19:53.5Z
    public static let added = Date(timeIntervalSinceReferenceDate: 743_915_993.5)

    /// A keyed archive of a dictionary, as `NSSecureUnarchiveFromData` stores one.
    public static func preferences() throws -> Data {
        let w = KeyedArchiveWriter()
        let dict = w.dictionary(keys: [w.string("theme"), w.string("fontSize")], values: [w.string("dark"), w.int(14)])
        return try w.finish(root: dict)
    }

    /// Writes the store at `url` (history tracked, a cached model unless `modelCache` is false).
    public static func write(_ url: URL, modelCache: Bool = true) throws {
        let w = try StoreWriter(url: url, model: model, options: .init(modelCache: modelCache, historyTracking: true))
        let cover = try w.externalData(Data(repeating: 0xAB, count: 4096), name: coverFile)
        let prefs = try preferences()
        try w.transaction(.init(author: "importer", bundleID: "com.example.Library", processName: "Library", contextName: "ImportContext"),
                          at: added) { w in
            try w.insert("Shelf", ["label": .string("Front")], pk: 1)
            try w.insert("Book", ["title": .string("Dune"), "summary": .string("Spice"), "isSigned": .bool(true),
                                  "added": .date(added), "price": .double(9.99), "cover": cover,
                                  "shelf": .object(entity: "Shelf", pk: 1)], pk: 1)
            try w.insert("Audiobook", ["title": .string("Dune (audio)"), "summary": .string("Spoken"), "narrator": .string("Scott"),
                                       "duration": .double(75_600), "cover": StoreWriter.inlineExternal(Data([1, 2, 3])),
                                       "shelf": .object(entity: "Shelf", pk: 1)], pk: 2)
            try w.insert("Film", ["title": .string("Dune (film)"), "summary": .string("Sand"), "duration": .double(9_300),
                                  "trailer": .string("https://example.com/dune"), "cover": StoreWriter.externalReference(missingFile)], pk: 3)
            try w.insert("Tag", ["name": .string("sf")], pk: 1)
            try w.insert("Tag", ["name": .string("classic")], pk: 2)
            try w.link("Media", pk: 1, "tags", to: [1, 2])
            try w.link("Film", pk: 3, "tags", to: [1])
            try w.insert("Borrower", ["id": .uuid(borrowerID), "fullName": .string("Ada"), "memberSince": .date(added),
                                      "visits": .int(3), "preferences": .data(prefs),
                                      "address.street": .string("1 Main St"), "address.city": .string("Springfield"),
                                      "address.postcode": .int(12345),
                                      "favorite": .object(entity: "Film", pk: 3)], pk: 1)
        }
        try w.executeRaw("UPDATE ZMEDIA SET Z6FEATURED = 1 WHERE Z_PK = 1")
        try w.executeRaw("UPDATE ZMEDIA SET Z_FOK_SHELF = 1024 * Z_PK WHERE ZSHELF IS NOT NULL")
        try w.checkpoint()
        try w.transaction(.init(author: "editor", bundleID: "com.example.Library", processName: "Library", contextName: "ViewContext"),
                          at: added.addingTimeInterval(60)) { w in
            try w.update("Film", pk: 3, ["duration": .double(9_360), "summary": .string("Sand and worms")])
            try w.update("Borrower", pk: 1, ["visits": .int(4)])
            try w.delete("Tag", pk: 2)
        }
        try w.close(leavingWAL: true)
    }

}
