import Foundation
import StoreBuilder
import StoreFormats
import StorelensKit
import StoreTestSupport
import Testing

/// The command is the library call, parsed and rendered: on the same inputs `storelens X
/// --format json` prints exactly the library's answer rendered by `Reports`, byte for byte. Were a
/// command to wire its own work again (another model, a refused store handled differently), an
/// app's CI calling the library would hear something else than the engineer running the command.
@Suite("the command and StorelensKit give the same answer")
struct CommandAgreementTests {
    /// The command's JSON document and the library's, rendered the same way.
    static func expectAgreement(_ arguments: [String], _ library: () throws -> JSONValue) throws {
        try expectSameOutput(arguments + ["--format", "json"]) { try library().rendered() + "\n" }
    }

    /// What the command prints and what the library gives (`SameOutput.expect`).
    static func expectSameOutput(_ arguments: [String], _ library: () throws -> String) throws {
        try SameOutput.expect(arguments, library)
    }

    /// `wal --diff` streams through a writer; the library's changes go through the same writer.
    static func diffJSON(_ changes: [Storelens.RecordChanges]) -> String {
        var out = ""
        RecordDiffWriter(format: .json, each: false) { out += $0 }.write(changes)
        return out
    }

    /// inspect, check, wal and wal --diff of `input`.
    static func expectAgreementOnReads(_ input: String) throws {
        try expectAgreement(["inspect", input]) { InspectionReport.json(try Storelens.inspect([input])) }
        try expectAgreement(["check", input]) { CheckReport.json(try Storelens.check([input])) }
        try expectAgreement(["wal", input]) { WALReport.json(try Storelens.wal([input])) }
        try expectSameOutput(["wal", input, "--diff", "--format", "json"]) { diffJSON(try Storelens.walDiff([input])) }
    }

    /// scan, schema, lint, history, rows of the first entity and recover of one store file.
    static func expectAgreementOnOneStore(_ store: String) throws {
        try expectAgreement(["scan", store]) {
            let result = try Storelens.scan([store])
            return ScanReport.json(inventories: result.inventories, stores: result.stores)
        }
        try expectAgreement(["schema", store]) { SchemaReport.json(try Storelens.schema(store)) }
        try expectAgreement(["lint", store]) { LintReport.json(try Storelens.lint([store])) }

        try expectSameOutput(["history", store, "--format", "json"]) {
            let (opened, transactions) = try Storelens.history(store)
            var out = ""
            let writer = HistoryWriter(format: .json, header: HistoryWriter.header(opened), path: opened.path) { out += $0 }
            writer.begin(title: HistoryWriter.title(opened))
            transactions.forEach(writer.add)
            writer.end()
            return out
        }

        if let entity = (try? Storelens.schema(store))?.map.entities.first(where: { $0.tableExists })?.entity.name {
            try expectSameOutput(["rows", store, entity, "--format", "json", "--limit", "50"]) {
              try Storelens.rows(store, .init(entity: entity, limit: 50)) { read -> String in
                guard case .sqlite(let entityRows) = read else { return "" }
                var out = ""
                let writer = RowsWriter(format: .json, fields: entityRows.fields, header: RowsWriter.header(entityRows)) { out += $0 }
                writer.begin()
                try entityRows.forEach { try writer.add($0) }
                writer.end()
                return out
              }
            }
        }

        try expectSameOutput(["recover", store, "--format", "json"]) {
            var out = ""
            let writer = RecoveryWriter(format: .json) { out += $0 }
            writer.begin()
            try Storelens.recover(store) { writer.add($0) }
            writer.end()
            return out
        }
    }

