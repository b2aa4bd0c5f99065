import Foundation

/// Large generated stores for `make bench`: sizes come from flags, contents are deterministic.
public enum BenchCorpus {
    /// A model with inheritance and a many-to-many relationship, like a real app's.
    public static let model = ModelDescription(entities: [
        EntityDescription("Note", attributes: [AttributeDescription("title", .string), AttributeDescription("body", .string),
                                               AttributeDescription("created", .date), AttributeDescription("id", .uuid)],
                          relationships: [RelationshipDescription("tags", to: "Tag", inverse: "notes", toMany: true),
                                          RelationshipDescription("folder", to: "Folder", inverse: "notes")]),
        EntityDescription("ChecklistNote", parent: "Note", attributes: [AttributeDescription("done", .boolean)]),
        EntityDescription("Tag", attributes: [AttributeDescription("name", .string)],
                          relationships: [RelationshipDescription("notes", to: "Note", inverse: "tags", toMany: true)]),
        EntityDescription("Folder", attributes: [AttributeDescription("name", .string)],
                          relationships: [RelationshipDescription("notes", to: "Note", inverse: "folder", toMany: true)]),
    ], versionIdentifiers: ["1.0.0"])

    /// Writes `rows` notes (a fifth of them checklist notes) in transactions of `batch` rows, each
    /// recorded in history; the last `walShare` of the transactions stay in the WAL. With
    /// `walBytes`, as many of the last transactions stay in the WAL as make it at least that large
    /// (measured on the way: the WAL's growth per commit since the last checkpoint), instead.
    public static func write(to url: URL, rows: Int, batch: Int = 100, walShare: Double = 0.25, walBytes: Int? = nil) throws {
        let writer = try StoreWriter(url: url, model: model, options: .init(uuid: UUID(uuidString: "0BE4C4B0-0000-4000-8000-000000000001")!))
        // A generated corpus needs no durability; without it 100,000 commits take minutes.
        try writer.executeRaw("PRAGMA synchronous = OFF")
        let app = StoreWriter.Writer(author: "bench", bundleID: "com.example.notes", processName: "Notes", contextName: "ViewContext")
        let epoch = Date(timeIntervalSinceReferenceDate: 700_000_000)
        try writer.transaction(app, at: epoch) { w in
            for i in 1...10 { try w.insert("Folder", ["name": .string("Folder \(i)")]) }
            for i in 1...50 { try w.insert("Tag", ["name": .string("tag\(i)")]) }
        }
        let batches = max(1, rows / batch)
        var checkpointAfter = Int(Double(batches) * (1 - walShare))
        var sinceCheckpoint = 0
        let walPath = url.path + "-wal"
        func walSize() -> Int { ((try? FileManager.default.attributesOfItem(atPath: walPath))?[.size] as? NSNumber)?.intValue ?? 0 }
        var n = 0
        for b in 0..<batches {
            // With a WAL size to reach: 200 commits after each checkpoint, estimate how many of the
            // last commits make that size (B-trees deepen as the store grows, so estimate again
            // after every checkpoint until the WAL part has begun).
            if let walBytes, b < checkpointAfter || checkpointAfter == batches, sinceCheckpoint == 200 || b == 0 {
                let perCommit = b == 0 ? 40_000 : max(4096, walSize() / sinceCheckpoint)
                let needed = Int((Double(walBytes) * 1.15 / Double(perCommit)).rounded(.up))
                checkpointAfter = max(b, batches - needed)
            }
            // Checkpoint now and then before the WAL part too, so the WAL never holds more than it should at the end.
            if b == checkpointAfter || (b < checkpointAfter && b > 0 && b % 1000 == 0) {
                try writer.checkpoint()
                sinceCheckpoint = 0
            }
            sinceCheckpoint += 1
            try writer.transaction(app, at: epoch.addingTimeInterval(Double(b) * 60)) { w in
                for _ in 0..<batch {
                    n += 1
                    let entity = n % 5 == 0 ? "ChecklistNote" : "Note"
                    var values: [String: BuilderValue] = [
                        "title": .string("Note \(n)"), "body": .string(String(repeating: "lorem ipsum ", count: 8)),
                        "created": .date(epoch.addingTimeInterval(Double(n))),
                        "id": .uuid(UUID(uuidString: String(format: "00000000-0000-4000-8000-%012d", n))!),
                        "folder": .object(entity: "Folder", pk: 1 + n % 10),
                    ]
                    if entity == "ChecklistNote" { values["done"] = .bool(n % 2 == 0) }
                    let pk = try w.insert(entity, values)
                    try w.link(entity, pk: pk, "tags", to: [1 + n % 50])
                }
            }
        }
        try writer.close(leavingWAL: true)
    }
}
