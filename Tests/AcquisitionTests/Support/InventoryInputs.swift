import Foundation
import SQLiteAccess
import StoreBuilder
import StoreTestSupport

/// Inputs the inventory and the gzip layer are tried on.
enum InventoryInputs {
    /// The demo container, with a media file and a cache database that is not named like one.
    static func demoContainer(in folder: TemporaryFolder) throws -> URL {
        let container = folder.path("container")
        try DemoContainer.write(into: container)
        try Data(repeating: 7, count: 50_000).write(to: container.appendingPathComponent("Documents/photo.jpg"))
        let cache = try Connection.open(path: container.appendingPathComponent("Library/Caches/Cache.data").path, mode: .create)
        try cache.execute("CREATE TABLE c (k, v); INSERT INTO c VALUES (1, 2);")
        return container
    }

    /// A device's backup folder name, and the demo app's domain in it.
    static let backupName = "00008030-001A2B3C4D5E802E"
    static let backupDomain = "AppDomain-com.example.todo"
}
