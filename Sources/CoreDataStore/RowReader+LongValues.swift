import Foundation
import SQLiteAccess

extension RowReader {
    /// Runs the rows' statement with SQLite's length limit at `LongValue.window`, so no value
    /// longer than that is ever read whole. A row holding one stops the statement (SQLITE_TOOBIG)
    /// before SQLite loads it: that row is read with its long values left in the store
    /// (`longRow`), and the statement starts again after it. Ordinary stores never stop, and
    /// read exactly as before.
    ///
    /// - Parameter rows: steps a statement, calling `counted` with each row's `Z_PK` as it is read.
    func stepRows(_ connection: Connection, filters: [Filter], limit: Int?, byKey: Bool,
                  rows: (Statement, _ counted: (Int64?) -> Void) throws -> Void,
                  longRow: (Row, [Int: FieldValue]) throws -> Void) throws {
        var after: Int64?
        var remaining = limit
        while true {
            guard let (statement, _) = try prepare(connection, filters: filters, limit: remaining, byKey: byKey, after: after) else { return }
            var last = after
            do {
                try connection.withLengthLimit(LongValue.window) {
                    try rows(statement) { pk in
                        if let pk { last = pk }
                        remaining = remaining.map { $0 - 1 }
                    }
                }
                return
            } catch let error as SQLiteError where error.isTooBig {
                guard let pk = try nextKey(connection, filters: filters, byKey: byKey, after: last) else { return }
                let (row, longs) = try longValuesRow(connection, pk: pk)
                try longRow(row, longs)
                remaining = remaining.map { $0 - 1 }
                after = pk
                if remaining == 0 { return }
            }
        }
    }

    /// The first selected row's `Z_PK` after `after` (without the length limit: a `--where` on a
    /// long value's column has SQLite read that value once, to compare it).
    private func nextKey(_ connection: Connection, filters: [Filter], byKey: Bool, after: Int64?) throws -> Int64? {
        let (sql, arguments) = selecting("Z_PK", filters: filters, byKey: byKey, after: after)
        return try connection.scalar(sql + " ORDER BY Z_PK LIMIT 1", arguments).int64
    }

    /// The row whose `Z_PK` is `pk`, as the rows' statement selects it, but with every text or
    /// blob longer than `LongValue.window` left in the store: NULL in the row, and its decoded
    /// value (a `.longText`, or bytes summarised from their head) by position.
    func longValuesRow(_ connection: Connection, pk: Int64) throws -> (Row, [Int: FieldValue]) {
        let (columns, positions) = selection()
        let table = Identifier.quoted(entity.table)
        // Types and the rowid first: `typeof` never reads a value.
        let probe = try connection.rows("SELECT rowid, " + columns.map { "typeof(\(Identifier.quoted($0)))" }.joined(separator: ", ")
                                        + " FROM \(table) WHERE Z_PK = ? LIMIT 1", [.integer(pk)])
        guard let types = probe.first, let rowid = types[0].int64 else {
            throw SQLiteError(extendedCode: 1, message: "the row with Z_PK \(pk) of \(entity.table) went away while it was read", path: map.path)
        }
        var long: [Int: LongValue] = [:]
        for (i, column) in columns.enumerated() {
            let type = types[i + 1].string
            guard type == "text" || type == "blob" else { continue }
            let count = try connection.storedValue(table: entity.table, column: column, rowid: rowid).count
            if count > LongValue.window {
                long[i] = LongValue(isText: type == "text", byteCount: count, table: entity.table, column: column, rowid: rowid, connection: connection)
            }
        }
        let select = columns.enumerated().map { long[$0] != nil ? "NULL" : Identifier.quoted($1) }
        guard let row = try connection.rows("SELECT \(select.joined(separator: ", ")) FROM \(table) WHERE rowid = ?", [.integer(rowid)]).first else {
            throw SQLiteError(extendedCode: 1, message: "the row with Z_PK \(pk) of \(entity.table) went away while it was read", path: map.path)
        }
        var decoded: [Int: FieldValue] = [:]
        for (field, fieldPositions) in zip(fields, positions) {
            guard case .attribute(let a) = field.kind else { continue }
            let attributes = a.elements.isEmpty ? [a.attribute] : Self.leaves(a).map(\.attribute)
            for (p, attribute) in zip(fieldPositions, attributes) where p >= 0 {
                if let stored = long[p] { decoded[p] = try decoder.decodeLong(stored, as: attribute) }
            }
        }
        return (row, decoded)
    }
}
