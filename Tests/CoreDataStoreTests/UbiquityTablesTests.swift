import Acquisition
import CoreDataStore
import Foundation
import StoreBuilder
import StoreTestSupport
import Testing

/// Core Data's ubiquitous stores (legacy iCloud, before iOS 10) add `Y_UBMETA`, `Y_UBRANGE` and
/// `Y_UBKVS` to a SQLite store: the schema names them as Core Data's, never as unknown tables.
@Suite("Ubiquity metadata tables")
struct UbiquityTablesTests {
    @Test("Y_UBMETA, Y_UBRANGE and Y_UBKVS are Core Data's ubiquity tables; another Y_ table stays unknown")
    func named() throws {
        let folder = try TemporaryFolder("ubiquity")
        let url = folder.path("Legacy.sqlite")
        let model = ModelDescription(entities: [EntityDescription("Note", attributes: [AttributeDescription("text", .string)])],
                                     versionIdentifiers: ["1.0.0"])
        let writer = try StoreWriter(url: url, model: model, options: .init(journalMode: .delete))
        for table in ["Y_UBMETA", "Y_UBRANGE", "Y_UBKVS", "Y_SOMETHINGELSE"] {
            try writer.executeRaw("CREATE TABLE \(table) (Z_PK INTEGER PRIMARY KEY, ZNAME VARCHAR)")
        }
        try writer.close()
        let session = try EvidenceSession()
        defer { session.scratch.remove() }
        let copy = try session.workingCopy(of: url)
        let opened = try OpenedStore.open(copy, displayPath: url.path)
        #expect(opened.map.ubiquityTables == ["Y_UBKVS", "Y_UBMETA", "Y_UBRANGE"])
        #expect(opened.map.unknownTables == ["Y_SOMETHINGELSE"])
        try session.finish()
    }
}
