@testable import CoreDataStore
import Foundation
import SQLiteAccess
import StoreTestSupport
import Testing

/// `history --summary` (and the report's writers table) groups the changes per transaction before
/// joining the transactions and their writer strings. SQLite itself holds it to the plain form,
/// every change joined to its transaction one by one, on Apple's stores, with each filter.
@Suite("history summary against the change-by-change query")
struct HistorySummaryTests {
    /// The summary as a query that joins each change to its transaction: what `summary` computed
    /// before it grouped first.
    static func changeByChange(_ reader: HistoryReader, _ filter: HistoryReader.Filter) -> (String, [DatabaseValue]) {
        var arguments: [DatabaseValue] = []
        let sql = """
            SELECT c.ZENTITY, \(reader.writerExpression("BUNDLEID", alias: "sb")), \(reader.writerExpression("PROCESSID", alias: "sp")), \
            \(reader.writerExpression("AUTHOR", alias: "sa")), \(reader.writerExpression("CONTEXTNAME", alias: "sc")), \
            \(reader.column("ZCHANGETYPE", "c", in: reader.changeColumns)), count(*), \
            min(\(reader.column("ZTIMESTAMP", "t", in: reader.transactionColumns))), max(\(reader.column("ZTIMESTAMP", "t", in: reader.transactionColumns)))
            FROM ACHANGE c LEFT JOIN ATRANSACTION t ON t.Z_PK = c.ZTRANSACTIONID\(reader.joins)
            """ + reader.whereClause(filter, arguments: &arguments, changeAlias: "c") + " GROUP BY 1, 2, 3, 4, 5, 6 ORDER BY 1, 2, 3, 4, 5, 6"
        return (sql, arguments)
    }

    @Test("the grouped query gives SQLite's change-by-change answer, with every filter",
          .enabled(if: ProjectPaths.hasRealFixtures, Comment(rawValue: ProjectPaths.realFixturesMissing)),
          arguments: ProjectPaths.realFixtureFolders())
    func realStores(folder name: String) throws {
        guard let real = ProjectPaths.realFixtures(), let store = try ProjectPaths.realStoreFile(in: real.appendingPathComponent(name)) else { return }
        let scratch = try TemporaryFolder("history-summary")
        defer { withExtendedLifetime(scratch) {} }
        let copy = scratch.path("store.sqlite")
        try FileManager.default.copyItem(at: store, to: copy)
        if FileManager.default.fileExists(atPath: store.path + "-wal") {
            try FileManager.default.copyItem(atPath: store.path + "-wal", toPath: copy.path + "-wal")
        }
        guard let db = try? Connection.open(path: copy.path, mode: .readOnly), (try? db.tableExists("ACHANGE")) == true,
              let coreData = try? CoreDataStore.read(db), let reader = try? HistoryReader(connection: db, store: coreData, model: nil) else { return }
        // Filters built from the store's own values: its median transaction time, one entity, one author.
        let median = try db.scalar("SELECT ZTIMESTAMP FROM ATRANSACTION ORDER BY ZTIMESTAMP LIMIT 1 OFFSET (SELECT count(*) / 2 FROM ATRANSACTION)").double
        let entity = try db.scalar("SELECT ZENTITY FROM ACHANGE GROUP BY ZENTITY ORDER BY count(*) DESC LIMIT 1").int
        let (allSQL, _) = Self.changeByChange(reader, .init())
        let author = try db.rows(allSQL).compactMap { $0[3].string }.first
        var filters: [HistoryReader.Filter] = [.init()]
        if let median { filters.append(.init(since: median)) }
        if let entity { filters.append(.init(entityNumbers: [entity])) }
        if let author { filters.append(.init(author: author)) }
        var compared = 0
        for filter in filters {
            let (expected, expectedArguments) = Self.changeByChange(reader, filter)
            let (grouped, arguments) = reader.summaryQuery(filter)
            let want = try db.rows(expected, expectedArguments).map(\.values)
            #expect(try db.rows(grouped, arguments).map(\.values) == want, "\(name): \(filter)")
            compared += want.count
        }
        #expect(compared > 0, "\(name): its history has changes to compare")
    }
}
