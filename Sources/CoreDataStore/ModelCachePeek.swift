import Foundation
import SQLiteAccess

/// A light look into `Z_MODELCACHE` for the entity class names, used as stack evidence.
/// A damaged cache yields nil here (the full model reader reports it).
enum ModelCachePeek {
    static func classNames(_ connection: Connection) -> [String: String]? {
        guard let model = try? ModelCacheReader.read(connection) else { return nil }
        var names: [String: String] = [:]
        for entity in model.entities {
            names[entity.name] = entity.className ?? "NSManagedObject"
        }
        return names
    }
}
