import Foundation
import StoreFormats

/// A file of `.<store>_SUPPORT/_EXTERNAL_DATA/`, as it came with the store: what the name is
/// there (looked at without following a link), a regular file's size, and the SHA-256 of its
/// bytes as storelens copied them into its working folder.
public struct ExternalFile: Sendable, Equatable {
    /// What the name is in `_EXTERNAL_DATA/`, looked at without following a link: only a regular
    /// file is external data. A link or a named pipe placed there is reported as what it is (a
    /// link's length is not a file's size; a pipe would block a reader), never followed or read.
    public enum Kind: UInt8, Sendable {
        case missing = 0, file = 1, symbolicLink = 2, namedPipe = 3, folder = 4, other = 5
        /// Not looked for: the value was read without the store's `_EXTERNAL_DATA` at hand.
        case notChecked = 6

        public var name: String {
            switch self {
            case .missing: return "missing"
            case .file: return "file"
            case .symbolicLink: return "symbolic link"
            case .namedPipe: return "named pipe"
            case .folder: return "folder"
            case .other: return "device or socket"
            case .notChecked: return "not checked"
            }
        }
    }

    /// The name stored in the reference (Apple writes the uppercase UUID).
    public let name: String
    /// The path relative to the store's folder, e.g. `.default_SUPPORT/_EXTERNAL_DATA/<UUID>`.
    public let relativePath: String
    public let kind: Kind
    /// The size of a regular file (nil for anything else).
    public let size: Int?
    /// SHA-256 (lowercase hex) of a regular file's bytes as read; nil when it was not read.
    public let sha256: String?
    /// A regular file: the external data is there.
    public var exists: Bool { kind == .file }

    public init(name: String, relativePath: String, kind: Kind, size: Int?, sha256: String? = nil) {
        self.name = name
        self.relativePath = relativePath
        self.kind = kind
        self.size = kind == .file ? size : nil
        self.sha256 = kind == .file ? sha256 : nil
    }

    public init(name: String, relativePath: String, exists: Bool, size: Int?, sha256: String? = nil) {
        self.init(name: name, relativePath: relativePath, kind: exists ? .file : .missing, size: size, sha256: sha256)
    }

    /// What `path` is, by lstat(2) (a link is not followed), and a regular file's size.
    static func kind(of path: String) -> (kind: Kind, size: Int?) {
        var info = stat()
        guard lstat(path, &info) == 0 else { return (.missing, nil) }
        switch info.st_mode & S_IFMT {
        case S_IFREG: return (.file, Int(info.st_size))
        case S_IFLNK: return (.symbolicLink, nil)
        case S_IFIFO: return (.namedPipe, nil)
        case S_IFDIR: return (.folder, nil)
        default: return (.other, nil)
        }
    }
}

/// A store's `_EXTERNAL_DATA` folder as it came: every entry, and where to read each regular
/// file: its private copy in the working folder, or the original itself when the store is read
/// in place (only ever opened for reading). The files are evidence like the store itself: hashed
/// before and after by the session.
public struct ExternalDataFolder: Sendable {
    /// `.<store name without extension>_SUPPORT/_EXTERNAL_DATA`, relative to the store's folder.
    public let relativePath: String
    /// What `_EXTERNAL_DATA` itself is in the original (`.missing` when the store came without it).
    public let kind: ExternalFile.Kind
    /// Every entry of the folder, by name.
    public let entries: [String: ExternalFile]
    /// Where each regular file is read, by name: its private copy, or the original (read in place).
    let copies: [String: URL]

    /// The most entries read from one `_EXTERNAL_DATA` folder.
    public static var maxEntries: Int {
        ProcessInfo.processInfo.environment["STORELENS_MAX_EXTERNAL_FILES"].flatMap(Int.init) ?? 1_000_000
    }

    /// A folder that did not come with the store.
    public static func absent(storeName: String) -> ExternalDataFolder {
        ExternalDataFolder(relativePath: relativePath(storeName: storeName), kind: .missing, entries: [:], copies: [:])
    }

    static func relativePath(storeName: String) -> String {
        ".\((storeName as NSString).deletingPathExtension)_SUPPORT/_EXTERNAL_DATA"
    }

