import Foundation
import SQLiteAccess
import StoreBuilder
import StoreTestSupport
import Testing

/// `sqlite-utils` from PyPI in a virtualenv cached under `.build/` (made once, reused by later
/// runs): the tool people load JSON Lines, JSON arrays, CSV and TSV into SQLite with.
enum SQLiteUtils {
    static let unavailable = "sqlite-utils could not be installed (python3 -m venv + pip install sqlite-utils from PyPI); the reason is printed above. Loading rows' exports with it is skipped"

    /// The `sqlite-utils` executable, or nil (with the reason printed) when no virtualenv can be made.
    static let executable: URL? = PythonVenv.make("sqlite-utils", packages: ["sqlite-utils"], probe: ["sqlite-utils", "--version"])
        .map { $0.appendingPathComponent("bin/sqlite-utils") }

    static var available: Bool { executable != nil }

    typealias Result = PythonVenv.Result

    static func run(_ executable: URL, _ arguments: [String]) -> Result {
        PythonVenv.run([executable.path] + arguments)
    }
}
