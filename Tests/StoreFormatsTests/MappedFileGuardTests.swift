import Foundation
import StoreFormats
import StoreTestSupport
import Testing

/// A file read in place is mapped (`MappedFile`), and another process may cut it short while it is
/// (a live app's store, checkpointed). A read past the new end must not end the process with
/// SIGBUS: it reads zeros, and the fault is counted for the session to report the file changed.
@Suite("a mapped file cut short by someone else: zeros and a count, not SIGBUS")
struct MappedFileGuardTests {
    @Test("reads past the new end give zeros, the pages are counted, the bytes before it are intact")
    func cutShortWhileMapped() throws {
        let folder = try TemporaryFolder("mapped-guard")
        let file = folder.path("store")
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        let bytes = Data((0..<(page * 8)).map { UInt8(truncatingIfNeeded: $0 * 7 + 1) })
        try bytes.write(to: file)
        let mapped = try MappedFile.map(path: file.path)
        #expect(mapped == bytes)
        let before = MappedFile.pagesReadPastEnd
        // Another process cuts the file to two pages and a half while it is mapped.
        #expect(truncate(file.path, off_t(page * 2 + page / 2)) == 0)
        let tail = mapped[mapped.startIndex + page * 5 ..< mapped.startIndex + page * 6]
        #expect(tail.allSatisfy { $0 == 0 }, "a page past the new end reads as zeros")
        #expect(MappedFile.pagesReadPastEnd >= before + 1, "the read past the end is counted")
        #expect(MappedFile.cutShort(among: [file.path, folder.path("other").path]) == [file.path], "and said of this file alone")
        #expect(mapped.prefix(page * 2) == bytes.prefix(page * 2), "what is still in the file reads as it was")
    }
}
