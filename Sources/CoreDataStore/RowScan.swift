import Foundation
import SQLiteAccess

/// A field's value read straight from the statement's current row, without allocating: the
/// common storage classes of the common types as their bytes or numbers, anything else decoded
/// as `RowReader.forEach` decodes it. Printing one of these must give exactly what printing the
/// `FieldValue` that `forEach` gives for the same cell prints (RowsFastPathTests compares them on
/// every fixture and real store).
public enum RawFieldValue {
    case null
    case integer(Int64)
    /// A Double or Float attribute (`FieldValue.real`).
    case real(Double)
    case bool(Bool)
    /// A String or URI attribute stored as text: the stored bytes, not validated as UTF-8
    /// (`FieldValue.text` holds them decoded with U+FFFD for invalid sequences).
    case text(UnsafeBufferPointer<UInt8>)
    /// A Date: seconds since 2001-01-01 (`FieldValue.date`, whose text is `ValueDecoder.iso8601`).
    case date(referenceSeconds: Double)
    /// A UUID attribute stored as 16 bytes (`FieldValue.uuid`, canonical uppercase text).
    case uuid(UnsafeRawBufferPointer)
    /// A to-one or owner relationship: `RowScan.names[name]` and the primary key (`FieldValue.object`).
    case object(name: Int, pk: Int64)
    /// Anything else, decoded by the model as `RowReader.forEach` decodes it.
    case decoded(FieldValue)
}

/// The rows of a `RowReader`, read by a plan made once per entity: where each field's columns
/// are, how its value is read, which fields apply to each concrete entity. For the writers of
/// millions of rows (`rows --format jsonl/csv/tsv/array`); `RowReader.forEach` stays the
/// reference reading, and every value here is what it would decode.
public final class RowScan {
    /// How a field is read.
    enum Plan {
        case boolean(Int32), integer(Int32), real(Int32), date(Int32), text(Int32), uuid(Int32)
        /// A to-one: key column, entity-key column (or -1), the declared destination's name index.
        case toOne(Int32, Int32, Int)
        /// An owner of a to-many without inverse: key column, the source's name index.
        case owner(Int32, Int)
        case ownerOrder(Int32)
        /// Decoded as `RowReader.decode` does (composites, binaries, transformables, decimals …).
        case general
        /// No column in this store.
        case missing
    }

    public let reader: RowReader
    /// Entity names a value or a row can carry; `RawFieldValue.object` and `Row.entity` index it.
    public private(set) var names: [String] = []
    private var nameIndexes: [String: Int] = [:]
    let plans: [Plan]
    let positions: [[Int]]
    /// Columns in the statement's result: what the reference decoding's `Row` holds.
    let columnCount: Int
    let connection: Connection
    let filters: [RowReader.Filter]
    let limit: Int?
    /// Per concrete entity met so far (`Row.entity`): its name index and which fields apply.
    private var concrete: [(name: Int, applies: [Bool])] = []
    private var slotOfEntity: [Int: Int] = [:]
    /// `Z_ENT` of a to-one's destination row → the name index of that entity (nil: keep the declared one).
    private var destinationOfEntity: [Int: Int?] = [:]

    init(reader: RowReader, connection: Connection, filters: [RowReader.Filter], limit: Int?, positions: [[Int]]) {
        self.reader = reader
        self.connection = connection
        self.filters = filters
        self.limit = limit
        self.positions = positions
        self.columnCount = max(2, (positions.joined().max() ?? 0) + 1)
        var names: [String] = []
        var nameIndexes: [String: Int] = [:]
        var plans: [Plan] = []
        for (field, columns) in zip(reader.fields, positions) {
            plans.append(.general)
            let first = columns.first.map(Int32.init) ?? -1
            switch field.kind {
            case .attribute(let a):
                guard a.elements.isEmpty else { continue }
                guard first >= 0 else { plans[plans.count - 1] = .missing; continue }
                switch a.attribute.type {
                case .boolean: plans[plans.count - 1] = .boolean(first)
                case .integer16, .integer32, .integer64: plans[plans.count - 1] = .integer(first)
                case .double, .float: plans[plans.count - 1] = .real(first)
                case .date: plans[plans.count - 1] = .date(first)
                case .string, .uri: plans[plans.count - 1] = .text(first)
                case .uuid: plans[plans.count - 1] = .uuid(first)
                default: break
                }
            case .toOne(let r):
                guard first >= 0 else { plans[plans.count - 1] = .missing; continue }
                let key = columns.count > 1 ? Int32(columns[1]) : -1
                let destination = r.relationship.destination
                plans[plans.count - 1] = .toOne(first, key, Self.intern(destination.isEmpty ? "?" : destination, &names, &nameIndexes))
            case .owner(let source, _):
                guard first >= 0 else { plans[plans.count - 1] = .missing; continue }
                plans[plans.count - 1] = .owner(first, Self.intern(source, &names, &nameIndexes))
            case .ownerOrder:
                guard first >= 0 else { plans[plans.count - 1] = .missing; continue }
                plans[plans.count - 1] = .ownerOrder(first)
            }
        }
        self.plans = plans
        self.names = names
        self.nameIndexes = nameIndexes
    }

    private static func intern(_ name: String, _ names: inout [String], _ indexes: inout [String: Int]) -> Int {
        if let i = indexes[name] { return i }
        names.append(name)
        indexes[name] = names.count - 1
        return names.count - 1
    }

