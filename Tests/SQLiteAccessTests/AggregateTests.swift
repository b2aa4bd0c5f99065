import Foundation
import SQLiteAccess
import Testing

/// `Connection.defineAggregate`: a function whose per-row work runs inside SQLite's loop. Checked
/// against SQLite's own aggregates on the same rows.
@Suite("aggregate functions defined in Swift")
struct AggregateTests {
    /// Sums the integers and the text bytes it is given, and counts the NULLs.
    static func define(on db: Connection) throws {
        try db.defineAggregate("test_fold", initial: { (sum: Int64(0), bytes: 0, nulls: 0) }, step: { state, arguments in
            for i in 0..<arguments.count {
                switch arguments.storageClass(i) {
                case .integer: state.sum &+= arguments.int64(i)
                case .text: state.bytes += arguments.textBytes(i).count
                case .null: state.nulls += 1
                default: break
                }
            }
        }, result: { .text("\($0.sum) \($0.bytes) \($0.nulls)") })
    }

    @Test("each group folds its own rows; no rows gives the initial state's value; the same name again is kept")
    func groups() throws {
        let db = try Connection.open(path: ":memory:", mode: .create)
        try db.execute("CREATE TABLE t (g, n, s)")
        try db.execute("INSERT INTO t VALUES (1, 5, 'ab'), (1, 7, NULL), (2, -3, 'héllo'), (2, NULL, 'x'), (3, 9223372036854775807, NULL)")
        try Self.define(on: db)
        try Self.define(on: db)
        let mine = try db.rows("SELECT g, test_fold(n, s) FROM t GROUP BY g ORDER BY g").map { $0[1].string ?? "?" }
        let sqlite = try db.rows("""
            SELECT g, coalesce(sum(n), 0) || ' ' || coalesce(sum(length(CAST(s AS BLOB))), 0) || ' ' || (count(*) - count(n) + count(*) - count(s))
            FROM t GROUP BY g ORDER BY g
            """).map { $0[1].string ?? "?" }
        #expect(mine == sqlite)
        #expect(try db.scalar("SELECT test_fold(n, s) FROM t WHERE 0").string == "0 0 0")
    }

    @Test("a store's own schema cannot call it: a view that does fails to read")
    func directOnly() throws {
        let db = try Connection.open(path: ":memory:", mode: .create)
        try db.execute("CREATE TABLE t (n); INSERT INTO t VALUES (1), (2)")
        try Self.define(on: db)
        try db.execute("CREATE VIEW v AS SELECT test_fold(n) AS f FROM t")
        let error = try #require(throws: SQLiteError.self) { try db.scalar("SELECT f FROM v") }
        #expect(error.message.contains("unsafe use of test_fold"), "\(error.message)")
        #expect(try db.scalar("SELECT test_fold(n) FROM t").string == "3 0 0")
    }
}
