import Foundation
import StoreFormats

/// Writes the frame of a Core Data binary store (`NSBinaryStoreType`) as decompiled Core Data
/// describes it (`BinaryStoreHeader`; no real binary store was found to check it against): the
/// 64-byte big-endian header, the object map as a keyed archive under `mapData` (here an empty
/// `NSMutableDictionary`: the archived form of its `NSDictionaryMapNode` entries is not
/// documented), then the metadata as a keyed archive under `metadata`, with the model's version
/// hashes.
public struct BinaryStoreWriter {
    public let model: ModelDescription
    public let storeUUID: UUID

    public init(model: ModelDescription, storeUUID: UUID = UUID()) {
        self.model = model
        self.storeUUID = storeUUID
    }

    public func data() throws -> Data {
        let map = KeyedArchiveWriter()
        let mapData = try map.finish(top: ["mapData": map.mutableDictionary(keys: [], values: [])])
        let archive = KeyedArchiveWriter()
        let entities = model.entities.sorted { $0.name < $1.name }
        let hashes = archive.dictionary(keys: entities.map { archive.string($0.name) },
                                        values: entities.map { archive.data(Data(StoreWriter.versionHash($0))) })
        let keys = ["NSPersistenceFrameworkVersion", "NSStoreModelVersionHashes", "NSStoreModelVersionHashesVersion", "NSStoreType", "NSStoreUUID"]
        let values = [archive.int(1414), hashes, archive.int(3), archive.string("Binary"), archive.string(storeUUID.uuidString)]
        let metadata = try archive.finish(top: ["metadata": archive.dictionary(keys: keys.map { archive.string($0) }, values: values)])
        var header = Data("CoreData".utf8)
        func be<T: FixedWidthInteger>(_ value: T) { withUnsafeBytes(of: value.bigEndian) { header.append(contentsOf: $0) } }
        be(UInt32(1))
        be(UInt32(134_481_920))
        be(UInt64(64 + mapData.count)); be(UInt64(metadata.count))
        be(UInt64(64)); be(UInt64(mapData.count))
        be(UInt64(101)); be(UInt64(0))
        return header + mapData + metadata
    }

    public func write(to url: URL) throws {
        try data().write(to: url, options: .withoutOverwriting)
    }
}
