// libFuzzer entry point: the -shm (wal-index) header reader, and its comparison with a WAL.
import Foundation
import StoreFormats

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    let data = start.map { Data(bytes: $0, count: count) } ?? Data()
    guard let index = try? SharedMemoryIndex(data: data) else {
        precondition(data.count < SharedMemoryIndex.headerLength, "a long enough -shm must parse")
        return 0
    }
    _ = index.pageSize
    _ = index.isIntact
    // The bytes after the header, read as a WAL, compared with the index.
    _ = index.agrees(with: WAL(data: data.dropFirst(SharedMemoryIndex.headerLength)))
    return 0
}
