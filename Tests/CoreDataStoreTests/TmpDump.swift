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