    /// The entry `name` names, or a missing file when there is none. `_EXTERNAL_DATA` that is not
    /// a folder (a link to elsewhere, say) makes every file behind a link: nothing there is read.
    public func file(named name: String) -> ExternalFile {
        let path = relativePath + "/" + name
        guard kind == .folder else {
            return ExternalFile(name: name, relativePath: path, kind: kind == .missing ? .missing : .symbolicLink, size: nil)
        }
        return entries[name] ?? ExternalFile(name: name, relativePath: path, kind: .missing, size: nil)
    }

    /// Where to read a regular file of this folder from: its private copy, or the original
    /// when the store is read in place.
    public func copy(of file: ExternalFile) -> URL? {
        copies[file.name]
    }

    /// The regular files, sorted by name.
    public var files: [ExternalFile] {
        entries.values.filter(\.exists).sorted { $0.name < $1.name }
    }

    /// The entries of `_EXTERNAL_DATA` beside `family`'s main file, looked at without following
    /// links: nothing is opened. Throws when there are more than `maxEntries`.
    static func listing(_ family: StoreFamily, storeName: String) throws -> (kind: ExternalFile.Kind, entries: [String: ExternalFile]) {
        let relative = relativePath(storeName: storeName)
        guard let support = family.supportFolder else { return (.missing, [:]) }
        let folder = support.appendingPathComponent("_EXTERNAL_DATA").path
        let kind = ExternalFile.kind(of: folder).kind
        guard kind == .folder, let handle = opendir(folder) else { return (kind, [:]) }
        defer { closedir(handle) }
        var entries: [String: ExternalFile] = [:]
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            guard name != ".", name != ".." else { continue }
            guard entries.count < maxEntries else {
                throw AcquisitionError.unreadable(path: folder, reason: "it holds more than \(maxEntries) entries; set STORELENS_MAX_EXTERNAL_FILES to read more")
            }
            let (entryKind, size) = ExternalFile.kind(of: folder + "/" + name)
            entries[name] = ExternalFile(name: name, relativePath: relative + "/" + name, kind: entryKind, size: size)
        }
        return (kind, entries)
    }

    /// The folder with each regular file's copy and hash filled in.
    static func made(kind: ExternalFile.Kind, entries: [String: ExternalFile], storeName: String,
                     copies: [String: URL], hashes: [String: String]) -> ExternalDataFolder {
        var hashed = entries
        for (name, file) in entries where file.exists {
            hashed[name] = ExternalFile(name: name, relativePath: file.relativePath, kind: .file, size: file.size, sha256: hashes[name])
        }
        return ExternalDataFolder(relativePath: relativePath(storeName: storeName), kind: kind, entries: hashed, copies: copies)
    }

    /// Copies every regular file into `folder`, hashing it as it is copied (a working copy made
    /// without a session, which staged nothing). Files that are already storelens's own (an
    /// archive's extracted files), or of a store read in place (`inPlace`), are hashed where they are.
    public static func copying(_ family: StoreFamily, storeName: String, into folder: URL, alreadyPrivate: Bool = false,
                               inPlace: Bool = false) throws -> ExternalDataFolder {
        let (kind, entries) = try listing(family, storeName: storeName)
        guard let support = family.supportFolder, kind == .folder else { return made(kind: kind, entries: entries, storeName: storeName, copies: [:], hashes: [:]) }
        let source = support.appendingPathComponent("_EXTERNAL_DATA")
        let files = entries.values.filter(\.exists).map(\.name).sorted()
        var target = folder
        if !alreadyPrivate && !inPlace && !files.isEmpty {
            target = folder.appendingPathComponent("external-data", isDirectory: true)
            guard mkdir(target.path, 0o700) == 0 else { throw WorkingFolderFailure(code: errno) }
        }
        let work = files.enumerated().map { (index: $0.offset, name: $0.element) }
        let results = try FileWork.map(work, weights: work.map { Int64(entries[$0.name]?.size ?? 0) }) { item -> (String, URL, String) in
            let original = source.appendingPathComponent(item.name)
            if alreadyPrivate || inPlace {
                if inPlace { EvidenceReads.pass(original.path) }
                return (item.name, original, try SHA256.hexOfFile(at: original))
            }
            let copy = target.appendingPathComponent(String(item.index))
            return (item.name, copy, try SafeCopy.copy(original, to: copy, hashing: true) ?? "")
        }
        return made(kind: kind, entries: entries, storeName: storeName,
                    copies: Dictionary(uniqueKeysWithValues: results.map { ($0.0, $0.1) }),
                    hashes: Dictionary(uniqueKeysWithValues: results.map { ($0.0, $0.2) }))
    }
}
