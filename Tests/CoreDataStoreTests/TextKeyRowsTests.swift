import Acquisition
import CoreDataStore
import Foundation
import SQLiteAccess
import StoreBuilder
import StoreTestSupport
import Testing

/// `inspect` skips the scan for rows whose Z_PK or Z_ENT is not an integer where the counting
/// already proved there are none. The proof must never hide a row the scan would find.
@Suite("Text-key rows: what the counting proves")
struct TextKeyRowsTests {
    /// One way a row can carry a key Core Data cannot match, written over a builder store.
    struct Damage: CustomStringConvertible, Sendable {
        let description: String
        let sql: [String]
    }

    static let damages: [Damage] = [
        Damage(description: "nothing", sql: []),
        // ZSHAPE holds four entities behind an index on Z_ENT: the grouped count.
        Damage(description: "text Z_ENT in a shared table", sql: ["UPDATE ZSHAPE SET Z_ENT = 'circle' WHERE Z_PK = 2"]),
        Damage(description: "blob Z_ENT in a shared table", sql: ["UPDATE ZSHAPE SET Z_ENT = x'03' WHERE Z_PK = 1"]),
        // A whole number too large for int64 stays REAL under INTEGER affinity.
        Damage(description: "REAL Z_ENT in a shared table", sql: ["UPDATE ZSHAPE SET Z_ENT = 1e20 WHERE Z_PK = 3"]),
        Damage(description: "fractional Z_ENT in a shared table", sql: ["UPDATE ZSHAPE SET Z_ENT = 2.5 WHERE Z_PK = 3"]),
        // ZCANVAS holds one entity and no index on Z_ENT: the one-pass min/max count.
        Damage(description: "text Z_ENT in a one-entity table", sql: ["UPDATE ZCANVAS SET Z_ENT = 'canvas' WHERE Z_PK = 1"]),
        Damage(description: "fractional Z_ENT below the entity in a one-entity table", sql: ["UPDATE ZCANVAS SET Z_ENT = 0.5 WHERE Z_PK = 2"]),
        Damage(description: "REAL Z_ENT above every integer in a one-entity table", sql: ["UPDATE ZCANVAS SET Z_ENT = 1e20 WHERE Z_PK = 2"]),
        // Untyped columns (a table rebuilt by a CSV import): nothing is proved, the scan runs.
        Damage(description: "untyped table with text keys", sql: [
            "CREATE TABLE storelens_text (Z_PK, Z_ENT, Z_OPT, ZTITLE)",
            "INSERT INTO storelens_text SELECT CAST(Z_PK AS TEXT), Z_ENT, Z_OPT, ZTITLE FROM ZCANVAS",
            "DROP TABLE ZCANVAS", "ALTER TABLE storelens_text RENAME TO ZCANVAS",
        ]),
        Damage(description: "untyped table with integer keys and a REAL Z_ENT", sql: [
            "CREATE TABLE storelens_text (Z_PK, Z_ENT, Z_OPT, ZTITLE)",
            "INSERT INTO storelens_text SELECT Z_PK, CASE Z_PK WHEN 1 THEN CAST(Z_ENT AS REAL) ELSE Z_ENT END, Z_OPT, ZTITLE FROM ZCANVAS",
            "DROP TABLE ZCANVAS", "ALTER TABLE storelens_text RENAME TO ZCANVAS",
        ]),
    ]

    @Test("the rows the counting proves absent are absent: the shortcut reports what the full scan does", arguments: damages)
    func provedAbsentMeansAbsent(_ damage: Damage) throws {
        let folder = try TemporaryFolder("text-keys")
        let url = folder.path("Shapes.sqlite")
        let w = try StoreWriter(url: url, model: ShapesFixture.model, options: .init(historyTracking: false))
        try w.transaction(nil) { w in
            try w.insert("Polygon", ["name": .string("triangle"), "sides": .int(3)])
            try w.insert("Square", ["name": .string("s1"), "sides": .int(4), "side": .double(2)])
            try w.insert("Circle", ["name": .string("c"), "radius": .double(1)])
            try w.insert("Canvas", ["title": .string("one")])
            try w.insert("Canvas", ["title": .string("two")])
        }
        for sql in damage.sql { try w.executeRaw(sql) }
        try w.close()

        let connection = try Connection.open(path: url.path, mode: .readOnly)
        let store = try #require(try CoreDataStore.read(connection))
        var unreadable: [(table: String, reason: String)] = []
        var proven = Set<String>()
        _ = try store.countRows(connection, unreadable: &unreadable, integerKeyTables: &proven)
        let full = try store.textKeyRows(connection)
        let shortcut = try store.textKeyRows(connection, provenClean: proven)
        #expect(shortcut.map(\.table) == full.map(\.table))
        #expect(shortcut.map(\.rows) == full.map(\.rows))
        #expect(shortcut.map(\.maxKey) == full.map(\.maxKey))
        // SQLite itself says which tables hold such rows.
        for table in ["ZSHAPE", "ZCANVAS"] {
            let odd = try connection.scalar("""
                SELECT count(*) FROM \(table) WHERE typeof(Z_PK) NOT IN ('integer', 'null') OR typeof(Z_ENT) NOT IN ('integer', 'null')
                """).int ?? 0
            #expect(full.contains { $0.table == table } == (odd > 0), "\(table): \(odd) rows with keys of another type")
            if odd > 0 { #expect(!proven.contains(table)) }
        }
        if damage.sql.isEmpty {
            // Where Core Data declared the tables, the counting proves every one of them.
            #expect(proven.isSuperset(of: ["ZSHAPE", "ZCANVAS"]))
        }
    }
}
