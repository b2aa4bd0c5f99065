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
        // Matching a tail at any component boundary is matching `**/pattern` from the start.
        return Self.match(["**"] + components, parts)
    }

    /// Whether `pattern` matches all of `parts`, by dynamic programming over (pattern component,
    /// path component): each pair is decided once, so the work is at most
    /// `pattern.count × (parts.count + 1)` component matches, whatever the pattern. (Trying every
    /// split for every `**`, as a backtracking matcher does, is exponential in the number of
    /// `**`: a 1 KB manifest with `**/` 300 times ran for minutes.) Runs of `**` are one `**`.
    static func match(_ pattern: [String], _ parts: [String]) -> Bool {
        var compact: [String] = []
        for component in pattern where !(component == "**" && compact.last == "**") { compact.append(component) }
        let p = compact.count, n = parts.count
        let scalars = compact.map { Array($0.unicodeScalars)[...] }
        let partScalars = parts.map { Array($0.unicodeScalars)[...] }
        // below[j]: does compact[i+1...] match parts[j...]; row[j]: the same for compact[i...].
        var below = [Bool](repeating: false, count: n + 1)
        below[n] = true
        for i in stride(from: p - 1, through: 0, by: -1) {
            var row = [Bool](repeating: false, count: n + 1)
            if compact[i] == "**" {
                // `**` takes no component (below[j]) or one more (row[j + 1]).
                row[n] = below[n]
                for j in stride(from: n - 1, through: 0, by: -1) { row[j] = below[j] || row[j + 1] }
            } else {
                for j in 0..<n where below[j + 1] && component(scalars[i], partScalars[j]) { row[j] = true }
            }
            below = row
        }
        return below[0]
    }

    /// Glob within one component (`*`, `?`), iterative: backtracking only to the last `*`, so at
    /// most `p.count × s.count` steps.
    static func component(_ p: ArraySlice<Unicode.Scalar>, _ s: ArraySlice<Unicode.Scalar>) -> Bool {
        var pi = p.startIndex, si = s.startIndex
        var star: Int?, mark = s.startIndex
        while si < s.endIndex {
            // `*` first: a `*` in the pattern is a wildcard even where the name has a `*` too.
            if pi < p.endIndex, p[pi] == "*" {
                star = pi; mark = si; pi += 1
            } else if pi < p.endIndex, p[pi] == "?" || p[pi] == s[si] {
                pi += 1; si += 1
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
