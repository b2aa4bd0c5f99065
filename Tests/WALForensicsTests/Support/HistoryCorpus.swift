import Foundation
import StoreBuilder
import StoreTestSupport

/// The history corpus: Tasks that keep their UUID on deletion and Flags that keep a Boolean,
/// deleted in the main file and in the -wal (HistoryDeletesTests, RecoveredVersionRulesTests).
enum HistoryCorpus {
    static let model: ModelDescription = {
        var id = AttributeDescription("id", .uuid)
        id.preservesValueOnDeletion = true
        var done = AttributeDescription("done", .boolean)
        done.preservesValueOnDeletion = true
        return ModelDescription(entities: [
            // A Task's delete keeps its UUID: a value one record holds alone.
            EntityDescription("Task", attributes: [id, .init("title", .string), .init("body", .string)]),
            // A Flag's delete keeps only a Boolean, which many records share: never a key by itself.
            EntityDescription("Flag", attributes: [done, .init("label", .string)]),
        ])
    }()

    struct Corpus {
        let folder: TemporaryFolder
        let url: URL
        /// What the test wrote: entity name and key → title or label.
        var texts: [String: [Int: String]] = [:]
        var ids: [Int: UUID] = [:]
    }

    /// Tasks and flags inserted, then every other Task deleted (freed cells left as separate
    /// freeblocks, so many lose their key), one Flag deleted and every other one changed, all
    /// checkpointed into the main file; then a few more Tasks deleted in the -wal.
    static func corpus() throws -> Corpus {
        let folder = try TemporaryFolder("recover-history")
        var corpus = Corpus(folder: folder, url: folder.path("default.store"))
        let writer = try StoreWriter(url: corpus.url, model: model)
        try writer.executeRaw("PRAGMA secure_delete = OFF")
        var tasks: [Int] = [], flags: [Int] = []
        try writer.transaction { w in
            for n in 0 ..< 80 {
                let id = UUID()
                let title = "task-\(n)-" + String(repeating: "t", count: n % 17)
                let pk = try w.insert("Task", ["id": .uuid(id), "title": .string(title), "body": .string(String(repeating: "b", count: 20 + n % 30))])
                corpus.texts["Task", default: [:]][pk] = title
                corpus.ids[pk] = id
                tasks.append(pk)
                let label = "flag-\(n)-" + String(repeating: "f", count: n % 13)
                let f = try w.insert("Flag", ["done": .bool(n % 3 == 0), "label": .string(label)])
                corpus.texts["Flag", default: [:]][f] = label
                flags.append(f)
            }
        }
        try writer.transaction(.init(author: "cleaner", bundleID: "com.example.app")) { w in
            for (i, pk) in tasks.enumerated() where i % 2 == 1 && i < 70 { try w.delete("Task", pk: pk) }
            // One Flag deleted (its delete keeps `done` true); every other Flag's label lengthened,
            // leaving its old version in free space with `done` true for a third of them.
            try w.delete("Flag", pk: flags[0])
            for (i, pk) in flags.enumerated() where i % 2 == 1 && i < 70 { try w.update("Flag", pk: pk, ["label": .string("changed-\(i)-" + String(repeating: "c", count: 40))]) }
        }
        try writer.checkpoint()
        try writer.transaction(.init(author: "later")) { w in
            for pk in tasks.suffix(4) { try w.delete("Task", pk: pk) }
        }
        try writer.close(leavingWAL: true)
        return corpus
    }

}
