import Foundation
import StoreFormats

/// What an atomic store (Core Data's XML or binary store type) holds, read whole: Core Data itself
/// keeps the whole graph of such a store in memory, and the file is bounded by
/// `AtomicStoreLimits.maxFileBytes` before a byte is parsed.
public struct AtomicStoreContents: Sendable {
    public let format: StoreFileFormat
    /// `<databaseInfo>`: `<version>` (134481920 in every store seen), `<UUID>`, `<nextObjectID>`.
    public var databaseVersion: String?
    public var databaseUUID: String?
    public var nextObjectID: String?
    /// The store metadata (a property list: NSStoreType, NSStoreUUID, NSStoreModelVersionHashes …).
    public var metadata: [String: PlistValue] = [:]
    public var objects: [AtomicStoreObject] = []
    /// What is wrong but did not stop the reading (duplicate ids, values that are not their type),
    /// each one sentence naming the object; at most `AtomicStoreLimits.maxAnomalies` kept.
    public var anomalies: [String] = []
    /// How many anomalies there were in all (more than are kept).
    public var anomalyCount = 0

    public init(format: StoreFileFormat) { self.format = format }

    mutating func note(_ anomaly: String) {
        anomalyCount += 1
        if anomalies.count < AtomicStoreLimits.maxAnomalies { anomalies.append(anomaly) }
    }

    // MARK: Facts from the metadata

    public var storeType: String? { metadata["NSStoreType"]?.stringValue }
    public var storeUUID: String? { metadata["NSStoreUUID"]?.stringValue }
    public var frameworkVersion: Int64? { metadata["NSPersistenceFrameworkVersion"]?.intValue }
    /// Entity name → its version hash, base64 (the model the store was last saved with).
    public var modelVersionHashes: [(entity: String, hash: String)] {
        guard case .dictionary(let hashes)? = metadata["NSStoreModelVersionHashes"] else { return [] }
        return hashes.keys.sorted().map { name in
            if case .data(let data)? = hashes[name] { return (name, data.base64EncodedString()) }
            return (name, "")
        }
    }

    /// The entity name to show for an object's stored type. The XML store writes entity names in
    /// upper case (`type="EMPLOYEE"`, in every real file found); the metadata's version hashes
    /// keep the model's own spelling, which is used when one matches. (For many lookups, make an
    /// `AtomicStoreIndex` once.)
    public func entityName(forStoredType type: String) -> String {
        let wanted = type.uppercased()
        return modelVersionHashes.first { $0.entity.uppercased() == wanted }?.entity ?? type
    }

    /// Each entity with its number of objects, by name; entities the model names without objects count 0.
    public var objectCounts: [(entity: String, objects: Int)] {
        let index = AtomicStoreIndex(self)
        return index.entities.map { ($0, index.objectsByEntity[$0]?.count ?? 0) }
    }
}

/// One `<object type="ENTITY" id="z12">` with its attributes and relationships as stored.
public struct AtomicStoreObject: Sendable {
    public let type: String
    public let id: String
    public var attributes: [Attribute] = []
    public var relationships: [Relationship] = []

    public struct Attribute: Sendable {
        public let name: String
        /// Core Data's name for the type: string, int16, int32, int64, decimal, double, float,
        /// bool, date, binary, transformable, uuid, uri …
        public let type: String
        public var text: String
    }

    public struct Relationship: Sendable {
        public let name: String
        /// `1/1` for a to-one, `0/0` for a to-many (min/max count as written).
        public let type: String
        public let destination: String
        public let idrefs: [String]
        public var isToMany: Bool { type.split(separator: "/").last.map { $0 != "1" } ?? true }
    }

    public init(type: String, id: String) {
        self.type = type
        self.id = id
    }
}

/// Bounds on what an atomic store may make storelens hold. The file is read whole (as Core Data
/// does), so its size is the first bound; the others stop a small file from describing a huge
/// graph (many tiny objects) or nesting that a recursive reader would follow.
public struct AtomicStoreLimits: Sendable {
    /// Largest store file read.
    public var maxFileBytes: Int
    public var maxObjects = 2_000_000
    public var maxPropertiesPerObject = 10_000
    /// Element nesting: Core Data writes 4 levels, plus the metadata plist's own.
    public var maxDepth = 64
    /// One attribute's text (a base64 blob included).
    public var maxValueBytes = 64 << 20
    /// Entities, by the objects' types and the model's hashes: each is a table in `export`, and
    /// models have tens, not thousands.
    public var maxEntities = 10_000
    public static let maxAnomalies = 200

    public init(maxFileBytes: Int = 256 << 20) { self.maxFileBytes = maxFileBytes }

    /// The bounds commands use: the file limit is `STORELENS_MAX_ATOMIC_STORE_BYTES`, 256 MiB by default.
    public static var standard: AtomicStoreLimits {
        AtomicStoreLimits(maxFileBytes: StoreFileFormat.atomicStoreByteLimit)
    }
}

/// Why an atomic store could not be read: one sentence naming the file, what is wrong, what to do.
public enum AtomicStoreError: Error, Equatable, CustomStringConvertible, Sendable {
    case unreadable(path: String, detail: String)
    case tooLarge(path: String, what: String, limit: Int)
    case malformed(path: String, line: Int?, detail: String)
    case entityNotFound(path: String, entity: String, entities: [String])

    public var description: String {
        switch self {
        case .unreadable(let path, let detail):
            return "\(path) cannot be read (\(detail)); check that the file is a regular file you may read."
        case .tooLarge(let path, let what, let limit):
            let hint = what.hasSuffix(" bytes") ? " (set STORELENS_MAX_ATOMIC_STORE_BYTES to raise the limit)" : ""
            return "\(path) holds \(what), more than the \(limit) storelens reads; it is refused rather than risk the machine's memory\(hint)."
        case .malformed(let path, let line, let detail):
            return "\(path) is not a readable Core Data atomic store (\(line.map { "line \($0): " } ?? "")\(detail)); copy it off the device again, or check it was not edited by hand."
        case .entityNotFound(let path, let entity, let entities):
            return "\(path) has no entity \(entity); its entities are \(entities.prefix(20).joined(separator: ", "))."
        }
    }
}

extension AtomicStoreError: DescribedError {
    public var errorClass: ErrorClass { .input }
}
