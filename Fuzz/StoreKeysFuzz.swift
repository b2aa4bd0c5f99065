// libFuzzer entry point: arithmetic on primary keys and versions read from a store. A device can
// hold any 64-bit value in Z_MAX, Z_PK and Z_OPT; key allocation must answer with keys that fit or
// with RepairError.noRoomForKeys, never trap, and the SQL that bumps Z_OPT must stay an integer.
//
// Input: Z_MAX, max(Z_PK) and Z_OPT as three little-endian Int64 (missing bytes are 0), then the
// number of rows to add as a little-endian UInt32.
import Foundation
import Repair
import SQLiteAccess

nonisolated(unsafe) var memory: Connection?

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    let bytes = start.map { Array(UnsafeRawBufferPointer(start: $0, count: count)) } ?? []
    func int64(_ at: Int) -> Int64 {
        var v: UInt64 = 0
        for i in 0..<8 where at + i < bytes.count { v |= UInt64(bytes[at + i]) << (8 * UInt64(i)) }
        return Int64(bitPattern: v)
    }
    let zMax = int64(0), maxPK = int64(8), zOpt = int64(16)
    var n: UInt32 = 0
    for i in 0..<4 where 24 + i < bytes.count { n |= UInt32(bytes[24 + i]) << (8 * UInt32(i)) }
    let rows = Int(n)

    do {
        let keys = try RepairPlanner.allocateKeys(zMax: zMax, maxPK: maxPK, count: rows, store: "fuzz.store", entity: "Fuzz")
        precondition(keys.lowerBound > max(zMax, maxPK, 0), "a new key at or below a stored one")
        let (span, overflow) = keys.upperBound.subtractingReportingOverflow(keys.lowerBound)
        precondition(!overflow && span == Int64(rows) - 1, "wrong number of keys")
        precondition(keys.upperBound < Int64.max, "no key left for the next insert")
    } catch let RepairError.noRoomForKeys(_, _, value, needed) {
        // Refused: only when the keys (and one more for the next insert) would not fit, or none were asked for.
        let highest = max(zMax, maxPK, 0)
        precondition(value == highest && needed == rows, "the refusal names other numbers")
        precondition(rows == 0 || Int64.max - highest <= Int64(rows), "refused though the keys fit")
    } catch {
        preconditionFailure("allocateKeys threw \(error)")
    }

    // The Z_OPT bump, evaluated by SQLite itself.
    do {
        if memory == nil {
            memory = try Connection.open(path: ":memory:", mode: .create)
            try memory?.execute("CREATE TABLE t (Z_PK INTEGER PRIMARY KEY, Z_OPT INTEGER)")
        }
        guard let db = memory else { return 0 }
        try db.run("INSERT OR REPLACE INTO t VALUES (1, ?)", [.integer(zOpt)])
        try db.execute("UPDATE t SET \(RepairPlanner.bumpZOpt)")
        let type = try db.scalar("SELECT typeof(Z_OPT) FROM t").string
        let bumped = try db.scalar("SELECT Z_OPT FROM t").int64
        precondition(type == "integer" && bumped != zOpt, "Z_OPT \(zOpt) became \(String(describing: bumped)) (\(type ?? "?"))")
    } catch {
        preconditionFailure("SQLite failed: \(error)")
    }
    return 0
}