    /// The current row of the scan.
    public struct Row {
        let scan: RowScan
        let cursor: RowCursor?
        /// A row holding a long value: read whole, its long values left in the store (`RowReader.longValuesRow`).
        let longRow: (row: SQLiteAccess.Row, longs: [Int: FieldValue])?
        public let pk: Int64
        let slot: Int
        /// The row's concrete entity, as a `names` index (the same entity always has the same index).
        public var entity: Int { scan.concrete[slot].name }
        /// `RowScan.names[index]`: the entity names met so far (an index a row or value gave is always there).
        public func name(_ index: Int) -> String { scan.names[index] }
        /// Whether field `i` (in `RowReader.fields` order) applies to the row's entity.
        public func applies(_ i: Int) -> Bool { scan.concrete[slot].applies[i] }
        /// Field `i`'s value; valid until the next row.
        public func value(_ i: Int) -> RawFieldValue {
            if let longRow {
                return .decoded(scan.reader.decode(scan.reader.fields[i], row: longRow.row, at: scan.positions[i], longs: longRow.longs))
            }
            return cursor.map { scan.value(i, $0) } ?? .null
        }
    }

    /// Steps through the rows as `RowReader.forEach` does (same statement, same order, same rows).
    public func forEach(_ body: (Row) throws -> Void) throws {
        try reader.stepRows(connection, filters: filters, limit: limit, byKey: false) { statement, counted in
            try statement.forEachCursor { cursor in
                let pk: Int64
                if cursor.storageClass(0) == .integer { pk = cursor.int64(0) } else {
                    guard let v = cursor.value(0).int64 else { counted(nil); return }
                    pk = v
                }
                counted(pk)
                let ent = cursor.storageClass(1) == .integer ? (Int(exactly: cursor.int64(1)) ?? -1) : (cursor.value(1).int ?? -1)
                try body(Row(scan: self, cursor: cursor, longRow: nil, pk: pk, slot: slot(ent)))
            }
        } longRow: { row, longs in
            guard let pk = row[0].int64 else { return }
            try body(Row(scan: self, cursor: nil, longRow: (row, longs), pk: pk, slot: slot(row[1].int ?? -1)))
        }
    }

    private func slot(_ ent: Int) -> Int {
        if let s = slotOfEntity[ent] { return s }
        let mapping = reader.map.entity(number: ent)
        let lineage = Set(mapping?.lineage ?? reader.entity.lineage)
        let name = Self.intern(mapping?.entity.name ?? "#\(ent)", &names, &nameIndexes)
        concrete.append((name, reader.fields.map { lineage.contains($0.declaredBy) }))
        slotOfEntity[ent] = concrete.count - 1
        return concrete.count - 1
    }

    private func destination(_ ent: Int) -> Int? {
        if let known = destinationOfEntity[ent] { return known }
        let index = reader.map.entity(number: ent).map { Self.intern($0.entity.name.isEmpty ? "?" : $0.entity.name, &names, &nameIndexes) }
        destinationOfEntity[ent] = index
        return index
    }

    func value(_ i: Int, _ c: RowCursor) -> RawFieldValue {
        switch plans[i] {
        case .missing:
            return .null
        case .boolean(let p):
            switch c.storageClass(p) {
            case .null: return .null
            case .integer:
                let v = c.int64(p)
                if v == 0 || v == 1 { return .bool(v == 1) }
            default: break
            }
        case .integer(let p):
            switch c.storageClass(p) {
            case .null: return .null
            case .integer: return .integer(c.int64(p))
            default: break
            }
        case .real(let p):
            switch c.storageClass(p) {
            case .null: return .null
            case .integer: return .real(Double(c.int64(p)))
            case .real: return .real(c.double(p))
            default: break
            }
        case .date(let p):
            switch c.storageClass(p) {
            case .null: return .null
            case .integer: return .date(referenceSeconds: Double(c.int64(p)))
            case .real: return .date(referenceSeconds: c.double(p))
            default: break
            }
        case .text(let p):
            switch c.storageClass(p) {
            case .null: return .null
            case .text: return .text(c.textBytes(p))
            default: break
            }
        case .uuid(let p):
            switch c.storageClass(p) {
            case .null: return .null
            case .blob:
                let bytes = c.blobBytes(p)
                if bytes.count == 16 { return .uuid(bytes) }
            default: break
            }
        case .toOne(let p, let key, let declared):
            guard let pk = Self.int64(c, p) else { return .null }
            if key >= 0, let ent = Self.int64(c, key).flatMap({ Int(exactly: $0) }), let concrete = destination(ent) {
                return .object(name: concrete, pk: pk)
            }
            return .object(name: declared, pk: pk)
        case .owner(let p, let source):
            guard let pk = Self.int64(c, p) else { return .null }
            return .object(name: source, pk: pk)
        case .ownerOrder(let p):
            guard let order = Self.int64(c, p) else { return .null }
            return .integer(order)
        case .general:
            break
        }
        // The reference decoding, on this row's values.
        let row = SQLiteAccess.Row(columnNames: [], values: (0 ..< columnCount).map { c.value($0) })
        return .decoded(reader.decode(reader.fields[i], row: row, at: positions[i]))
    }

    /// `DatabaseValue.int64` of a column, without building the value for an integer.
    static func int64(_ c: RowCursor, _ p: Int32) -> Int64? {
        switch c.storageClass(p) {
        case .integer: return c.int64(p)
        case .null: return nil
        default: return c.value(Int(p)).int64
        }
    }
}

extension RowReader {
    /// Prepares the rows `forEach(_:filters:limit:_:)` would step through, for a `RowScan`;
    /// nil when the entity has no rows to select (no `Z_ENT` values).
    public func scan(_ connection: Connection, filters: [Filter] = [], limit: Int? = nil) throws -> RowScan? {
        guard try prepare(connection, filters: filters, limit: limit) != nil else { return nil }
        return RowScan(reader: self, connection: connection, filters: filters, limit: limit, positions: selection().positions)
    }
}
