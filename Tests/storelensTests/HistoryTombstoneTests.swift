import Foundation
import SQLiteAccess
import StoreTestSupport
import Testing

/// `history` shows deleted records' tombstone values decoded as `rows` shows values, checked
/// against what SQLite holds in `ACHANGE.ZTOMBSTONE0…n` on a copy of the genuine Screen Time store.
@Suite("history tombstones, decoded")
struct HistoryTombstoneTests {
    /// Whether a decoded JSON value is one of the stored values of the row.
    static func matches(_ value: Any, _ stored: [DatabaseValue]) -> Bool {
        switch value {
        case let b as Bool: return stored.contains(.integer(b ? 1 : 0))
        case let i as Int: return stored.contains(.integer(Int64(i)))
        case let s as String:
            if let uuid = UUID(uuidString: s), stored.contains(.blob(withUnsafeBytes(of: uuid.uuid) { Data($0) })) { return true }
            return stored.contains(.text(s))
        default: return false
        }
    }

    @Test("Screen Time's InstalledApp deletes: every kept value is a stored one, the UUID shown as a UUID", .enabled(if: ProjectPaths.hasRealFixtures, Comment(rawValue: ProjectPaths.realFixturesMissing)))
    func screenTime() throws {
        let original = try #require(ProjectPaths.realFixtures()).appendingPathComponent("screentime-tombstones/RMAdminStore-Local.sqlite")
        let before = try FolderSnapshot(original.deletingLastPathComponent())
        let json = try CLI.run(["history", original.path, "--format", "json"])
        let text = try CLI.run(["history", original.path])
        #expect(json.status == 0 && text.status == 0, "stderr: \(json.stderr)")
        let folder = try TemporaryFolder("tombstone-truth")
        let copy = folder.path("store.sqlite")
        try FileManager.default.copyItem(at: original, to: copy)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: copy.path)
        let db = try Connection.open(path: copy.path, mode: .readWrite)
        let columns = try db.rows("SELECT name FROM pragma_table_info('ACHANGE') WHERE name LIKE 'ZTOMBSTONE%'").compactMap { $0[0].string }
        #expect(!columns.isEmpty)

        let report = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        var kept = 0, uuids = 0
        for t in report["transactions"] as? [[String: Any]] ?? [] {
            for c in t["changes"] as? [[String: Any]] ?? [] {
                guard let values = c["tombstoneValues"] as? [String: Any] else { continue }
                #expect(Set(values.keys) == Set((c["tombstone"] as? [String: Any] ?? [:]).keys))
                let stored = try #require(try db.rows("""
                    SELECT \(columns.map(Identifier.quoted).joined(separator: ", ")) FROM ACHANGE
                    WHERE ZCHANGETYPE = 2 AND ZTRANSACTIONID = ? AND ZENTITYPK = ?
                    """, [.integer(Int64(t["id"] as? Int ?? -1)), .integer(Int64(c["pk"] as? Int ?? -1))]).first).values
                for (name, value) in values {
                    kept += 1
                    #expect(Self.matches(value, stored), "\(c["entity"] ?? "?")#\(c["pk"] ?? "?") \(name) = \(value)")
                    if let s = value as? String, UUID(uuidString: s) != nil, stored.contains(where: { $0.data?.count == 16 }) { uuids += 1 }
                }
            }
        }
        #expect(kept > 0)
        #expect(uuids > 0, "a UUID kept as 16 bytes is shown as a UUID")
        #expect(text.stdout.contains("  kept bundleIdentifier=\""))
        #expect(try FolderSnapshot(original.deletingLastPathComponent()) == before, "the evidence must stay byte-identical")
    }
}
