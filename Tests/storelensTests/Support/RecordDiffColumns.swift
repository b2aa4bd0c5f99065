import Foundation
import SQLiteAccess
import StoreBuilder
import StoreTestSupport
import Testing

/// The keys of a `wal --diff --format jsonl` line, as docs/json-output.md lists them.
enum RecordDiffColumns {
    static let jsonl = ["path", "from", "commit", "commitFrame", "entity", "table", "pk", "change", "property", "old", "new", "transactions"]
}
