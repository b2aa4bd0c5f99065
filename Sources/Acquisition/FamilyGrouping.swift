import Foundation
import StoreFormats

/// One file seen in an input, before stores are grouped into families.
struct SeenFile {
    /// Path inside the input, `/`-separated.
    let path: String
    /// Where its bytes are on disk (an original, or an extracted copy in scratch).
    let url: URL
    let size: Int
    let isSQLite: Bool
    /// A Core Data XML or binary store (`StoreFileFormat.atomic(head:)`): a store without sidecars.
    var atomic: StoreFileFormat? = nil

    /// A store's main file, of either kind.
    var isStore: Bool { isSQLite || atomic != nil }
}

/// Groups files into store families: every SQLite file with the `-wal`, `-shm`, `-journal` and
/// `.<name>_SUPPORT/` that sit beside it under the same name. Sidecars may come in any order.
enum FamilyGrouping {
    static let sidecarSuffixes = ["-wal": "wal", "-shm": "shm", "-journal": "journal"]

    static func group(_ files: [SeenFile], containers: [ContainerIdentity]) -> (stores: [FoundStore], orphans: [OrphanSidecar]) {
        let byPath = Dictionary(files.map { ($0.path, $0) }, uniquingKeysWith: { first, _ in first })
        // Support files by their `.<name>_SUPPORT/` folder, and containers by root: looked up per
        // store, so grouping stays linear in the number of stores (thousands in a simulator folder).
        var bySupport: [String: [SeenFile]] = [:]
        for file in files {
            let parts = file.path.split(separator: "/", omittingEmptySubsequences: false)
            guard let at = parts.firstIndex(where: { $0.hasPrefix(".") && $0.hasSuffix("_SUPPORT") }), at < parts.count - 1 else { continue }
            bySupport[parts[...at].joined(separator: "/") + "/", default: []].append(file)
        }
        var byRoot: [String: [ContainerIdentity]] = [:]
        for container in containers { byRoot[container.root, default: []].append(container) }
        var claimed = Set<String>()
        var stores: [FoundStore] = []
        for file in files.sorted(by: { $0.path < $1.path }) where file.isStore {
            let wal = byPath[file.path + "-wal"], shm = byPath[file.path + "-shm"], journal = byPath[file.path + "-journal"]
            let parent = (file.path as NSString).deletingLastPathComponent
            let stem = ((file.path as NSString).lastPathComponent as NSString).deletingPathExtension
            let supportPrefix = (parent.isEmpty ? "" : parent + "/") + ".\(stem)_SUPPORT/"
            let supportFiles = bySupport[supportPrefix] ?? []
            for f in [wal, shm, journal].compactMap({ $0 }) + supportFiles { claimed.insert(f.path) }
            claimed.insert(file.path)
            var supportURL: URL?
            if let first = supportFiles.first {
                // The support folder on disk: strip the part of the path below `_SUPPORT/`.
                let below = first.path.dropFirst(supportPrefix.count)
                var url = first.url
                for _ in below.split(separator: "/") { url.deleteLastPathComponent() }
                supportURL = url
            }
            let externalPrefix = supportPrefix + "_EXTERNAL_DATA/"
            let external = supportFiles.filter { $0.path.hasPrefix(externalPrefix) }
            var ancestors = [""]
            var prefix = ""
            for part in file.path.split(separator: "/").dropLast() {
                prefix += (prefix.isEmpty ? "" : "/") + part
                ancestors.append(prefix)
            }
            let container = ancestors.flatMap { byRoot[$0] ?? [] }
                .max { ($0.root.count, $0.source == ContainerIdentity.metadataPlistName ? 1 : 0) < ($1.root.count, $1.source == ContainerIdentity.metadataPlistName ? 1 : 0) }
            stores.append(FoundStore(
                path: file.path,
                family: StoreFamily(main: file.url, wal: wal?.url, shm: shm?.url, journal: journal?.url, supportFolder: supportURL),
                name: (file.path as NSString).lastPathComponent,
                sidecars: .init(wal: wal?.path, shm: shm?.path, journal: journal?.path,
                                externalData: external.isEmpty ? nil : String(externalPrefix.dropLast()),
                                externalDataFiles: external.count),
                size: file.size, container: container,
                location: wellKnownLocation(file.path, container: container), sha256: [:], format: file.atomic ?? .sqlite))
        }
        var orphans: [OrphanSidecar] = []
        for file in files where !claimed.contains(file.path) && !file.isStore {
            for (suffix, kind) in sidecarSuffixes where file.path.hasSuffix(suffix) {
                orphans.append(OrphanSidecar(path: file.path, kind: kind, size: file.size))
            }
        }
        return (stores, orphans.sorted { $0.path < $1.path })
    }

