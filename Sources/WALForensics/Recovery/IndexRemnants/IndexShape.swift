import CoreDataStore
import Foundation
import SQLiteAccess
import StoreFormats

/// What an entry of one index of an entity table must look like to count: the index's columns
/// (typed as the table declares them), then the rowid, which is the record's `Z_PK`.
///
/// Only indexes whose entries can name a record are read: on a table of one entity (so the entry
/// says which entity), over plain columns, with at least one text column (an entry of numbers
/// alone is what random bytes most easily look like). An entry must hold a text value, and its
/// rowid must be positive and at most the entity's `Z_MAX` (Core Data gives no key above it).
struct IndexShape: Sendable {
    let index: String
    /// The table's carving shape (`CarvingShape`), whose scratch table holds the remnants.
    let tableShape: Int
    let entity: Int
    /// The indexed columns, in the index's order, and each one's place in the table.
    let columns: [CarvingShape.Column]
    let tableColumns: [Int]
    /// The entity's `Z_MAX` in the last state, when `Z_PRIMARYKEY` gives one.
    let maxPK: Int64?
    /// The database's text encoding (header offset 56).
    var encoding: UInt32 = 1

    /// Why a record with these values is not an entry of this index, or nil when it is one.
    func rejection(_ values: [RecordValue]) -> String? {
        guard values.count == columns.count + 1 else { return "column-count" }
        guard case .integer(let rowid) = values[columns.count], rowid > 0 else { return "index-rowid" }
        if let maxPK, rowid > maxPK { return "index-rowid-above-zmax" }
        var holdsText = false
        for (column, value) in zip(columns, values) {
            guard column.kind.admits(value) else { return "index-affinity" }
            guard case .text(let bytes) = value else { continue }
            guard let text = CarvingShape.decodedText(bytes, encoding: encoding), !text.isEmpty,
                  !text.unicodeScalars.contains(where: { $0.value == 0 }) else { return "index-text" }
            if column.kind == .text { holdsText = true }
        }
        return holdsText ? nil : "index-no-text"
    }

    /// The readable indexes of the state's entity tables (`shapes`: the tables' carving shapes).
    static func shapes(of state: StateReader, tableShapes: [CarvingShape]) throws -> [IndexShape] {
        let c = state.connection
        var out: [IndexShape] = []
        let indexes = try c.rows("SELECT name, tbl_name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL ORDER BY name LIMIT 10000")
        for row in indexes {
            guard let name = row[0].string, let table = row[1].string,
                  let shapeIndex = tableShapes.firstIndex(where: { $0.table.uppercased() == table.uppercased() }) else { continue }
            let shape = tableShapes[shapeIndex]
            guard shape.entities.count == 1, let entity = shape.entities.first else { continue }
            // `cid` -1 is the rowid, -2 an expression: such an index is not read.
            let info = try c.rows("SELECT cid, name FROM pragma_index_info(?) ORDER BY seqno", [.text(name)])
            var columns: [CarvingShape.Column] = []
            var places: [Int] = []
            for column in info {
                guard let cid = column[0].int, cid >= 0, cid < shape.columns.count else { columns = []; break }
                columns.append(shape.columns[cid])
                places.append(cid)
            }
            guard !columns.isEmpty, columns.count == info.count, columns.contains(where: { $0.kind == .text }),
                  !places.contains(shape.pkIndex) else { continue }
            out.append(IndexShape(index: name, tableShape: shapeIndex, entity: entity, columns: columns, tableColumns: places,
                                  maxPK: try bound(of: entity, table: shape.table, state: state)))
        }
        return out
    }

    /// The largest key a record of the entity can have: its root's `Z_MAX` in `Z_PRIMARYKEY`, or
    /// the table's largest `Z_PK` where that is larger (a store whose `Z_MAX` fell behind, which
    /// `check` reports); nil when `Z_PRIMARYKEY` gives no `Z_MAX` (no bound is then applied).
    static func bound(of entity: Int, table: String, state: StateReader) throws -> Int64? {
        let c = state.connection
        guard try c.tableExists("Z_PRIMARYKEY"),
              try c.scalar("SELECT count(*) FROM pragma_table_info('Z_PRIMARYKEY') WHERE name IN ('Z_ENT', 'Z_SUPER', 'Z_MAX')").int == 3
        else { return nil }
        var number = Int64(entity)
        var declared: Int64?
        for _ in 0 ..< 64 {
            guard let row = try c.rows("SELECT Z_SUPER, Z_MAX FROM Z_PRIMARYKEY WHERE Z_ENT = ?", [.integer(number)]).first else { break }
            let parent = row[0].int64 ?? 0
            if parent == 0 || parent == number {
                declared = row[1].int64
                break
            }
            number = parent
        }
        guard let declared else { return nil }
        let largest = try c.scalar("SELECT max(Z_PK) FROM \(Identifier.quoted(table))").int64 ?? 0
        return max(declared, largest)
    }
}
