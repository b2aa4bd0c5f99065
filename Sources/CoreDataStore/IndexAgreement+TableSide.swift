import Foundation
import SQLiteAccess

extension IndexAgreement {
    /// The table's side of the comparison: each index's multiset as the table's rows give it, read
    /// in one scan of the table in rowid order. `holds` reads it with a statement of its own; a
    /// scan made for other questions about the same rows (`check`'s row screen) can select these
    /// aggregates beside its own and hand their values to `take`, so the table is read once for both.
    public struct TableSide: Sendable {
        public let table: String
        let indexes: [IndexShape]
        /// Each index's multiset, once `take` has read the scan's values.
        private(set) var sums: [Multiset]?

        /// Nil when the table or one of its indexes is of a kind this check does not read. Defines
        /// the aggregate the scan calls on `connection`, the one that will run the scan.
        public init?(_ connection: Connection, table: String) throws {
            guard let indexes = IndexAgreement.indexShapes(connection, table: table) else { return nil }
            try IndexAgreement.defineEntries(on: connection)
            self.table = table
            self.indexes = indexes
        }

        /// Whether the table has indexes to compare at all.
        public var hasIndexes: Bool { !indexes.isEmpty }

        /// One aggregate call per index, for the select list of a scan of the table whose rows are
        /// named `alias` (nil: the table's own name), in which each row of the table appears once.
        public func aggregates(alias: String?) -> [String] {
            indexes.map { IndexAgreement.entries(of: $0, alias: alias, unique: false) }
        }

        /// Reads the values of `aggregates`' calls, in their order; false when one is not such a value.
        public mutating func take(_ values: some Collection<DatabaseValue>) -> Bool {
            let results = values.map(EntriesResult.init)
            guard results.count == indexes.count, results.allSatisfy({ $0 != nil }) else { return false }
            sums = results.map { $0!.entries }
            return true
        }

        /// Whether SQLite's plan for `sql` reads the table, named `alias` there, from its own
        /// b-tree (a scan that read it through an index would compare an index with itself).
        public static func scansTable(_ connection: Connection, _ sql: String, alias: String) throws -> Bool {
            try IndexAgreement.plan(connection, sql).contains("SCAN \(alias.uppercased())")
        }
    }
}
