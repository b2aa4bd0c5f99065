import Acquisition
import Foundation
import StoreTestSupport
import Testing

/// Manifest path patterns: the matcher is checked against an independent reader of the same
/// rules (a regular expression built from the pattern), and its work is bounded whatever the
/// pattern (a 300-fold `**/` once ran for minutes).
@Suite("path patterns")
struct PathPatternTests {
    /// The matcher this one replaced: a plain recursive backtracking reading of the documented
    /// rules (exponential in the number of `**`, so only for small cases). Component globs use
    /// fnmatch(3) from the C library, independent of ours.
    static func reference(_ pattern: String, _ path: String) -> Bool {
        let components = pattern.split(separator: "/").map(String.init)
        let parts = path.split(separator: "!").last.map { $0.split(separator: "/").map(String.init) } ?? []
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

    @Test("agrees with the backtracking matcher it replaced on 20,000 generated patterns and paths")
    func agreesWithReference() {
        var rng = SplitMix(seed: 14)
        let pieces = ["a", "b", "ab", "*", "?", "**", "a*", "*b", "?b", "x.sqlite", "*.store"]
        let names = ["a", "b", "ab", "bb", "x.sqlite", "y.store", "ba", "aab"]
        for _ in 0..<20_000 {
            let pattern = (0..<Int(rng.next() % 5 + 1)).map { _ in pieces[Int(rng.next() % UInt64(pieces.count))] }.joined(separator: "/")
            let path = (0..<Int(rng.next() % 6)).map { _ in names[Int(rng.next() % UInt64(names.count))] }.joined(separator: "/")
            let got = PathPattern(pattern).matches(path)
            #expect(got == Self.reference(pattern, path), "\(pattern) on \(path): \(got)")
        }
    }

    @Test("the path-pattern fuzz seeds and regressions (first line pattern, rest path) agree with the reference where it can run")
    func fuzzInputs() throws {
        let fuzz = ProjectPaths.root().appendingPathComponent("Fuzz")
        var count = 0
        for folder in ["regressions/path-pattern", "corpus/path-pattern"] {
            let dir = fuzz.appendingPathComponent(folder)
            for name in (try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? [] where !name.hasPrefix(".") {
                let text = String(decoding: try Data(contentsOf: dir.appendingPathComponent(name)), as: UTF8.self)
                let lines = text.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false)
                let pattern = String(lines.first ?? ""), path = lines.count > 1 ? String(lines[1]) : ""
                let got = PathPattern(pattern).matches(path)
                // fnmatch (the reference) takes `?` for one byte; the matcher for one character.
                let referenceApplies = !pattern.contains("?") || path.utf8.allSatisfy { $0 < 0x80 }
                if pattern.components(separatedBy: "**").count <= 5, referenceApplies { #expect(got == Self.reference(pattern, path), "\(name)") }
                count += 1
            }
        }
        #expect(count >= 4)
    }

    /// fuzz-path-pattern, a finding in the oracle: `?` against a name whose one character is several
    /// UTF-8 bytes. The matcher reads `?` as one character, as a user means it; fnmatch in the C
    /// locale reads one byte. Kept as `Fuzz/regressions/path-pattern/question-mark-non-ascii`.
    @Test("? matches one character, however many bytes it takes")
    func questionMarkIsOneCharacter() throws {
        #expect(PathPattern("?").matches("\u{FFFD}"))
        #expect(PathPattern("a?c").matches("aéc") && !PathPattern("a?c").matches("aééc"))
        let found = try Data(contentsOf: ProjectPaths.root().appendingPathComponent("Fuzz/regressions/path-pattern/question-mark-non-ascii"))
        let lines = String(decoding: found, as: UTF8.self).split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false)
        #expect(PathPattern(String(lines[0])).matches(String(lines[1])), "one character of 3 bytes matches ?")
        #expect(fnmatch("?", "\u{FFFD}", 0) != 0, "the C locale's fnmatch sees 3 bytes, which is why the oracle is not asked")
    }

    /// fuzz-path-pattern, wrong answer: a `*` in the pattern met a `*` in the name and was taken
    /// as a literal, so `*x*` did not match `*abx`.
    @Test("a * in the pattern is a wildcard even against a * in the name")
    func starAgainstStar() {
        #expect(PathPattern("*x*").matches("*abx"))
        #expect(PathPattern("a/*x*").matches("a/**x"))
        #expect(!PathPattern("*x").matches("*ab"))
    }

    @Test("a 300-fold **/ pattern is answered, both ways, on a deep path")
    func manyDoubleStars() {
        let hostile = PathPattern(String(repeating: "**/", count: 300) + "a*b*c*d*e*f*.sqlite")
        let deep = (0..<60).map { "d\($0)" }.joined(separator: "/")
        #expect(!hostile.matches(deep + "/abcdef.store"))
        #expect(hostile.matches(deep + "/a-b-c-d-e-f.sqlite"))
        // Alternating ** and * components, the worst case for a backtracking matcher.
        let alternating = PathPattern(Array(repeating: "**/*", count: 150).joined(separator: "/") + "/z")
        #expect(!alternating.matches(deep + "/y"))
        #expect(alternating.matches((0..<200).map { "d\($0)" }.joined(separator: "/") + "/z"))
        #expect(!alternating.matches((0..<100).map { "d\($0)" }.joined(separator: "/") + "/z"), "150 `*` need 150 components")
    }
}

/// A small deterministic generator (SplitMix64) so the generated cases are the same every run.
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