    /// Names the places Apple's frameworks put stores by default.
    static func wellKnownLocation(_ path: String, container: ContainerIdentity?) -> String? {
        let inContainer = container.map { $0.root.isEmpty ? path : String(path.dropFirst($0.root.count + 1)) } ?? path
        if inContainer == "Library/Application Support/default.store" || inContainer.hasSuffix("/Library/Application Support/default.store") {
            return "SwiftData default store"
        }
        if inContainer.hasPrefix("Library/Application Support/") && inContainer.hasSuffix(".sqlite") {
            return "Core Data store in Application Support (NSPersistentContainer's default folder)"
        }
        if inContainer.hasSuffix("default.store") { return "SwiftData store" }
        return nil
    }

    /// A store in an App Group container with the same name as a store in an app's container
    /// may be a second copy of it, and the two can diverge. Most stores are called
    /// `default.store`, so the name alone ties nothing: the copy is tied to the app store whose
    /// bytes are identical, else to the app whose bundle id the group id names
    /// (`group.com.example.todo` and `com.example.todo`). Call once hashes are recorded.
    static func markSecondCopies(_ stores: inout [FoundStore]) {
        var byName: [String: [Int]] = [:]
        for i in stores.indices where stores[i].container?.kind != .appGroup { byName[stores[i].name, default: []].append(i) }
        for i in stores.indices where stores[i].container?.kind == .appGroup {
            let candidates = (byName[stores[i].name] ?? []).map { stores[$0] }
            guard !candidates.isEmpty else { continue }
            let hash = stores[i].sha256[stores[i].path]
            let note: String
            if let hash, let same = candidates.first(where: { $0.sha256[$0.path] == hash }) {
                note = "a copy of \(same.path) in an App Group container (identical bytes)"
            } else if let group = stores[i].container?.identifier, let owner = candidates.first(where: { candidate in
                guard let app = candidate.container?.identifier else { return false }
                let stem = group.hasPrefix("group.") ? String(group.dropFirst(6)) : group
                return app == stem || app.hasPrefix(stem + ".") || stem.hasPrefix(app + ".")
            }) {
                note = "second copy of \(owner.path) (the app whose group this is) in an App Group container; the two can diverge"
            } else {
                continue
            }
            let s = stores[i]
            stores[i] = FoundStore(path: s.path, family: s.family, name: s.name, sidecars: s.sidecars, size: s.size,
                                   container: s.container, location: [s.location, note].compactMap { $0 }.joined(separator: "; "),
                                   hashes: s.hashes)
        }
    }

    /// Reads up to `count` bytes from the start of a file, without following a symlink.
    static func prefix(of url: URL, count: Int = 16) -> Data {
        let fd = open(url.path, O_RDONLY | O_NOFOLLOW)
        guard fd >= 0 else { return Data() }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: count)
        let n = read(fd, &buffer, count)
        return n > 0 ? Data(buffer.prefix(n)) : Data()
    }
}

/// AppleDouble files: what a Mac writes beside a file when the destination cannot hold its
/// Finder info, resource fork or extended attributes: `._default.store-wal` in a tar made with
/// macOS tar, `__MACOSX/…/._default.store-wal` in a zip made by Finder's Compress, or on a
/// FAT/exFAT/SMB volume. They end in `-wal` like the sidecar they describe but hold none of
/// its bytes; recognised by their magic number, whatever their name.
public enum AppleDouble {
    static let magic: [UInt8] = [0x00, 0x05, 0x16, 0x07]

    public static func matches(_ head: Data) -> Bool {
        head.count >= 26 && Array(head.prefix(4)) == magic
    }

    /// Why it is listed and not read, naming the file it describes.
    public static func reason(for path: String) -> String {
        let name = (path as NSString).lastPathComponent
        let described = name.hasPrefix("._") ? String(name.dropFirst(2)) : name
        return "macOS metadata (an AppleDouble file holding the Finder info and extended attributes of \(described), added by the Mac that copied or archived it); not a store or a sidecar, nothing to recover"
    }
}
