import Foundation
import SQLiteAccess

/// Whether a store's `-wal` can be its own, from what the two views of the store say of the
/// store's identity. A `-wal` lying beside the wrong main file (another database's, the same
/// app's store from another device or another day) has valid frames: SQLite applies it without
/// a word and shows the other database's pages. What no app's own `-wal` can do:
/// - take away every table the main file has (SQLite never drops a table it is not asked to,
///   and an app that drops all its tables and makes others is a new database);
/// - take away Core Data's own tables (`Z_PRIMARYKEY`, `Z_METADATA`), which Core Data keeps for
///   the store's whole life;
/// - change the store's UUID (`Z_METADATA.Z_UUID`, `NSStoreUUIDKey`), which Core Data writes
///   once, when the store is made, and a migration keeps;
/// - leave the metadata unreadable where the main file alone reads it.
/// `WALBelongingTests` holds these over every genuine store and every store the builder makes,
/// where the `-wal` does belong: none may fire.
public enum WALBelonging {
    /// Why the `-wal` cannot belong to the main file, or nil when nothing says so.
    public static func foreignSign(walView: Connection, mainOnly: Connection) -> String? {
        guard let mainTables = try? Set(mainOnly.tableNames().filter { !$0.hasPrefix("sqlite_") }), !mainTables.isEmpty else { return nil }
        let walTables: Set<String>
        do {
            walTables = Set(try walView.tableNames().filter { !$0.hasPrefix("sqlite_") })
        } catch {
            return "with it applied SQLite cannot read the schema (\(error.message)), while the main file alone reads"
        }
        if mainTables.isDisjoint(with: walTables) {
            return "none of the main file's \(mainTables.count) tables (\(mainTables.sorted().prefix(3).joined(separator: ", "))) exist once it is applied"
        }
        let coreData: Set<String> = ["Z_PRIMARYKEY", "Z_METADATA"]
        guard coreData.isSubset(of: mainTables) else { return nil }
        let lost = coreData.subtracting(walTables)
        if !lost.isEmpty {
            return "the main file is a Core Data store, but once it is applied \(lost.sorted().joined(separator: " and ")) no longer exist"
        }
        let uuid = "SELECT Z_UUID FROM Z_METADATA ORDER BY Z_VERSION"
        guard let mainUUID = try? mainOnly.rows(uuid).map({ $0[0] }) else { return nil }
        let walUUID: [DatabaseValue]
        do {
            walUUID = try walView.rows(uuid).map { $0[0] }
        } catch {
            return "with it applied SQLite cannot read the store's metadata (\(error.message)), while the main file alone reads it"
        }
        if walUUID != mainUUID {
            return "it gives the store another identity (Z_METADATA.Z_UUID \(describe(mainUUID)) becomes \(describe(walUUID))), which Core Data never changes"
        }
        return nil
    }

    private static func describe(_ values: [DatabaseValue]) -> String {
        let shown = values.prefix(2).map { value -> String in
            // Stored text, untrusted: only the characters a UUID has are shown.
            if let text = value.string { return String(text.unicodeScalars.filter { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "-") }.prefix(40)) }
            if let n = value.int { return String(n) }
            return "(not text)"
        }
        return shown.isEmpty ? "(none)" : shown.joined(separator: ", ")
    }
}