    @Test("the demo container: inspect, check, wal, wal --diff and audit")
    func demo() throws {
        let root = ProjectPaths.root()
        let demo = root.appendingPathComponent("Fixtures/demo-container").path
        let manifestPath = root.appendingPathComponent("Fixtures/demo-container.storelens.json").path
        try Self.expectAgreementOnReads(demo)
        let manifest = try Manifest.load(path: manifestPath)
        try Self.expectAgreement(["audit", demo, "--manifest", manifestPath]) {
            AuditReport.json(try Storelens.audit([demo], manifest: manifest, .init(manifestFile: URL(fileURLWithPath: manifestPath))),
                             manifest: manifestPath)
        }
    }

    @Test("genuine Apple stores: inspect, check, wal, wal --diff, scan, schema, lint, history, rows, recover",
          .enabled(if: ProjectPaths.hasRealFixtures, Comment(rawValue: ProjectPaths.realFixturesMissing)),
          arguments: ["notes-macos15-wal", "swiftdata-cocktails-preloaded", "knowledgec-tombstones", "backup-manifest-db", "coredata-2017-text-keys"])
    func realStore(_ name: String) throws {
        let folder = try #require(ProjectPaths.realFixtures()).appendingPathComponent(name)
        let store = try #require(try ProjectPaths.realStoreFile(in: folder), "a store in \(name)")
        try Self.expectAgreementOnReads(store.path)
        try Self.expectAgreementOnOneStore(store.path)
    }

    @Test("a store whose -wal was copied after a checkpoint the main file missed")
    func lateWAL() throws {
        let pulled = try LateWAL.pulledTodo(.insert)    // keeps its folder while it lives
        let store = pulled.store.path
        try Self.expectAgreement(["check", store]) { CheckReport.json(try Storelens.check([store])) }
        try Self.expectAgreement(["wal", store]) { WALReport.json(try Storelens.wal([store])) }
        // Inspecting it is refused, by both, in the same sentence.
        #expect(throws: (any Error).self) { try Storelens.inspect([store]) }
        try Self.expectAgreement(["inspect", store]) { InspectionReport.json(try Storelens.inspect([store])) }
    }

    @Test("a folder with one store that cannot be read: the others are answered, the refused one named")
    func refusedStore() throws {
        let folder = try TemporaryFolder("agreement-refused")
        _ = try SampleStores.todo(in: folder.url, name: "good.sqlite")
        let bad = try SampleStores.todo(in: folder.url, rows: 400, name: "bad.sqlite")
        let data = try Data(contentsOf: bad)
        try data.prefix(data.count / 2).write(to: bad)
        let input = folder.url.path
        let check = try Storelens.check([input])
        #expect(check.stores.count == 1 && check.refused.count == 1, "the library checks the good store and names the bad one")
        try Self.expectAgreement(["inspect", input]) { InspectionReport.json(try Storelens.inspect([input])) }
        try Self.expectAgreement(["check", input]) { CheckReport.json(check) }
    }

    @Test("a store without a cached model, checked against the app's Xcode model (--model)")
    func checkWithModel() throws {
        let folder = try TemporaryFolder("agreement-model")
        // Items without their required `id` and `createdAt`: only the model knows they are required.
        let store = folder.path("Todo.sqlite")
        let writer = try StoreWriter(url: store, model: SampleModels.todo, options: .init(journalMode: .delete, modelCache: false))
        try writer.transaction { w in
            let list = try w.insert("TodoList", ["name": .string("Home")])
            try w.insert("TodoItem", ["title": .string("milk"), "list": .object(entity: "TodoList", pk: list)])
        }
        try writer.close()
        let model = try XcodeModelWriter.write(versions: [("Todo", SampleModels.todo)], to: folder.path("Todo.xcdatamodeld"))
        let withModel = try Storelens.check([store.path], .init(xcodeModel: model))
        let inferred = try Storelens.check([store.path])
        #expect(withModel.findings.contains { $0.id == "required-null" }, "the library read the app's model")
        #expect(!inferred.findings.contains { $0.id == "required-null" }, "an inferred model cannot know what is required")
        try Self.expectAgreement(["check", store.path, "--model", model.path]) { CheckReport.json(withModel) }
    }
}
