// libFuzzer entry point: manifest path patterns (`**`, `*`, `?`). The input's first line is the
// pattern, the rest the path. Besides not crashing and not hanging (libFuzzer's -timeout catches
// a matcher gone exponential), the answer must equal a plain backtracking reading of the rules
// whenever that reading is cheap enough to run (few `**`, short path).
import Acquisition
import Foundation
#if canImport(Glibc)
import Glibc
#endif

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    let text = String(decoding: start.map { UnsafeRawBufferPointer(start: $0, count: count) } ?? UnsafeRawBufferPointer(start: nil, count: 0), as: UTF8.self)
    let lines = text.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false)
    let pattern = String(lines.first ?? "")
    let path = lines.count > 1 ? String(lines[1]) : ""
    let got = PathPattern(pattern).matches(path)
    let components = pattern.split(separator: "/").map(String.init)
    let parts = path.split(separator: "!").last.map { $0.split(separator: "/").map(String.init) } ?? []
    // fnmatch treats `[`, `\` specially; the matcher does not: compare only without them.
    // fnmatch in the C locale takes `?` for one byte, the matcher for one character (scalar): they
    // can only agree on `?` where the path is ASCII.
    let plain = !pattern.contains("[") && !pattern.contains("\\") && !pattern.contains("\0") && !path.contains("\0")
        && (!pattern.contains("?") || path.utf8.allSatisfy { $0 < 0x80 })
    if plain, components.filter({ $0 == "**" }).count <= 4, parts.count <= 12, components.count <= 12 {
        precondition(got == reference(components, parts), "pattern \(pattern.debugDescription) on \(path.debugDescription): \(got)")
    }
    return 0
}

/// The recursive matcher PathPattern replaced (exponential in the number of `**`).
func reference(_ components: [String], _ parts: [String]) -> Bool {
    guard !components.isEmpty else { return false }
    func match(_ p: ArraySlice<String>, _ s: ArraySlice<String>) -> Bool {
        guard let head = p.first else { return s.isEmpty }
        if head == "**" {
            for skip in 0...s.count where match(p.dropFirst(), s.dropFirst(skip)) { return true }
            return false
        }
        guard let part = s.first, fnmatch(head, part, 0) == 0 else { return false }
        return match(p.dropFirst(), s.dropFirst())
    }
    for start in 0..<max(1, parts.count) where match(components[...], parts[start...]) { return true }
    return false
}
