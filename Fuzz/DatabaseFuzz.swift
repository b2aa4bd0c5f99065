// libFuzzer entry point: a main database file: its header, the main-file image and the b-tree
// walk that maps every page to its table or index (what `wal` uses to name the tables a commit wrote).
import Foundation
import StoreFormats

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    let data = start.map { Data(bytes: $0, count: count) } ?? Data()
    guard let header = try? DatabaseHeader(data: data) else { return 0 }
    _ = header.pageSize
    _ = try? DatabaseImage.make(mainFile: data, maxBytes: 8 << 20)
    if data.count / header.pageSize <= 512, let tracker = try? PageOwnershipTracker(mainFile: data) {
        _ = tracker.pageUses()
    }
    return 0
}
