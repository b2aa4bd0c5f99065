import Foundation
import Repair
import SQLiteAccess
import StoreTestSupport
import Testing

/// The store-keys fuzz inputs (Fuzz/regressions/store-keys, Fuzz/corpus/store-keys), replayed as
/// `make fuzz` runs them (Fuzz/StoreKeysFuzz.swift): keys fit or are refused, never trap; the
/// Z_OPT bump stays an integer that differs from the stored one.
@Suite("store-keys fuzz regression inputs")
struct StoreKeysFuzzRegressionTests {
    static func int64(_ bytes: [UInt8], _ at: Int) -> Int64 {
        var v: UInt64 = 0
        for i in 0..<8 where at + i < bytes.count { v |= UInt64(bytes[at + i]) << (8 * UInt64(i)) }
        return Int64(bitPattern: v)
    }

    @Test("every regression input and seed: keys above the stored ones, or noRoomForKeys exactly when they would not fit")
    func replay() throws {
        let fuzz = ProjectPaths.root().appendingPathComponent("Fuzz")
        let db = try Connection.open(path: ":memory:", mode: .create)
        try db.execute("CREATE TABLE t (Z_PK INTEGER PRIMARY KEY, Z_OPT INTEGER)")
        var count = 0
        for folder in ["regressions/store-keys", "corpus/store-keys"] {
            let dir = fuzz.appendingPathComponent(folder)
            for name in (try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? [] where !name.hasPrefix(".") {
                let bytes = Array(try Data(contentsOf: dir.appendingPathComponent(name)))
                let zMax = Self.int64(bytes, 0), maxPK = Self.int64(bytes, 8), zOpt = Self.int64(bytes, 16)
                let rows = Int(UInt32(truncatingIfNeeded: Self.int64(bytes, 24)))
                let highest = max(zMax, maxPK, 0)
                let fits = rows > 0 && Int64.max - highest > Int64(rows)   // one key stays free
                do {
                    let keys = try RepairPlanner.allocateKeys(zMax: zMax, maxPK: maxPK, count: rows, store: "s", entity: "E")
                    #expect(fits, "\(name)")
                    #expect(keys.lowerBound == highest + 1 && keys.upperBound == highest + Int64(rows), "\(name)")
                } catch {
                    #expect(!fits, "\(name): refused though the keys fit")
                    #expect(error == .noRoomForKeys(store: "s", entity: "E", value: highest, needed: rows), "\(name)")
                }
                try db.run("INSERT OR REPLACE INTO t VALUES (1, ?)", [.integer(zOpt)])
                try db.execute("UPDATE t SET \(RepairPlanner.bumpZOpt)")
                #expect(try db.scalar("SELECT typeof(Z_OPT) FROM t").string == "integer", "\(name)")
                #expect(try db.scalar("SELECT Z_OPT FROM t").int64 != zOpt, "\(name)")
                count += 1
            }
        }
        #expect(count >= 6)
    }
}
