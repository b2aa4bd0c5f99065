// libFuzzer entry point: the keyed-archive walker. The input is a binary plist; it is read as an
// NSKeyedArchiver archive and rendered from every top-level root (transformable attributes), then
// handed, deflated, to the model-cache reader, whose walker turns an archived
// NSManagedObjectModel into a model.
import CoreDataStore
import Deflate
import Foundation
import StoreFormats

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    let data = start.map { Data(bytes: $0, count: count) } ?? Data()
    guard let archive = try? KeyedArchive(data: data, limits: .init(maxInputBytes: 1 << 20, maxObjects: 100_000, maxDepth: 64)) else {
        return 0
    }
    for reference in archive.topReferences.values {
        _ = try? archive.json(reference, depthLimit: 64, maxValues: 10_000)
        _ = try? archive.object(reference)
        _ = try? archive.array(reference)
        _ = try? archive.dictionary(reference)
        _ = try? archive.stringKeyedDictionary(reference)
        _ = try? archive.string(reference)
        _ = try? archive.uuid(reference)
        _ = try? archive.date(reference)
    }
    if let blob = try? RawDeflate.deflate(data, level: 1) {
        _ = try? ModelCacheReader.decode(blob, path: "fuzz")
    }
    return 0
}
