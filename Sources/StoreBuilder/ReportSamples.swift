import Foundation
import SQLiteAccess

/// Stores for the report and browser tests: every string a hostile device could plant in a
/// report (an entity named `<script>alert(1)</script>`, markup in writer strings and values), a
/// WAL with transactions, history from two writers, and one planted finding of each severity the
/// checks report for them (an error and a warning).
public enum ReportSamples {
    public static let scriptEntity = "<script>alert(1)</script>"
    public static let hostileAuthor = "<img src=x onerror=alert(2)>"
    public static let hostileTitle = "\"><svg onload=alert(3)>&amp;"

    public static let model = ModelDescription(entities: [
        EntityDescription(scriptEntity, className: "ScriptEntity", attributes: [AttributeDescription("name", .string)]),
        EntityDescription("Item", attributes: [AttributeDescription("title", .string), AttributeDescription("created", .date)]),
    ])

    static let epoch = Date(timeIntervalSinceReferenceDate: 790_000_000)

    /// Writes the store at `url` (with its `-wal`). Planted: `Item`'s Z_MAX below its largest
    /// primary key (`zmax-below-max-pk`, an error) and one `Item` row without Z_OPT (`bad-z-opt`,
    /// a warning).
    public static func write(to url: URL) throws {
        let writer = try StoreWriter(url: url, model: model, options: .init(uuid: UUID(uuidString: "5C817E57-0000-4000-8000-00000000AB1E")!))
        let app = StoreWriter.Writer(author: "app", bundleID: "com.example.items", processName: "Items")
        let hostile = StoreWriter.Writer(author: hostileAuthor, bundleID: "com.example.items.<b>widget</b>", processName: "Widget",
                                         contextName: "</script><script>alert(4)</script>")
        try writer.transaction(app, at: epoch) { w in
            for i in 1...3 { try w.insert(scriptEntity, ["name": .string("<i>row \(i)</i>")]) }
            for i in 1...4 { try w.insert("Item", ["title": .string("Item \(i)"), "created": .date(epoch.addingTimeInterval(Double(i)))]) }
        }
        try writer.checkpoint()
        for day in 1...3 {
            try writer.transaction(day == 2 ? hostile : app, at: epoch.addingTimeInterval(Double(day) * 86_400)) { w in
                try w.insert("Item", ["title": .string(day == 2 ? hostileTitle : "Item from day \(day)")])
            }
        }
        try writer.executeRaw("UPDATE Z_PRIMARYKEY SET Z_MAX = 2 WHERE Z_NAME = 'Item'")
        try writer.executeRaw("UPDATE ZITEM SET Z_OPT = NULL WHERE Z_PK = 1")
        try writer.close(leavingWAL: true)
    }
}
