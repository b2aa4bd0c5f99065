import Foundation
import SQLiteAccess
import StoreFormats

/// Unencrypted Finder/iTunes backups, written in the documented layout: Manifest.plist, a
/// Manifest.db whose Files table names each file, and each file under its hashed name.
public enum PlainBackup {
    /// A backup at `backup` (created) of every regular file under `container`, in `domain`.
    /// `adjust` gets the backup folder and its Manifest.db, still open, to add or break rows.
    public static func write(of container: URL, at backup: URL, domain: String,
                             adjust: (_ backup: URL, _ manifest: Connection) throws -> Void = { _, _ in }) throws {
        try FileManager.default.createDirectory(at: backup, withIntermediateDirectories: true)
        try BinaryPlistWriter.encode(.dictionary(["IsEncrypted": .bool(false), "Version": .string("10.0")]))
            .write(to: backup.appendingPathComponent("Manifest.plist"))
        let db = try Connection.open(path: backup.appendingPathComponent("Manifest.db").path, mode: .create)
        try db.execute("CREATE TABLE Files (fileID TEXT PRIMARY KEY, domain TEXT, relativePath TEXT, flags INTEGER, file BLOB)")
        let base = container.standardizedFileURL.path
        let walker = FileManager.default.enumerator(at: container, includingPropertiesForKeys: [.isRegularFileKey])
        while let url = walker?.nextObject() as? URL {
            guard (try url.resourceValues(forKeys: [.isRegularFileKey])).isRegularFile == true else { continue }
            let relative = String(url.standardizedFileURL.path.dropFirst(base.count + 1))
            let fileID = String(SHA256.hex(Data("\(domain)-\(relative)".utf8)).prefix(40))
            let folder = backup.appendingPathComponent(String(fileID.prefix(2)))
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            try FileManager.default.copyItem(at: url, to: folder.appendingPathComponent(fileID))
            try db.run("INSERT INTO Files VALUES (?, ?, ?, 1, NULL)", [.text(fileID), .text(domain), .text(relative)])
        }
        try adjust(backup, db)
    }
}
