import Foundation
import StoreTestSupport

/// What `make dist` and `make deb` are built from and named by, for the tests of both.
enum ReleaseBuild {
    static let root = ProjectPaths.root()

    /// The version the archive and the package are named by, read where `scripts/dist.sh` reads it.
    static var version: String? {
        guard let source = try? String(contentsOf: root.appendingPathComponent("Sources/storelens/CLI/RootCommand.swift"), encoding: .utf8),
              let line = source.split(separator: "\n").first(where: { $0.contains("static let version = \"") }),
              let value = line.split(separator: "\"").dropFirst().first else { return nil }
        return String(value)
    }

    /// STORELENS_DIST_TEST=1 (.ci/run, after make deb): a missing archive or package is a failure.
    static var required: Bool { ProjectPaths.isRequired("STORELENS_DIST_TEST") }
}
