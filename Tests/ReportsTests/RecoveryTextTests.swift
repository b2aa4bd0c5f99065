@testable import CoreDataStore
import Foundation
import Testing
@testable import Reports
@testable import WALForensics

/// The text line of a carved version says which of its columns the bytes do not prove, whatever
/// its confidence: a record read back whole whose overflow pages were free pages included.
@Suite("recover text: uncertain columns")
struct RecoveryTextTests {
    static func version(confidence: RecordVersion.Confidence, uncertain: [String]) -> RecordVersion {
        var v = RecordVersion(entity: "Item", entityNumber: 1, table: "ZITEM", pk: confidence == .whole ? 101 : 0,
                              values: [], state: .carved, sources: [], confidence: confidence)
        v.finds = [RecordVersion.Find(file: "db.sqlite", origin: .mainFile, area: .freelistLeaf, page: 166, offset: 1749,
                                      fileOffset: 677_589, frame: nil, confidence: confidence)]
        v.uncertainColumns = uncertain
        return v
    }

    @Test("whole with overflow columns uncertain, header-rebuilt with its key and overflow columns, whole and proven")
    func lines() {
        #expect(RecoveryWriter.text(Self.version(confidence: .whole, uncertain: ["ZNOTE"])).contains("(freelist-leaf) [uncertain: ZNOTE]"))
        #expect(RecoveryWriter.text(Self.version(confidence: .headerRebuilt, uncertain: ["Z_PK", "ZNOTE"]))
            .contains("[header-rebuilt: Z_PK, ZNOTE]"))
        #expect(!RecoveryWriter.text(Self.version(confidence: .whole, uncertain: [])).contains("["))
    }
}

/// A deleted record only history holds (its kept values), and a carved record history says was
/// deleted: every view names the delete and its transaction.
@Suite("recover views: deletes from persistent history")
struct RecoveryHistoryDeleteViewTests {
    static let delete = HistoryTransaction(id: 534, timestamp: "2021-02-17T20:22:24Z", referenceSeconds: 635_285_000, author: "STUnique",
                                           bundleID: "com.apple.ScreenTimeAgent", processName: "ScreenTimeAgent", contextName: nil,
                                           changes: [HistoryChange(id: 9, type: .delete, entity: "InstalledApp", entityNumber: 19, pk: 273,
                                                                   updatedProperties: nil, columnsNote: nil, columnsHex: nil)])

    static func tombstone() -> RecordVersion {
        var v = RecordVersion(entity: "InstalledApp", entityNumber: 19, table: "ZINSTALLEDAPP", pk: 273,
                              values: [.init(name: "bundleIdentifier", value: .text("com.skout.SKOUT"))],
                              state: .deleted, sources: [], confidence: .tombstone)
        v.historyDeletes = [delete]
        return v
    }

    static func carved() -> RecordVersion {
        var v = RecoveryTextTests.version(confidence: .whole, uncertain: [])
        v.historyDeletes = [delete]
        return v
    }

    @Test("text, jsonl (both renderings) and csv say who deleted it")
    func views() throws {
        let t = RecoveryWriter.text(Self.tombstone())
        #expect(t.hasPrefix("deleted    InstalledApp#273  kept by the delete in history #534"), "\(t)")
        #expect(t.contains("bundle com.apple.ScreenTimeAgent") && !t.contains("1 change"))
        #expect(RecoveryWriter.text(Self.carved()).contains("(freelist-leaf); deleted in history #534"))
        // The store's summary line says how many deleted versions only history holds.
        var text = ""
        let summary = RecoveryWriter(format: .text) { text += $0 }
        summary.beginStore(path: "s.sqlite", commits: 0)
        summary.add(path: "s.sqlite", Self.tombstone())
        summary.endStore()
        #expect(text.hasSuffix("1 version: 1 deleted (1 of them only in history)\n"), "\(text)")
        let writer = RecoveryWriter(format: .jsonl) { _ in }
        for v in [Self.tombstone(), Self.carved()] {
            let line = writer.jsonLineText(path: "s.sqlite", v)
            #expect(line == RecoveryWriter.jsonLine(path: "s.sqlite", v).rendered(pretty: false) + "\n")
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            #expect(object["_ended_by"] as? String == "deleted")
            #expect(object["_transactions"] as? [Int] == [534])
            #expect(object["_source_file"] as? String != "")
            let csv = writer.csvRows(path: "s.sqlite", v)
            #expect(csv.allSatisfy { $0[9] == "deleted" && $0[11] == "534" })
        }
        let json = RecoveryWriter.json(Self.tombstone())
        guard case .object(let members) = json, case .array(let deletes)? = members.first(where: { $0.0 == "historyDeletes" })?.1 else {
            Issue.record("json lists historyDeletes"); return
        }
        #expect(deletes.count == 1)
    }

    @Test("jsonl written in blocks of whole lines: nothing held back after endStore, flush hands over what is gathered")
    func blocks() throws {
        var chunks: [[UInt8]] = []
        let writer = RecoveryWriter(format: .jsonl, write: { _ in Issue.record("bytes go to writeBytes") }, writeBytes: { chunks.append($0) })
        writer.begin()
        writer.beginStore(path: "s.sqlite", commits: 0)
        var expected = ""
        for n in 0 ..< 400 {
            let v = n.isMultiple(of: 2) ? Self.tombstone() : Self.carved()
            expected += writer.jsonLineText(path: "s.sqlite", v)
            writer.add(path: "s.sqlite", v)
        }
        // Far fewer writes than versions, each ending at a line's end.
        #expect(!chunks.isEmpty && chunks.count < 40, "\(chunks.count) writes")
        #expect(chunks.allSatisfy { $0.last == UInt8(ascii: "\n") })
        let beforeFlush = chunks.reduce(0) { $0 + $1.count }
        writer.flush()
        #expect(chunks.reduce(0) { $0 + $1.count } == expected.utf8.count, "flush hands over the rest")
        #expect(beforeFlush < expected.utf8.count, "some lines were still gathered before flush")
        writer.endStore()
        writer.end()
        #expect(String(decoding: chunks.joined(), as: UTF8.self) == expected)
    }
}
