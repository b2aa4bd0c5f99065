// libFuzzer entry point: Z_MODELCACHE.Z_CONTENT as found in a store: raw DEFLATE (with an output
// cap), then the keyed archive, then the model walker.
import CoreDataStore
import Deflate
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    let data = start.map { Data(bytes: $0, count: count) } ?? Data()
    if let out = try? RawDeflate.inflate(data, maxOutputBytes: 1 << 16) {
        precondition(out.count <= 1 << 16, "inflate exceeded its cap")
    }
    _ = try? RawDeflate.inflate(data, maxOutputBytes: 0)
    _ = try? ModelCacheReader.decode(data, path: "fuzz")
    return 0
}
