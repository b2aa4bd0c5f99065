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
