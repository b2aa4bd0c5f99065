import Foundation
import SQLiteAccess
import StoreFormats

/// Why a backup folder could not be read.
public enum BackupError: Error, Equatable, CustomStringConvertible, Sendable {
    case encrypted(path: String)
    case manifestUnreadable(path: String, detail: String)

    public var description: String {
        switch self {
        case .encrypted(let path):
            return "\(path) is an encrypted backup; storelens reads only unencrypted backups — make a new backup in Finder with \"Encrypt local backup\" turned off, or decrypt it first."
        case .manifestUnreadable(let path, let detail):
            return "\(path)/Manifest.db cannot be read (\(detail)); the backup may be incomplete — copy the whole backup folder again."
        }
    }
}

/// An unencrypted Finder/iTunes backup: files live under hashed names (`ab/abcdef…`) and
/// `Manifest.db` maps them to their domain and path. App domains become container roots, and a
/// store's `-wal`/`-shm` are found under their own hashed names.
struct BackupInventory {
    let root: URL
    let session: EvidenceSession

    static func isBackup(_ folder: URL) -> Bool {
        FileManager.default.fileExists(atPath: folder.appendingPathComponent("Manifest.db").path)
            || FileManager.default.fileExists(atPath: folder.appendingPathComponent("Manifest.plist").path)
    }

    struct Result {
        var files: [SeenFile] = []
        var containers: [ContainerIdentity] = []
        var skipped: [SkippedEntry] = []
    }

    func read() throws -> Result {
        let manifestPlist = root.appendingPathComponent("Manifest.plist")
        if FileManager.default.fileExists(atPath: manifestPlist.path),
           let data = try? Data(contentsOf: manifestPlist), Self.isEncrypted(data) {
            throw BackupError.encrypted(path: root.path)
        }
        let manifest = root.appendingPathComponent("Manifest.db")
        guard FileManager.default.fileExists(atPath: manifest.path) else {
            throw BackupError.manifestUnreadable(path: root.path, detail: "there is no Manifest.db")
        }
        guard DatabaseHeader.isSQLite(FamilyGrouping.prefix(of: manifest)) else {
            // An encrypted backup's Manifest.db is itself encrypted.
            throw BackupError.encrypted(path: root.path)
        }
        let connection: Connection
        do {
            connection = try session.workingCopy(of: manifest).open()
        } catch {
            throw BackupError.manifestUnreadable(path: root.path, detail: "\(error)")
        }
        // A view named Files could run any query, one that never ends among them.
        let filesIsTable: Bool
        do {
            filesIsTable = try connection.tableExists("Files")
        } catch {
            throw BackupError.manifestUnreadable(path: root.path, detail: "\(error)")
        }
        guard filesIsTable else { throw BackupError.manifestUnreadable(path: root.path, detail: "it has no Files table") }
        var result = Result()
        var domains = Set<String>()
        do {
            let statement = try connection.prepare("SELECT fileID, domain, relativePath, flags FROM Files WHERE flags = 1 ORDER BY domain, relativePath")
            try statement.forEach { row in
                guard let fileID = row[0].string, let domain = row[1].string, let relative = row[2].string else {
                    result.skipped.append(SkippedEntry(path: "Manifest.db row", reason: "a Files row without fileID, domain or relativePath"))
                    return
                }
                guard let kind = Self.containerKind(domain) else { return }
                // fileID names a file in the backup: it must be 40 hex digits, nothing else.
                guard fileID.count == 40, fileID.allSatisfy(\.isHexDigit) else {
                    result.skipped.append(SkippedEntry(path: "\(domain)/\(relative)", reason: "invalid fileID in Manifest.db"))
                    return
                }
                guard case .safe(let components, _) = ArchivePath.sanitize(relative) else {
                    result.skipped.append(SkippedEntry(path: "\(domain)/\(relative)", reason: "unsafe relativePath in Manifest.db"))
                    return
                }
                let url = root.appendingPathComponent(String(fileID.prefix(2))).appendingPathComponent(fileID)
                let path = ([domain] + components).joined(separator: "/")
                guard let attributes = try? FileManager.default.attributesOfItem(atPath: url.path),
                      (attributes[.type] as? FileAttributeType) == .typeRegular else {
                    result.skipped.append(SkippedEntry(path: path, reason: "listed in Manifest.db but missing from the backup"))
                    return
                }
                if domains.insert(domain).inserted {
                    let identifier = domain.split(separator: "-", maxSplits: 1).dropFirst().first.map(String.init)
                    result.containers.append(ContainerIdentity(kind: kind, identifier: identifier, source: "backup domain \(domain)", root: domain))
                }
                result.files.append(SeenFile(path: path, url: url, size: (attributes[.size] as? NSNumber)?.intValue ?? 0,
                                             isSQLite: DatabaseHeader.isSQLite(FamilyGrouping.prefix(of: url))))
            }
        } catch {
            throw BackupError.manifestUnreadable(path: root.path, detail: "\(error)")
        }
        return result
    }

    static func containerKind(_ domain: String) -> ContainerIdentity.Kind? {
        if domain.hasPrefix("AppDomainGroup-") { return .appGroup }
        if domain.hasPrefix("AppDomainPlugin-") { return .appExtension }
        if domain.hasPrefix("AppDomain-") { return .appData }
        return nil
    }

    static func isEncrypted(_ data: Data) -> Bool {
        if BinaryPlist.isBinaryPlist(data), let value = try? BinaryPlist.decode(data) {
            return value["IsEncrypted"]?.boolValue == true
        }
        let any = try? PropertyListSerialization.propertyList(from: data, options: [], format: nil)
        return ((any as? [String: Any])?["IsEncrypted"] as? Bool) == true
    }
}
