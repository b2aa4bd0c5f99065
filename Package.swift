// swift-tools-version:6.0
// storelens: inspect, audit and repair Core Data / SwiftData stores pulled off devices.
//
// Dependencies point one way, from the executable down to the C shims:
//
//   storelens (argv, stdout, exit codes: parse, call, render, exit)
//     -> Reports (renders results) -> Operations (one call per command: options in, results out)
//     -> Checks, Repair, Coexistence, ModelReview, WALForensics, OutputFiles
//     -> CoreDataStore -> Acquisition -> SQLiteAccess -> CSQLite
//                                  \-> SQLiteValues (SQLite's values without SQLite: what Reports renders)
//                                  \-> StoreFormats (pure Swift: header, WAL, -shm, plist, keyed archive)
//                                  \-> Deflate -> CZlib
//                     Acquisition -> CCrypto (libcrypto: encrypted backups; SHA-256 for StoreFormats)
//   StoreBuilder (writes stores in Apple's layout; used by tests, fixtures and the demo)
//   StorelensKit (one import for an app's tests: re-exports Operations and every module, docs/library.md)
import PackageDescription

let package = Package(
    name: "storelens",
    // iOS: what an app's debug build can link (docs/library.md says which modules need libarchive
    // and libcrypto, which the iOS SDK does not ship).
    platforms: [.macOS(.v13), .iOS(.v16)],
    products: [
        .executable(name: "storelens", targets: ["storelens"]),
        // Every capability: `import StorelensKit` re-exports the modules listed, each importable alone.
        .library(name: "StorelensKit", targets: ["StorelensKit", "Operations", "OutputFiles", "Acquisition", "CoreDataStore", "WALForensics", "Findings", "Checks",
                                                 "Repair", "Coexistence", "ModelReview", "Reports", "StoreFormats", "SQLiteAccess", "SQLiteValues"]),
        // Stores in Apple's layout, for an app's migration tests (legacy and new stores from code).
        .library(name: "StoreBuilder", targets: ["StoreBuilder"]),
        // `swift package storelens lint|check|migration …` in a package that depends on this one.
        .plugin(name: "StorelensCommand", targets: ["StorelensCommand"]),
    ],
    targets: [
        // storelens as a command of `swift package` (docs/library.md, "In CI").
        .plugin(name: "StorelensCommand",
                capability: .command(intent: .custom(verb: "storelens", description: "Run storelens (lint, check, migration, audit …) on the package's models and fixture stores.")),
                dependencies: ["storelens"]),
        // C libraries from the system (Debian -dev packages / Homebrew).
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3",
                       providers: [.apt(["libsqlite3-dev"]), .brew(["sqlite"])]),
        .systemLibrary(name: "CArchive", pkgConfig: "libarchive",
                       providers: [.apt(["libarchive-dev"]), .brew(["libarchive"])]),
        .systemLibrary(name: "CZlib", pkgConfig: "zlib",
                       providers: [.apt(["zlib1g-dev"]), .brew(["zlib"])]),
        // ISA-L's igzip, on Linux only: the gzip layer of .tar.gz archives (libarchive reads the rest).
        .systemLibrary(name: "CISAL", pkgConfig: "libisal", providers: [.apt(["libisal-dev"])]),
        // OpenSSL's libcrypto: SHA-256 of the evidence; PBKDF2, AES key unwrap and AES-CBC for encrypted iOS backups.
        .systemLibrary(name: "CCrypto", pkgConfig: "libcrypto",
                       providers: [.apt(["libssl-dev"]), .brew(["openssl@3"])]),

        // Pure-Swift readers of on-disk formats (SHA-256 through libcrypto). No SQLite C API here.
        // A file read in place and cut short by another process while mapped: zeros and a count, not SIGBUS.
        .target(name: "CMappedFileGuard"),
        .target(name: "StoreFormats", dependencies: ["CCrypto", "CMappedFileGuard"]),
        // Raw DEFLATE (Z_MODELCACHE) through zlib.
        .target(name: "Deflate", dependencies: ["CZlib"]),
        // A read-only VFS: SQLite reads the evidence where it lies and can change none of it.
        .target(name: "CEvidenceVFS", dependencies: ["CSQLite"]),
        // SQLite's values (`DatabaseValue`, `Row`) and a path as a `file:` URI's, in plain Swift: no
        // SQLite here, so the renderers can show values without linking SQLite.
        .target(name: "SQLiteValues"),
        // A small SQLite access layer: connections, statements, typed errors, identifier quoting
        // (re-exports SQLiteValues).
        .target(name: "SQLiteAccess", dependencies: ["SQLiteValues", "CSQLite", "CEvidenceVFS"]),
        // Getting evidence in without changing it: store families, hashing, scratch copies, safe opening.
        .target(name: "Acquisition", dependencies: ["Findings", "StoreFormats", "SQLiteAccess", "CArchive", "CCrypto", "CZlib",
                                                  .target(name: "CISAL", condition: .when(platforms: [.linux]))]),
        // Files the user named: never over evidence, never half-written, never replaced unless
        // asked; our own write failures (disk full) told apart from the evidence's.
        .target(name: "OutputFiles", dependencies: ["Acquisition", "SQLiteAccess", "StoreFormats"]),
        // The Core Data / SwiftData store model: metadata, entities, history.
        .target(name: "CoreDataStore", dependencies: ["StoreFormats", "SQLiteAccess", "Acquisition", "Deflate"]),
        // What a -wal and -shm hold: transactions and the tables they wrote, point-in-time images, diffs.
        .target(name: "WALForensics", dependencies: ["OutputFiles", "Findings", "StoreFormats", "SQLiteAccess", "Acquisition", "CoreDataStore"]),
        // Findings: the one shape every check and audit reports in.
        .target(name: "Findings"),
        // Core Data's invariants that SQLite cannot see, as findings.
        .target(name: "Checks", dependencies: ["Findings", "CoreDataStore", "Acquisition", "SQLiteAccess", "StoreFormats"]),
        // Repairs on a copy: a plan first, one transaction, verification after.
        .target(name: "Repair", dependencies: ["OutputFiles", "Checks", "Findings", "CoreDataStore", "Acquisition", "SQLiteAccess", "StoreFormats"]),
        // Two stacks side by side: the manifest's original-name table, one writer per entity,
        // records compared across stores.
        .target(name: "Coexistence", dependencies: ["Findings", "Checks", "Repair", "CoreDataStore", "Acquisition", "SQLiteAccess", "StoreFormats"]),
        // Before a release: a migration to a new model checked hop by hop against old stores'
        // data, and a model's CloudKit readiness.
        .target(name: "ModelReview", dependencies: ["CoreDataStore", "Findings", "SQLiteAccess", "Acquisition", "StoreFormats"]),
        // One call per capability, options in and results out: what every command and
        // StorelensKit call (docs/library.md). No argv, environment, stdout or exit codes here.
        .target(name: "Operations", dependencies: ["OutputFiles", "Acquisition", "CoreDataStore", "WALForensics", "Findings", "Checks", "Repair",
                                                   "Coexistence", "ModelReview", "StoreFormats", "SQLiteAccess"]),
        // Text, JSON, Markdown and HTML views of what the operations found: exactly what it imports,
        // and no SQLite, no file and no environment (make test checks).
        .target(name: "Reports", dependencies: ["Operations", "CoreDataStore", "Acquisition", "StoreFormats", "SQLiteValues", "WALForensics", "Findings", "Coexistence", "Repair", "ModelReview"]),
        // One import for an app's tests: the operations (the very calls the commands make) and every module (docs/library.md).
        .target(name: "StorelensKit", dependencies: ["Operations", "OutputFiles", "Acquisition", "CoreDataStore", "WALForensics", "Findings", "Checks", "Repair",
                                                     "Coexistence", "ModelReview", "Reports", "StoreFormats", "SQLiteAccess"]),
        // Writes stores in exactly Apple's layout, for tests, fixtures and the demo.
        .target(name: "StoreBuilder", dependencies: ["SQLiteAccess", "StoreFormats", "Deflate"]),
        // Helpers shared by test targets: temporary folders, hashes, the real fixtures' location.
        .target(name: "StoreTestSupport", dependencies: ["Acquisition", "SQLiteAccess", "StoreBuilder", "CArchive"]),

        // The commit `make dist` bakes into the binary (a C macro, "unknown" without it).
        .target(name: "CBuildInfo"),
        .executableTarget(name: "storelens", dependencies: ["CBuildInfo", "OutputFiles", "SQLiteAccess", "Operations", "Reports", "CoreDataStore", "Acquisition", "WALForensics", "Findings", "Coexistence", "Checks", "Repair", "StoreFormats", "ModelReview"]),
        // Regenerates Fixtures/ (`make fixtures`) with the store builder.
        .executableTarget(name: "storelens-fixtures", dependencies: ["StoreBuilder"]),

        .testTarget(name: "StoreFormatsTests", dependencies: ["StoreFormats", "StoreTestSupport"]),
        .testTarget(name: "DeflateTests", dependencies: ["Deflate"]),
        .testTarget(name: "SQLiteAccessTests", dependencies: ["SQLiteAccess", "StoreTestSupport"]),
        .testTarget(name: "AcquisitionTests", dependencies: ["Acquisition", "SQLiteAccess", "StoreBuilder", "StoreTestSupport"]),
        .testTarget(name: "CoreDataStoreTests", dependencies: ["CoreDataStore", "StoreBuilder", "StoreTestSupport"]),
        .testTarget(name: "StoreBuilderTests", dependencies: ["StoreBuilder", "CoreDataStore", "Acquisition", "SQLiteAccess", "StoreTestSupport"]),
        .testTarget(name: "WALForensicsTests", dependencies: ["WALForensics", "CoreDataStore", "StoreBuilder", "SQLiteAccess", "StoreTestSupport"]),
        .testTarget(name: "ChecksTests", dependencies: ["Checks", "Findings", "CoreDataStore", "Acquisition", "StoreBuilder", "SQLiteAccess", "StoreTestSupport"]),
        .testTarget(name: "RepairTests", dependencies: ["Repair", "Checks", "Findings", "CoreDataStore", "Acquisition", "StoreBuilder", "SQLiteAccess", "StoreTestSupport"]),
        .testTarget(name: "CoexistenceTests", dependencies: ["Coexistence", "Findings", "Repair", "SQLiteAccess", "StoreBuilder", "StoreTestSupport"]),
        .testTarget(name: "ModelReviewTests", dependencies: ["ModelReview", "CoreDataStore", "Findings", "Acquisition", "SQLiteAccess", "StoreBuilder", "StoreFormats", "StoreTestSupport"]),
        .testTarget(name: "OperationsTests", dependencies: ["Operations", "Reports", "Coexistence", "Acquisition", "SQLiteAccess", "CoreDataStore", "WALForensics", "Checks", "Findings", "StoreBuilder", "StoreTestSupport"]),
        .testTarget(name: "ReportsTests", dependencies: ["Reports", "Operations", "CoreDataStore", "StoreBuilder", "StoreTestSupport"]),
        .testTarget(name: "StorelensKitTests", dependencies: ["StorelensKit", "StoreBuilder", "StoreTestSupport"]),
        .testTarget(name: "storelensTests", dependencies: ["StoreBuilder", "SQLiteAccess", "StoreTestSupport", "Acquisition", "Reports"]),
    ],
    swiftLanguageModes: [.v6]
)
