// libFuzzer entry point: the names a backup's Manifest.db gives a file (Files.domain and
// Files.relativePath). Besides not crashing, a pair judged safe must be plain names that, created
// the one way storelens creates such files (PrivateTree), land beneath the folder and nowhere else.
// Input: one byte n, then n bytes of domain (fewer if the input is shorter), then the relative path.
import Acquisition
import Foundation

private let root: URL = {
    let url = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("storelens-fuzz-backup-path-\(getpid())")
    try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url.resolvingSymlinksInPath()
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    let bytes = start.map { Array(UnsafeRawBufferPointer(start: $0, count: count)) } ?? []
    guard let first = bytes.first else { return 0 }
    let split = min(bytes.count, 1 + Int(first))
    let domain = ArchivePath.decode(rawBytes: Array(bytes[1..<split]))
    let relative = ArchivePath.decode(rawBytes: Array(bytes[split...]))
    guard case .safe(let components, _) = ArchivePath.sanitize(domain: domain, relativePath: relative) else { return 0 }
    precondition(components.first == domain, "the domain is the first component, whole")
    precondition(components.count >= 2 && components.count <= ArchivePath.maxComponents)
    for c in components {
        precondition(PrivateTree.isPlain(c), "unsafe component \(Array(c.utf8))")
        precondition(c.utf8.count <= 255)
    }
    let tree = root.appendingPathComponent("t")
    try? FileManager.default.removeItem(at: tree)
    guard mkdir(tree.path, 0o700) == 0 else { return 0 }
    if let file = try? PrivateTree(root: tree).createFile(components) {
        close(file.fd)
        let made = file.url.resolvingSymlinksInPath().path
        // Bytes, not Characters: a name starting with a combining mark joins the "/" before it
        // into one Character, and a Character-wise hasPrefix then says "outside" of a file inside.
        precondition(made.utf8.starts(with: (tree.path + "/").utf8), "created outside the folder: \(made)")
        precondition(FileManager.default.fileExists(atPath: made))
    }
    // Nothing but the tree in the root.
    let left = (try? FileManager.default.contentsOfDirectory(atPath: root.path)) ?? []
    precondition(left == ["t"], "written beside the folder: \(left)")
    return 0
}
