// libFuzzer entry point: sanitising names from archives and backups. Besides not crashing, a name
// judged safe must be one that cannot leave the extraction folder.
import Acquisition
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    let bytes = start.map { Array(UnsafeRawBufferPointer(start: $0, count: count)) } ?? []
    let decoded = ArchivePath.decode(rawBytes: bytes)
    if String(validating: bytes, as: UTF8.self) == nil {
        // Escaped names must stay distinct from valid ones: every invalid byte becomes %XX.
        precondition(decoded.contains("%"), "an invalid UTF-8 name decoded without escapes")
    }
    for name in [decoded, String(decoding: bytes, as: UTF8.self)] {
        guard case .safe(let components, _) = ArchivePath.sanitize(name) else { continue }
        precondition(!components.isEmpty)
        precondition(components.count <= ArchivePath.maxComponents)
        for c in components {
            precondition(!c.isEmpty && !c.unicodeScalars.elementsEqual(".".unicodeScalars)
                         && !c.unicodeScalars.elementsEqual("..".unicodeScalars), "unsafe component \(c)")
            // Scalars, not Characters: the file system splits on the byte.
            precondition(!c.unicodeScalars.contains("/") && !c.unicodeScalars.contains("\0"), "separator or NUL in \(c)")
            precondition(c.utf8.count <= 255)
        }
    }
    return 0
}
