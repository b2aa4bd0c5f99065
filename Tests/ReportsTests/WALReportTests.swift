import Foundation
import SQLiteAccess
import Testing
@testable import WALForensics
@testable import Reports

/// The parts of the `wal` views that are easy to get subtly wrong: key rendering, ranges, and
/// text from a device reaching the terminal.
@Suite("wal report rendering")
struct WALReportTests {
    @Test("page and key lists fold consecutive numbers into ranges")
    func ranges() {
        #expect(WALReport.ranges([1, 2, 3, 5, 7, 8]) == "1-3, 5, 7-8")
        #expect(WALReport.ranges([]) == "")
        #expect(WALReport.ranges([4]) == "4")
        #expect(WALReport.ranges([UInt32.max - 1, UInt32.max]) == "\(UInt32.max - 1)-\(UInt32.max)")
        let many = (0..<500).map { UInt32($0 * 2) }
        #expect(WALReport.ranges(many, limit: 3) == "0, 2, 4, … (500 in all)")
        #expect(WALReport.keyList([[.integer(3)], [.integer(4)], [.integer(9)]]) == "3-4, 9")
        #expect(WALReport.keyList([[.text("a\u{1b}[31m"), .integer(1)]]) == "('a\u{FFFD}[31m', 1)")
    }

    @Test("a Z_PK key is a number in JSON; other keys are arrays, blobs as x'…'")
    func keys() {
        #expect(WALReport.json(key: [.integer(7)]) == .int(7))
        #expect(WALReport.json(key: [.text("two")]) == .array([.string("two")]))
        #expect(WALReport.json(key: [.integer(1), .blob(Data([0xAB, 0x01])), .null, .real(1.5)])
                == .array([.int(1), .string("x'ab01'"), .null, .double(1.5)]))
    }

    @Test("transactions carry the keys the issue names, in order")
    func transactionKeys() throws {
        let transaction = WALAnalysis.Transaction(number: 1, firstFrame: 1, commitFrame: 2, frames: 2, pages: [1, 11],
                                                  databaseSizeInPages: 24, tables: ["Z_PRIMARYKEY", "sqlite_schema"],
                                                  entities: [], otherPages: [(use: "freelist", count: 1)])
        let text = WALReport.json(transaction: transaction).rendered(pretty: false)
        #expect(text.hasPrefix(#"{"commitFrame":2,"frames":2,"pages":[1,11],"tables":["Z_PRIMARYKEY","sqlite_schema"]"#))
        #expect(text.contains(#""otherPages":{"freelist":1}"#))
    }
}
