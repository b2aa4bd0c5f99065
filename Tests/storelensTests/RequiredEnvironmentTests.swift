import Foundation
import StoreTestSupport
import Testing

/// Tests that need the genuine stores or a browser are skipped (and shown as skipped) where they
/// are absent. CI must not lose them silently: `.ci/run` sets STORELENS_REQUIRE_REAL_FIXTURES=1,
/// STORELENS_REQUIRE_BROWSER=1 and STORELENS_REQUIRE_SQLITE_UTILS=1, and then a missing folder,
/// browser or sqlite-utils (FlatExportTests) is a failure here.
@Suite("required test environment")
struct RequiredEnvironmentTests {
    @Test("the genuine stores are present when STORELENS_REQUIRE_REAL_FIXTURES=1",
          .enabled(if: ProjectPaths.isRequired("STORELENS_REQUIRE_REAL_FIXTURES"), "a requirement only where STORELENS_REQUIRE_REAL_FIXTURES=1 (.ci/run sets it); elsewhere the tests that need it skip with their own reason"))
    func realFixturesPresent() throws {
        let expected = ProjectPaths.root().deletingLastPathComponent().appendingPathComponent("shared/fixtures/real")
        let found = ProjectPaths.realFixtures()
        #expect(found != nil, "STORELENS_REQUIRE_REAL_FIXTURES=1 but \(expected.path) is missing: the tests on genuine Apple stores cannot run")
        guard let found else { return }
        // Every fixture folder the README names holds at least one file.
        let folders = try FileManager.default.contentsOfDirectory(atPath: found.path).filter { !$0.hasPrefix(".") && $0 != "README.md" }
        #expect(!folders.isEmpty, "\(found.path) holds no fixture folder")
        for folder in folders {
            let files = try FileManager.default.contentsOfDirectory(atPath: found.appendingPathComponent(folder).path)
            #expect(!files.isEmpty, "\(found.path)/\(folder) is empty")
        }
    }

    @Test("a headless browser is installed when STORELENS_REQUIRE_BROWSER=1",
          .enabled(if: ProjectPaths.isRequired("STORELENS_REQUIRE_BROWSER"), "a requirement only where STORELENS_REQUIRE_BROWSER=1 (.ci/run sets it); elsewhere the tests that need it skip with their own reason"))
    func browserPresent() {
        #expect(Chromium.executable() != nil, "STORELENS_REQUIRE_BROWSER=1 but \(Chromium.missing)")
    }

    @Test("sqlite-utils installs from PyPI when STORELENS_REQUIRE_SQLITE_UTILS=1",
          .enabled(if: ProjectPaths.isRequired("STORELENS_REQUIRE_SQLITE_UTILS"), "a requirement only where STORELENS_REQUIRE_SQLITE_UTILS=1 (.ci/run sets it); elsewhere the tests that need it skip with their own reason"))
    func sqliteUtilsPresent() {
        #expect(SQLiteUtils.available, "STORELENS_REQUIRE_SQLITE_UTILS=1 but \(SQLiteUtils.unavailable)")
    }
}
