import Deflate
import Foundation
import SQLiteAccess
import StoreFormats

/// A light look into `Z_MODELCACHE` for the entity class names, used as stack evidence.
/// A damaged cache yields nil here (the full model reader reports it).
enum ModelCachePeek {
    static let maxInflatedBytes = 64 << 20

    static func classNames(_ connection: Connection) -> [String: String]? {
        guard (try? connection.tableExists("Z_MODELCACHE")) == true,
              let blob = try? connection.scalar("SELECT Z_CONTENT FROM Z_MODELCACHE LIMIT 1").data,
              let inflated = try? RawDeflate.inflate(blob, maxOutputBytes: maxInflatedBytes),
              let archive = try? KeyedArchive(data: inflated),
              let entitiesRef = try? archive.reference("NSEntities", of: archive.root),
              let entities = try? archive.dictionary(entitiesRef)
        else { return nil }
        var names: [String: String] = [:]
        for (_, entityRef) in entities {
            guard let nameRef = try? archive.reference("NSEntityName", of: entityRef),
                  let name = try? archive.string(nameRef) else { continue }
            let classRef = try? archive.reference("NSClassNameForEntity", of: entityRef)
            names[name] = classRef.flatMap { try? archive.string($0) } ?? "NSManagedObject"
        }
        return names
    }
}
