// libFuzzer entry point: the -wal reader, and what is built on it (the page map of every commit,
// a database image and the page-ownership walk of a WAL that holds the whole database).
// Built and run by scripts/fuzz.sh (`make fuzz`).
import Foundation
import StoreFormats

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    let data = start.map { Data(bytes: $0, count: count) } ?? Data()
    let wal = WAL(data: data)
    // Facts that must hold for any input.
    precondition(wal.frames.count <= max(0, wal.totalFrameSlots), "more valid frames than whole frames")
    precondition(wal.lastCommitFrame <= wal.frames.count)
    precondition(wal.commitFrames == wal.commitFrames.sorted())
    _ = wal.staleFrameCount
    _ = wal.uncommittedFrameCount
    for n in 0...(wal.transactions.count + 1) {
        _ = wal.commitFrame(ofCommit: n)
        _ = wal.latestFrames(upToCommit: n == 0 ? nil : n)
    }
    // The WAL alone (an empty main file: a store that was never checkpointed).
    _ = try? DatabaseImage.make(mainFile: Data(), wal: wal, walData: data, maxBytes: 8 << 20)
    if wal.transactions.count > 0, wal.databaseSizeInPages <= 256,
       let tracker = try? PageOwnershipTracker(mainFile: Data(), wal: wal, walData: data) {
        while tracker.advance() {}
        _ = tracker.pageUses()
    }
    return 0
}
