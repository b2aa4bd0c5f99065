import Foundation
import StoreFormats

/// Walks a folder (an app container, an `.xcappdata` bundle, an App Group container or any
/// tree) and finds every SQLite file by its first bytes, whatever its name.
///
/// Symlinks are never followed, and the walk is bounded in depth and in files.
struct FolderInventory {
    static let maxDepth = 64
    static let maxFiles = 1_000_000

    let root: URL

    struct Walk {
        var files: [SeenFile] = []
        var archives: [(path: String, url: URL)] = []
        var containers: [ContainerIdentity] = []
        var skipped: [SkippedEntry] = []
        var isXcappdata = false
    }

    func walk() -> Walk {
        var walk = Walk()
        // An .xcappdata bundle: AppDataInfo.plist beside AppData/, which is the container.
        let info = root.appendingPathComponent("AppDataInfo.plist")
        if FileManager.default.fileExists(atPath: info.path),
           FileManager.default.fileExists(atPath: root.appendingPathComponent("AppData").path) {
            walk.isXcappdata = true
            walk.containers.append(ContainerIdentity.fromAppDataInfo(info, root: "AppData"))
        }
        visit(root, relative: "", depth: 0, into: &walk)
        return walk
    }

    private func visit(_ url: URL, relative: String, depth: Int, into walk: inout Walk) {
        guard depth <= Self.maxDepth else {
            walk.skipped.append(SkippedEntry(path: relative, reason: "nested deeper than \(Self.maxDepth) folders"))
            return
        }
        guard let listing = RawPath.children(of: url.path) else {
            walk.skipped.append(SkippedEntry(path: relative.isEmpty ? "." : relative, reason: "folder cannot be read"))
            return
        }
        // A name in another encoding is shown by its bytes: a folder is read through its alias, a
        // file is not (a store's -wal and -shm are found by spelling its name).
        var names: [String] = []
        var aliases: [String: URL] = [:]
        for (name, path) in listing {
            guard let path else {
                walk.skipped.append(SkippedEntry(path: relative.isEmpty ? name : relative + "/" + name,
                    reason: "its name is not valid UTF-8, and a store's -wal and -shm are found by its name: copy it and its sidecars to UTF-8 names (cp) to have it read"))
                continue
            }
            names.append(name)
            if !path.hasPrefix(url.path + "/") { aliases[name] = URL(fileURLWithPath: path) }
        }
        let names_ = Set(names)
        // A container root: the container manager's marker, or Documents/ beside Library/.
        if names_.contains(ContainerIdentity.metadataPlistName),
           let identity = ContainerIdentity.fromMetadataPlist(url.appendingPathComponent(ContainerIdentity.metadataPlistName), root: relative) {
            walk.containers.append(identity)
        } else if names_.contains("Library") && (names_.contains("Documents") || names_.contains("tmp")),
                  !walk.containers.contains(where: { $0.root == relative }) {
            walk.containers.append(ContainerIdentity(kind: .unknown, identifier: nil, source: "folder layout (Documents/, Library/)", root: relative))
        }
        for name in names.sorted() {
            guard walk.files.count < Self.maxFiles else {
                walk.skipped.append(SkippedEntry(path: relative, reason: "more than \(Self.maxFiles) files; the rest was not read"))
                return
            }
            let child = aliases[name] ?? url.appendingPathComponent(name)
            let childRelative = relative.isEmpty ? name : relative + "/" + name
            guard let attributes = try? FileManager.default.attributesOfItem(atPath: child.path),
                  let type = attributes[.type] as? FileAttributeType else {
                walk.skipped.append(SkippedEntry(path: childRelative, reason: "cannot be read"))
                continue
            }
            switch type {
            case .typeDirectory:
                visit(child, relative: childRelative, depth: depth + 1, into: &walk)
            case .typeRegular:
                let size = (attributes[.size] as? NSNumber)?.intValue ?? 0
                let head = FamilyGrouping.prefix(of: child, count: 262)
                let isSQLite = DatabaseHeader.isSQLite(head)
                if AppleDouble.matches(head) {
                    walk.skipped.append(SkippedEntry(path: childRelative, reason: AppleDouble.reason(for: childRelative)))
                    continue
                }
                walk.files.append(SeenFile(path: childRelative, url: child, size: size, isSQLite: isSQLite,
                                           atomic: isSQLite ? nil : StoreFileFormat.atomic(head: head)))
                if !isSQLite, ArchiveSniffer.looksLikeArchive(head) {
                    walk.archives.append((childRelative, child))
                }
            case .typeSymbolicLink:
                let target = SymbolicLink.target(of: child.path) ?? "?"
                let sidecar = FamilyGrouping.sidecarSuffixes.keys.first { name.hasSuffix($0) }
                walk.skipped.append(SkippedEntry(path: childRelative, reason: sidecar.map { suffix in
                    "symbolic link to \(target) (not followed: links inside the evidence never are); the \(suffix) of \(name.dropLast(suffix.count)) is therefore missing, so replace the link with the file itself (cp -L) to have it read"
                } ?? "symbolic link to \(target) (not followed: links inside the evidence never are)"))
            default:
                walk.skipped.append(SkippedEntry(path: childRelative, reason: "not a regular file"))
            }
        }
    }
}

/// Recognises archive formats by their first bytes, so archives are found whatever their name.
enum ArchiveSniffer {
    static func looksLikeArchive(_ head: Data) -> Bool {
        let b = [UInt8](head)
        func starts(_ magic: [UInt8]) -> Bool { b.count >= magic.count && Array(b.prefix(magic.count)) == magic }
        if starts([0x1f, 0x8b]) || starts([0x50, 0x4b, 0x03, 0x04]) || starts([0x50, 0x4b, 0x05, 0x06])
            || starts([0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00]) || starts([0x42, 0x5a, 0x68]) || starts([0x28, 0xb5, 0x2f, 0xfd])
            || starts([0x37, 0x7a, 0xbc, 0xaf, 0x27, 0x1c]) {
            return true
        }
        // POSIX tar: "ustar" at offset 257.
        return b.count >= 262 && Array(b[257..<262]) == Array("ustar".utf8)
    }
}
