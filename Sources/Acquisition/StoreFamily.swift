import Foundation

/// A store as SQLite and Core Data keep it on disk: the main file and the files that belong
/// to it. Reading the main file without its `-wal` silently shows an older state, so the
/// family always travels together.
public struct StoreFamily: Equatable, Sendable {
    /// The main database file.
    public let main: URL
    /// `<main>-wal`: committed transactions not yet checkpointed into the main file.
    public var wal: URL?
    /// `<main>-shm`: the WAL index. Transient; kept only as evidence, never copied for reading.
    public var shm: URL?
    /// `<main>-journal`: a rollback journal; a non-empty one means an interrupted transaction.
    public var journal: URL?
    /// `.<name>_SUPPORT/`: external binary data (`_EXTERNAL_DATA/`) and other support files.
    public var supportFolder: URL?

    public init(main: URL, wal: URL? = nil, shm: URL? = nil, journal: URL? = nil, supportFolder: URL? = nil) {
        self.main = main
        self.wal = wal
        self.shm = shm
        self.journal = journal
        self.supportFolder = supportFolder
    }

    /// The family of `main`, with the sidecars that exist beside it.
    public static func beside(_ main: URL) -> StoreFamily {
        let fm = FileManager.default
        func existingFile(_ suffix: String) -> URL? {
            // Regular files only (a symlink counts by what it points to): a sidecar that is a
            // FIFO or a device such as /dev/zero would block or never end when read and hashed.
            let url = URL(fileURLWithPath: main.path + suffix)
            var info = stat()
            return stat(url.path, &info) == 0 && info.st_mode & S_IFMT == S_IFREG ? url : nil
        }
        let support = main.deletingLastPathComponent()
            .appendingPathComponent(".\(main.deletingPathExtension().lastPathComponent)_SUPPORT")
        var isDir: ObjCBool = false
        let supportExists = fm.fileExists(atPath: support.path, isDirectory: &isDir) && isDir.boolValue
        return StoreFamily(main: main, wal: existingFile("-wal"), shm: existingFile("-shm"),
                           journal: existingFile("-journal"), supportFolder: supportExists ? support : nil)
    }

    /// Every regular file of the family, main file first, including files under the support folder.
    public var files: [URL] {
        var result = [main] + [wal, shm, journal].compactMap { $0 }
        if let supportFolder,
           let walker = FileManager.default.enumerator(at: supportFolder, includingPropertiesForKeys: [.isRegularFileKey]) {
            var inside: [URL] = []
            for case let url as URL in walker where (try? url.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true {
                inside.append(url)
            }
            result += inside.sorted { $0.path < $1.path }
        }
        return result
    }
}
