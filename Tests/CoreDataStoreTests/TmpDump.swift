import Foundation
import StoreBuilder
import Testing
@Test func tmpDumpLibrary() throws {
    guard let dir = ProcessInfo.processInfo.environment["DUMP_LIBRARY"] else { return }
    try? FileManager.default.removeItem(atPath: dir)
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    try LibraryStore.write(URL(fileURLWithPath: dir + "/Library.sqlite"))
    try LibraryStore.write(URL(fileURLWithPath: dir + "/NoCache.sqlite"), modelCache: false)
    try XcodeModelWriter.write(versions: [("Library", LibraryStore.model)], to: URL(fileURLWithPath: dir + "/Library.xcdatamodeld"))
}
@Test func tmpDumpBig() throws {
    guard let dir = ProcessInfo.processInfo.environment["DUMP_BIG"] else { return }
    try? FileManager.default.removeItem(atPath: dir)
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    let w = try StoreWriter(url: URL(fileURLWithPath: dir + "/Big.sqlite"), model: SampleModels.todo, options: .init(journalMode: .delete, historyTracking: false))
    try w.transaction(nil) { w in
        let list = try w.insert("TodoList", ["name": .string("L")])
        for i in 0..<300_000 {
            try w.insert("TodoItem", ["id": .uuid(UUID()), "title": .string("task \(i) with some text"), "createdAt": .date(Date()), "isCompleted": .bool(i % 2 == 0), "list": .object(entity: "TodoList", pk: list)])
        }
    }
    try w.close()
}
