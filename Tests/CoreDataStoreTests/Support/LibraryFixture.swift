import Acquisition
import CoreDataStore
import Foundation
import SQLiteAccess
import StoreBuilder
import StoreFormats
import StoreTestSupport

/// Opening and reading the builder's library store (`LibraryStore`) through the evidence path.
enum LibraryFixture {
    static let model = LibraryStore.model
    static let borrowerID = LibraryStore.borrowerID
    static let coverFile = LibraryStore.coverFile
    static let missingFile = LibraryStore.missingFile
    static let added = LibraryStore.added

    static func write(_ url: URL, modelCache: Bool = true) throws {
        try LibraryStore.write(url, modelCache: modelCache)
    }

    /// Opens a store through the evidence path (working copy, WAL applied) and maps it.
    static func open(_ url: URL, xcodeModel: URL? = nil, session: EvidenceSession) throws -> OpenedStore {
        let copy = try session.workingCopy(of: url)
        return try OpenedStore.open(copy, displayPath: url.path, xcodeModel: xcodeModel)
    }

    static func rows(_ opened: OpenedStore, _ entity: String, filters: [String] = []) throws -> [DecodedRow] {
        let reader = RowReader(map: opened.map, entity: try opened.entity(entity), decoder: opened.decoder)
        var rows: [DecodedRow] = []
        try reader.forEach(opened.connection, filters: try filters.map { try reader.filter($0) }) { rows.append($0) }
        return rows
    }
}

extension DecodedRow {
    subscript(_ name: String) -> FieldValue? { values.first { $0.name == name }?.value }
}

extension FieldValue {
    /// A compact text form for assertions.
    var testText: String {
        switch self {
        case .null: return "null"
        case .integer(let i): return String(i)
        case .real(let d): return String(d)
        case .bool(let b): return String(b)
        case .text(let s): return s
        case .longText(let t): return "long:\(t.byteCount)"
        case .date(let iso, _): return iso
        case .uuid(let s): return "uuid:" + s
        case .decimal(let s): return "decimal:" + s
        case .binary(let b):
            switch b.storage {
            case .plain: return "bytes:\(b.size ?? -1):\(b.prefixHex)"
            case .inline: return "inline:\(b.size ?? -1):\(b.prefixHex)"
            case .external(let f): return "external:\(f.name):\(f.exists):\(f.size ?? -1)"
            }
        case .archived(let tree): return "archived:\(tree)"
        case .composite(let elements): return "{" + elements.map { "\($0.name)=\($0.value.testText)" }.joined(separator: ",") + "}"
        case .object(let entity, let pk): return "\(entity)#\(pk)"
        }
    }
}
