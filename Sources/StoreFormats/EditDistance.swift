/// Levenshtein distance (insertions, deletions and substitutions of Characters), for "did you
/// mean …?" suggestions. Its inputs come from outside (typed options, a manifest's paths, a
/// device's entity names) and the work is quadratic, so a string longer than `maximumLength`
/// gets no distance at all (nil) rather than a long wait.
public enum EditDistance {
    /// The longest string compared, in Characters: far above any name a person types.
    public static let maximumLength = 512

    /// The distance between `a` and `b`, or nil when either is longer than `maximumLength`.
    public static func between(_ a: String, _ b: String) -> Int? {
        between(Array(a), Array(b))
    }

    /// As `between(_:_:)` on Characters already split (a caller comparing one string with many).
    public static func between(_ a: [Character], _ b: [Character]) -> Int? {
        guard a.count <= maximumLength, b.count <= maximumLength else { return nil }
        guard !a.isEmpty else { return b.count }
        guard !b.isEmpty else { return a.count }
        // Two rows of the dynamic-programming table, not the whole table.
        var previous = Array(0...b.count)
        var current = Array(repeating: 0, count: b.count + 1)
        for (i, x) in a.enumerated() {
            current[0] = i + 1
            for (j, y) in b.enumerated() {
                current[j + 1] = min(previous[j + 1] + 1, current[j] + 1, previous[j] + (x == y ? 0 : 1))
            }
            swap(&previous, &current)
        }
        return previous[b.count]
    }

    /// The candidate nearest `word` ("did you mean …?"), compared after `fold` (e.g. lowercasing):
    /// within a third of the word's length (at least 2 edits), the first of equals; nil when none is.
    public static func closest(to word: String, in candidates: [String], folding fold: (String) -> String = { $0 }) -> String? {
        let folded = Array(fold(word))
        var best: (candidate: String, distance: Int)?
        for candidate in candidates {
            guard let d = between(folded, Array(fold(candidate))), d <= max(2, word.count / 3) else { continue }
            if d < (best?.distance ?? .max) { best = (candidate, d) }
        }
        return best?.candidate
    }
}
