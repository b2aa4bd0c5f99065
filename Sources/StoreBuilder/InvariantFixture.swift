import Foundation

/// A small store with every relationship shape the integrity checks look at (inheritance with an
/// entity key, many-to-many, one-to-one, uniqueness, external storage), for check and repair tests.
public enum InvariantFixture {
    public static let model = ModelDescription(entities: [
        EntityDescription("Note", attributes: [AttributeDescription("title", .string, optional: false), AttributeDescription("id", .uuid)],
                          relationships: [RelationshipDescription("tags", to: "Tag", inverse: "notes", toMany: true),
                                          RelationshipDescription("attachments", to: "Attachment", inverse: "note", toMany: true)]),
        EntityDescription("ChecklistNote", parent: "Note", attributes: [AttributeDescription("done", .boolean)]),
        EntityDescription("Tag", attributes: [AttributeDescription("name", .string)],
                          relationships: [RelationshipDescription("notes", to: "Note", inverse: "tags", toMany: true)],
                          uniqueConstraints: [["name"]]),
        EntityDescription("Attachment", attributes: [AttributeDescription("data", .binaryData, externalStorage: true)],
                          relationships: [RelationshipDescription("note", to: "Note", inverse: "attachments")]),
        EntityDescription("Account", attributes: [AttributeDescription("name", .string)],
                          relationships: [RelationshipDescription("profile", to: "Profile", inverse: "account")]),
        EntityDescription("Profile", attributes: [AttributeDescription("bio", .string)],
                          relationships: [RelationshipDescription("account", to: "Account", inverse: "profile")]),
    ], versionIdentifiers: ["1.0.0"])

    /// Titles of the notes `make(in:leavingWAL: true)` commits only to the `-wal`.
    public static let walTitles = ["wal note", "wal list"]

    /// A clean store: 3 notes (one checklist), 2 tags, 2 attachments (one external), an account with its profile.
    ///
    /// With `leavingWAL`, that content is checkpointed into the main file, and then one more
    /// commit (a note tagged `a` with an inline attachment, a checklist note: `walTitles`) and
    /// whatever `plant` writes stay only in the `-wal`, as on a device whose app was still running:
    /// the main file alone lacks them, so a repair that ignored the `-wal` would miss both.
    public static func make(in folder: URL, leavingWAL: Bool = false, plant: (StoreWriter) throws -> Void = { _ in }) throws -> URL {
        let url = folder.appendingPathComponent("default.store")
        let w = try StoreWriter(url: url, model: model)
        try w.transaction(.init(bundleID: "com.example.notes")) { w in
            for n in 1...2 { try w.insert("Note", ["title": .string("note \(n)"), "id": .uuid(UUID())]) }
            try w.insert("ChecklistNote", ["title": .string("list"), "done": .bool(false)])
            try w.insert("Tag", ["name": .string("a")])
            try w.insert("Tag", ["name": .string("b")])
            try w.link("Note", pk: 1, "tags", to: [1, 2])
            try w.link("ChecklistNote", pk: 3, "tags", to: [1])
            try w.insert("Attachment", ["note": .object(entity: "Note", pk: 1), "data": StoreWriter.inlineExternal(Data([1, 2, 3]))])
            try w.insert("Attachment", ["note": .object(entity: "ChecklistNote", pk: 3), "data": try w.externalData(Data(repeating: 9, count: 2000))])
            try w.insert("Account", ["name": .string("me"), "profile": .object(entity: "Profile", pk: 1)])
            try w.insert("Profile", ["bio": .string("hi"), "account": .object(entity: "Account", pk: 1)])
        }
        if leavingWAL {
            try w.checkpoint()
            try w.transaction(.init(bundleID: "com.example.notes")) { w in
                let note = try w.insert("Note", ["title": .string(walTitles[0]), "id": .uuid(UUID())])
                try w.insert("ChecklistNote", ["title": .string(walTitles[1]), "done": .bool(true)])
                try w.link("Note", pk: note, "tags", to: [1])
                try w.insert("Attachment", ["note": .object(entity: "Note", pk: note), "data": StoreWriter.inlineExternal(Data([4, 5]))])
            }
        }
        try plant(w)
        try w.close(leavingWAL: leavingWAL)
        return url
    }
}
