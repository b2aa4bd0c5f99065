import Foundation
import SQLiteAccess
import StoreTestSupport

/// Rollback-journal stores caught mid-transaction.
enum HotJournal {
    /// A rollback-journal store copied while a transaction was half-way: the journal is hot.
    static func store(in folder: URL) throws -> URL {
        let work = folder.appendingPathComponent("work")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        let url = try SampleStores.todo(in: work, rows: 300)
        let db = try Connection.open(path: url.path, mode: .readWrite)
        try db.execute("PRAGMA cache_size = 2")
        try db.execute("BEGIN IMMEDIATE")
        // Small cache: changed pages spill into the database file while the journal holds the originals.
        try db.execute("UPDATE ZTODOITEM SET ZTITLE = ZTITLE || ' (edited)'")
        let target = folder.appendingPathComponent("Store.sqlite")
        try FileManager.default.copyItem(at: url, to: target)
        try FileManager.default.copyItem(at: URL(fileURLWithPath: url.path + "-journal"), to: URL(fileURLWithPath: target.path + "-journal"))
        try db.execute("ROLLBACK")
        return target
    }
}
