import Foundation
import StoreBuilder
import StoreTestSupport
import Testing

/// One store an input cannot give (truncated) does not stop the others: they are read, the
/// refused one is named with its reason, and the exit code says an input was refused.
@Suite("a refused store does not stop the rest")
struct RefusedStoreTests {
    @Test("inspect and check on a folder with a good and a truncated store", arguments: ["inspect", "check"])
    func folderWithOneBadStore(_ command: String) throws {
        let folder = try TemporaryFolder("refused-\(command)")
        let good = try BadInputTests.builtStore(in: folder.url, name: "good.sqlite")
        let bad = try BadInputTests.builtStore(in: folder.url, rows: 400, name: "bad.sqlite")
        let data = try Data(contentsOf: bad)
        try data.prefix(data.count / 2).write(to: bad)
        let before = try FolderSnapshot(folder.url)
        let result = try CLI.run([command, folder.url.path, "--format", "json"])
        #expect(result.status == 2, "an input was refused: \(result.stderr)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        let stores = (json["stores"] as? [Any]) ?? []
        #expect(stores.count == 1, "the good store was still read")
        #expect("\(stores)".contains(good.lastPathComponent))
        let refused = (json["refused"] as? [[String: Any]]) ?? []
        #expect(refused.count == 1 && (refused.first?["reason"] as? String)?.contains("truncated") == true)
        #expect(result.stderr.contains("bad.sqlite") && result.stderr.contains("truncated"))
        #expect(try FolderSnapshot(folder.url) == before)
    }
}
