/// A path pattern from a manifest: `Library/Application Support/*.sqlite`. `*` and `?` match
/// within one path component, `**` matches any number of components. A pattern matches a path
/// when it matches the path's tail at a component boundary, so `Documents/todos.json` matches
/// `container/Documents/todos.json` and `AppDomain-com.x/Documents/todos.json` alike.
///
/// Both sides are compared in one Unicode form (NFC): a manifest typed on one system and a path
/// read from a container or archive made on another differ in form but not in meaning (APFS
/// and HFS+ hand out either). `ignoringCase` matches as a case-insensitive volume does; callers
/// use it only when the exact match finds nothing (docs/audit.md).
public struct PathPattern: Sendable, Equatable, CustomStringConvertible {
    public let text: String
    let components: [String]

    public init(_ text: String) {
        self.text = text
        self.components = text.precomposedStringWithCanonicalMapping.split(separator: "/").map(String.init)
    }

    public var description: String { text }

    public func matches(_ path: String, ignoringCase: Bool = false) -> Bool {
        func fold(_ s: String) -> String { ignoringCase ? s.lowercased() : s }
        let normalized = fold(path.precomposedStringWithCanonicalMapping)
        let parts = normalized.split(separator: "!").last.map { $0.split(separator: "/").map(String.init) } ?? []
        let components = ignoringCase ? self.components.map(fold) : self.components
        guard !components.isEmpty else { return false }
        for start in 0..<max(1, parts.count) where Self.match(components[...], parts[start...]) {
            return true
        }
        return false
    }

    static func match(_ pattern: ArraySlice<String>, _ parts: ArraySlice<String>) -> Bool {
        guard let head = pattern.first else { return parts.isEmpty }
        if head == "**" {
            for skip in 0...parts.count where match(pattern.dropFirst(), parts.dropFirst(skip)) { return true }
            return false
        }
        guard let part = parts.first, component(Array(head.unicodeScalars)[...], Array(part.unicodeScalars)[...]) else { return false }
        return match(pattern.dropFirst(), parts.dropFirst())
    }

    /// Glob within one component (`*`, `?`), iterative with backtracking, linear in practice.
    static func component(_ p: ArraySlice<Unicode.Scalar>, _ s: ArraySlice<Unicode.Scalar>) -> Bool {
        var pi = p.startIndex, si = s.startIndex
        var star: Int?, mark = s.startIndex
        while si < s.endIndex {
            if pi < p.endIndex, p[pi] == "?" || p[pi] == s[si] {
                pi += 1; si += 1
            } else if pi < p.endIndex, p[pi] == "*" {
                star = pi; mark = si; pi += 1
            } else if let st = star {
                pi = st + 1; mark += 1; si = mark
            } else {
                return false
            }
        }
        while pi < p.endIndex, p[pi] == "*" { pi += 1 }
        return pi == p.endIndex
    }
}
