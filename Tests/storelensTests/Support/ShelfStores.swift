import Foundation
import StoreBuilder
import StoreTestSupport

/// Stores of shelves and their entries, whose values every flat export and the time-zone tests compare.
enum ShelfStores {
    /// Shelves holding entries of every attribute type, one named like a reserved key.
    static let model = ModelDescription(entities: [
        EntityDescription("Shelf", attributes: [AttributeDescription("name", .string, optional: false)],
                          relationships: [RelationshipDescription("entries", to: "Entry", inverse: "shelf", toMany: true)]),
        EntityDescription("Entry",
                          attributes: [AttributeDescription("id", .uuid, optional: false),
                                       AttributeDescription("title", .string, optional: false),
                                       AttributeDescription("count", .integer64),
                                       AttributeDescription("score", .double),
                                       AttributeDescription("done", .boolean),
                                       AttributeDescription("at", .date),
                                       AttributeDescription("notes", .string),
                                       // A property that looks like a reserved key: it must not replace `_entity`.
                                       AttributeDescription("_entity", .string)],
                          relationships: [RelationshipDescription("shelf", to: "Shelf", inverse: "entries")]),
    ])

    /// A title a spreadsheet would run, with a tab, a newline and quotes inside.
    static let hostileTitle = "=HYPERLINK(\"http://x.example\")\tcol 2\nline 2 \"quoted\""

    /// Three entries in a rollback-journal store: one with every type and the hostile title, two sparse.
    static func flat(in folder: TemporaryFolder) throws -> URL {
        let url = folder.path("Flat.sqlite")
        let writer = try StoreWriter(url: url, model: model, options: .init(journalMode: .delete))
        try writer.transaction(.init(bundleID: "com.example.flat")) { w in
            let shelf = try w.insert("Shelf", ["name": .string("Top")])
            _ = try w.insert("Entry", ["id": .uuid(UUID(uuidString: "7C1EA5A6-0D9B-4B74-A530-13251F4943D8")!), "title": .string(hostileTitle),
                                       "count": .int(9_007_199_254_740_993), "score": .double(-2.5), "done": .bool(true),
                                       "at": .date(Date(timeIntervalSinceReferenceDate: 743_915_993.611546)),
                                       "_entity": .string("not the entity"), "shelf": .object(entity: "Shelf", pk: shelf)])
            _ = try w.insert("Entry", ["id": .uuid(UUID()), "title": .string("-12.5"), "done": .bool(false),
                                       "notes": .string("a \\ backslash, a comma"), "at": .date(Date(timeIntervalSinceReferenceDate: 0))])
            _ = try w.insert("Entry", ["id": .uuid(UUID()), "title": .string("plain"), "count": .int(-5), "score": .double(0.1)])
        }
        try writer.close()
        return url
    }

    /// A store with history whose WAL holds an update, an insert and a delete after a checkpoint.
    static func withHistoryInWAL(in folder: TemporaryFolder) throws -> URL {
        let url = folder.path("default.store")
        let writer = try StoreWriter(url: url, model: model)
        try writer.transaction(.init(bundleID: "com.example.flat")) { w in
            let shelf = try w.insert("Shelf", ["name": .string("Top")])
            _ = try w.insert("Entry", ["id": .uuid(UUID()), "title": .string("first"), "count": .int(3),
                                       "at": .date(Date(timeIntervalSinceReferenceDate: 743_915_993.611546)), "shelf": .object(entity: "Shelf", pk: shelf)])
            _ = try w.insert("Entry", ["id": .uuid(UUID()), "title": .string("=1+1"), "done": .bool(true)])
        }
        try writer.checkpoint()
        try writer.transaction(.init(bundleID: "com.example.flat")) { w in
            try w.update("Entry", pk: 1, ["title": .string("renamed"), "count": .int(4)])
            _ = try w.insert("Entry", ["id": .uuid(UUID()), "title": .string("third"), "at": .date(Date(timeIntervalSinceReferenceDate: 0))])
        }
        try writer.transaction(.init(bundleID: "com.example.widget")) { w in try w.delete("Entry", pk: 2) }
        try writer.close(leavingWAL: true)
        return url
    }
}
