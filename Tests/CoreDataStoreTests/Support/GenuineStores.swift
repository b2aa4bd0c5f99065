import Foundation
import StoreTestSupport

/// The genuine stores of `../shared/fixtures/real`, file by file (InferenceOracleTests, StackHintTests).
enum GenuineStores {
    /// Every SQLite file of a genuine fixture folder.
    static func sqliteFiles(in folder: String) throws -> [URL] {
        guard let real = ProjectPaths.realFixtures() else { return [] }
        let dir = real.appendingPathComponent(folder)
        return try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted().map { dir.appendingPathComponent($0) }.filter { url in
            guard !url.path.hasSuffix("-wal"), !url.path.hasSuffix("-shm"), let handle = FileHandle(forReadingAtPath: url.path) else { return false }
            defer { try? handle.close() }
            return (try? handle.read(upToCount: 16)) == Data("SQLite format 3\0".utf8)
        }
    }

}
