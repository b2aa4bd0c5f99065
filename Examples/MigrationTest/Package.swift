// swift-tools-version:6.0
// What an app team adds to its repository: a test package that builds the stores its migration
// starts from and ends with, audits them with storelens in-process, and fails CI when the
// migration lost a record, imported one twice, or let a second writer in (docs/library.md).
import PackageDescription

let package = Package(
    name: "MigrationTest",
    platforms: [.macOS(.v13)],
    dependencies: [
        // In an app's repository: .package(name: "storelens", path: "path/to/storelens") or a URL.
        .package(name: "storelens", path: "../.."),
    ],
    targets: [
        .testTarget(name: "MigrationTests", dependencies: [
            .product(name: "StorelensKit", package: "storelens"),
            .product(name: "StoreBuilder", package: "storelens"),
        ]),
    ],
    swiftLanguageModes: [.v6]
)
