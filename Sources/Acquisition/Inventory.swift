import Foundation
import StoreFormats

/// Who a container belongs to, when the input says so.
public struct ContainerIdentity: Equatable, Sendable {
    public enum Kind: String, Sendable {
        case appData = "app"          // an app's data container
        case appGroup = "group"       // an App Group container
        case appExtension = "plugin"  // an app extension's container
        case unknown
    }
    public let kind: Kind
    /// Bundle id or group id: `com.example.todo`, `group.com.example.todo`.
    public let identifier: String?
    /// Where the identity came from: `.com.apple.mobile_container_manager.metadata.plist`,
    /// `AppDataInfo.plist`, a backup domain.
    public let source: String
    /// The container's root inside the input ("" for the input itself).
    public let root: String

    public init(kind: Kind, identifier: String?, source: String, root: String) {
        self.kind = kind
        self.identifier = identifier
        self.source = source
        self.root = root
    }
}

/// A store found in an input: its family on disk (originals in a folder, or files extracted
/// into the scratch folder from an archive) and what is known about where it came from.
public struct FoundStore: Sendable {
    /// The store's path inside its input, with `/` separators.
    public let path: String
    /// The files on disk to read.
    public let family: StoreFamily
    /// The file name SQLite should see for the main file (backups store files under hashes).
    public let name: String
    /// Sidecar paths inside the input, as found.
    public let sidecars: Sidecars
    public let size: Int
    public let container: ContainerIdentity?
    /// A well-known location, e.g. "SwiftData default store".
    public let location: String?
    /// SHA-256 of each file of the family as it came out of the input, by path inside the input
    /// (a store read in place is hashed beside its reading: asking waits for the hashes).
    public var sha256: [String: String] {
        get { hashes.wrappedValue }
        set { hashes = Deferred(newValue) }
    }
    var hashes: Deferred<[String: String]>
    /// A SQLite store, or a Core Data XML or binary store (read by `inspect`, `rows`, `export`).
    public var format: StoreFileFormat = .sqlite

    init(path: String, family: StoreFamily, name: String, sidecars: Sidecars, size: Int, container: ContainerIdentity?,
         location: String?, hashes: Deferred<[String: String]>, format: StoreFileFormat = .sqlite) {
        self.path = path
        self.family = family
        self.name = name
        self.sidecars = sidecars
        self.size = size
        self.container = container
        self.location = location
        self.hashes = hashes
        self.format = format
    }

    init(path: String, family: StoreFamily, name: String, sidecars: Sidecars, size: Int, container: ContainerIdentity?,
         location: String?, sha256: [String: String], format: StoreFileFormat = .sqlite) {
        self.init(path: path, family: family, name: name, sidecars: sidecars, size: size, container: container, location: location,
                  hashes: Deferred(sha256), format: format)
    }

    public struct Sidecars: Equatable, Sendable {
        public var wal: String?
        public var shm: String?
        public var journal: String?
        /// The `.<name>_SUPPORT/_EXTERNAL_DATA` folder, when present, and how many files it holds.
        public var externalData: String?
        public var externalDataFiles: Int
        public init(wal: String? = nil, shm: String? = nil, journal: String? = nil, externalData: String? = nil, externalDataFiles: Int = 0) {
            self.wal = wal
            self.shm = shm
            self.journal = journal
            self.externalData = externalData
            self.externalDataFiles = externalDataFiles
        }
    }
}

/// A sidecar whose database did not come with it.
public struct OrphanSidecar: Equatable, Sendable {
    public let path: String
    public let kind: String   // "wal", "shm", "journal"
    public let size: Int
}

/// Something in an input that was not read, and why.
public struct SkippedEntry: Equatable, Sendable {
    public let path: String
    public let reason: String

    /// The reason a backup gives for a file its Manifest.db lists but the folder lacks.
    public static let missingFromBackup = "listed in Manifest.db but missing from the backup"
}

/// Everything found in one input.
public struct Inventory: Sendable {
    public enum InputKind: String, Sendable {
        case storeFile = "store"
        case folder
        case xcappdata
        case archive
        case backup
    }
    public let input: String
    public let kind: InputKind
    /// SHA-256 of the input file (for archives and single stores; asking may wait for it, as for
    /// `FoundStore.sha256`).
    public var inputSHA256: String? { inputHash.wrappedValue }
    private let inputHash: Deferred<String?>
    public var stores: [FoundStore]
    public var orphans: [OrphanSidecar]
    public var skipped: [SkippedEntry]
    /// Non-fatal problems (an encrypted zip entry, damage after which nothing more could be read).
    public var warnings: [String]
    /// Files extracted into the scratch folder: path inside the input → SHA-256.
    public var extracted: [(path: String, sha256: String)]
    /// Set when an archive is damaged part-way: the stores found before the damage are listed,
    /// and the command still ends with an input error.
    public var damage: String?
    /// Other files asked for by pattern (JSON files of a legacy stack): path in the input → file on disk.
    public var otherFiles: [(path: String, url: URL)] = []
    /// The input as typed was a symbolic link, followed to this path (links given on the command
    /// line are followed; links inside the evidence never are).
    public var linkTarget: String?
    /// An encrypted backup, read through the decrypted copies in the scratch folder.
    public var encrypted = false
    /// Each file decrypted from an encrypted backup, with the hashes of its encrypted original
    /// and of its plaintext (`--evidence` lists them).
    public var decrypted: [DecryptedFile] = []

    public init(input: String, kind: InputKind, inputSHA256: String?, stores: [FoundStore], orphans: [OrphanSidecar],
                skipped: [SkippedEntry], warnings: [String], extracted: [(path: String, sha256: String)]) {
        self.init(input: input, kind: kind, inputHash: Deferred(inputSHA256), stores: stores, orphans: orphans, skipped: skipped,
                  warnings: warnings, extracted: extracted)
    }

    init(input: String, kind: InputKind, inputHash: Deferred<String?>, stores: [FoundStore], orphans: [OrphanSidecar],
         skipped: [SkippedEntry], warnings: [String], extracted: [(path: String, sha256: String)]) {
        self.input = input
        self.kind = kind
        self.inputHash = inputHash
        self.stores = stores
        self.orphans = orphans
        self.skipped = skipped
        self.warnings = warnings
        self.extracted = extracted
    }
}
