// libFuzzer entry point: a .tar.gz read through ISA-L's gzip layer and libarchive, the whole way
// an archive from a device takes. Besides not crashing or hanging, nothing may be left outside the
// scratch folder, which must be gone afterwards.
import Acquisition
import Foundation

private let work: URL = {
    let url = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("storelens-fuzz-gzip-\(getpid())")
    try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    let input = work.appendingPathComponent("input.tar.gz")
    let scratchParent = work.appendingPathComponent("scratch")
    try? FileManager.default.createDirectory(at: scratchParent, withIntermediateDirectories: true)
    let bytes = start.map { Data(bytes: $0, count: count) } ?? Data()
    guard (try? bytes.write(to: input)) != nil, let session = try? EvidenceSession(scratchParent: scratchParent) else { return 0 }
    var limits = ArchiveLimits()
    limits.maxExtractedBytes = 32 << 20
    limits.maxEntryBytes = 16 << 20
    limits.maxEntries = 10_000
    _ = try? InputResolver(session: session, limits: limits, gzipDecoder: GzipDecoder.available.first ?? .libarchive)
        .inventory(of: input.path)
    session.scratch.remove()
    let left = (try? FileManager.default.contentsOfDirectory(atPath: scratchParent.path)) ?? []
    precondition(left.isEmpty, "scratch left behind: \(left)")
    return 0
}
