// libFuzzer entry point: the binary plist reader (Z_METADATA.Z_PLIST, keyed archives).
import Foundation
import StoreFormats

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    let data = start.map { Data(bytes: $0, count: count) } ?? Data()
    // Small limits so that bounded-but-large inputs stay fast; then the defaults.
    _ = try? BinaryPlist.decode(data, limits: .init(maxInputBytes: 1 << 20, maxObjects: 10_000, maxDepth: 32, maxDecodedValues: 10_000))
    if let value = try? BinaryPlist.decode(data) {
        _ = value.typeName
    }
    return 0
}
