import Foundation
import StoreFormats
import StoreTestSupport
import Testing

@Suite("plural")
struct PluralTests {
    @Test("one takes the noun alone, zero and two take an s, and the number is written by the formatter given")
    func counts() {
        for n in [0, 1, 2, 1_000] {
            let suffix = n == 1 ? "" : "s"
            #expect(plural(n, "row") == String(n) + " row" + suffix)
            #expect(plural(n, "commit frame") == String(n) + " commit frame" + suffix)
            #expect(plural(n, "store", formatted: { "<\($0)>" }) == "<" + String(n) + "> store" + suffix)
        }
        #expect(plural(-1, "change").hasSuffix("changes"))
    }
}

@Suite("edit distance")
struct EditDistanceTests {
    /// The definition itself, exponential: only for short strings.
    static func definition(_ a: Substring, _ b: Substring) -> Int {
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        if a.first == b.first { return definition(a.dropFirst(), b.dropFirst()) }
        return 1 + min(definition(a.dropFirst(), b), definition(a, b.dropFirst()), definition(a.dropFirst(), b.dropFirst()))
    }

    /// Every string of up to `length` letters from `alphabet`.
    static func strings(_ alphabet: [Character], upTo length: Int) -> [String] {
        var all = [""], level = [""]
        for _ in 0 ..< length {
            level = level.flatMap { s in alphabet.map { s + String($0) } }
            all += level
        }
        return all
    }

    @Test("agrees with the recursive definition on every pair of strings of up to three letters, Characters not bytes")
    func matchesDefinition() {
        let words = Self.strings(["a", "b", "é"], upTo: 3)
        for a in words {
            for b in words {
                #expect(EditDistance.between(a, b) == Self.definition(a[...], b[...]), "\(a) ~ \(b)")
            }
        }
        // A decomposed é is one Character, equal to the composed one: no distance.
        #expect(EditDistance.between("caf\u{E9}", "cafe\u{301}") == 0)
    }

    @Test("the closest candidate is the first nearest within a third of the word (at least 2 edits), after folding")
    func closest() {
        let candidates = Self.strings(["a", "b"], upTo: 4).map { $0 + "ab" } + ["ABBA", "abba"]
        for word in ["", "a", "ab", "abab", "bbbbbb", "abbaab", "ABBAAB"] {
            for fold: (String) -> String in [{ $0 }, { $0.lowercased() }] {
                let scored = candidates.map { ($0, Self.definition(fold(word)[...], fold($0)[...])) }
                let expected = scored.filter { $0.1 <= max(2, word.count / 3) }.min { $0.1 < $1.1 }?.0
                #expect(EditDistance.closest(to: word, in: candidates, folding: fold) == expected, "\(word)")
            }
        }
        #expect(EditDistance.closest(to: String(repeating: "a", count: EditDistance.maximumLength + 1), in: ["a"]) == nil)
    }

    @Test("strings longer than the bound get no distance; at the bound they do")
    func bounded() {
        let limit = EditDistance.maximumLength
        let atLimit = String(repeating: "x", count: limit)
        #expect(EditDistance.between(atLimit, atLimit + "y") == nil)
        #expect(EditDistance.between(atLimit + "y", "") == nil)
        #expect(EditDistance.between(atLimit, String(repeating: "x", count: limit - 3) + "abc") == 3)
        #expect(EditDistance.between(atLimit, "") == limit)
    }
}

@Suite("stopwatch")
struct StopwatchTests {
    @Test("a duration's seconds are its nanoseconds over a billion, and a running stopwatch never goes back")
    func seconds() {
        for nanoseconds: Int64 in [0, 1, 999_999_999, 1_000_000_000, 1_234_567_890, 86_400 * 1_000_000_000 + 5] {
            let expected = Double(nanoseconds / 1_000_000_000) + Double(nanoseconds % 1_000_000_000) / 1e9
            #expect(abs(Stopwatch.seconds(of: .nanoseconds(nanoseconds)) - expected) < 1e-12)
        }
        #expect(Stopwatch.seconds(of: .milliseconds(-1_500)) == -1.5)
        let watch = Stopwatch()
        let first = watch.seconds
        #expect(first >= 0 && watch.seconds >= first)
    }
}

@Suite("UTC date-time")
struct UTCDateTimeTests {
    /// Days since 1970 to test: every day of 1999-2001 (leap rules, the reference date), each
    /// 400-year cycle's turns, and a spread over the range python's dates cover (years 1-9999).
    static let days: [Int64] = {
        var days = Array(Int64(10_500) ... 11_700)
        for year: Int64 in stride(from: -1_600, through: 8_000, by: 100) { days += [year * 365 + year / 4 - 1, year * 365 + year / 4] }
        days += stride(from: Int64(-719_162), through: 2_932_896, by: 9_973)
        return days.filter { (-719_162 ... 2_932_896).contains($0) }
    }()

    static let pythonAvailable = (try? CLI.bounded(["python3", "-c", "import datetime"], executable: URL(fileURLWithPath: "/usr/bin/env")).status) == 0

    @Test("the civil date of each day agrees with python's proleptic Gregorian dates",
          .enabled(if: pythonAvailable, "python3 is not available to compute the dates independently"))
    func civilDatesAgreeWithPython() throws {
        let script = """
        import sys, datetime
        epoch = datetime.date(1970, 1, 1).toordinal()
        for line in open(sys.argv[1]).read().split():
            print(datetime.date.fromordinal(epoch + int(line)).isoformat())
        """
        let input = FileManager.default.temporaryDirectory.appendingPathComponent("utc-days-\(getpid()).txt")
        try Self.days.map(String.init).joined(separator: "\n").write(to: input, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: input) }
        let run = try CLI.bounded(["python3", "-c", script, input.path], executable: URL(fileURLWithPath: "/usr/bin/env"))
        #expect(run.status == 0, "\(run.stderr)")
        let expected = run.stdout.split(separator: "\n").map(String.init)
        try #require(expected.count == Self.days.count)
        for (day, text) in zip(Self.days, expected) {
            let d = UTCDateTime.civilDate(daysSince1970: day)
            let ours = String(format: "%04lld-%02lld-%02lld", d.year, d.month, d.day)
            #expect(ours == text, "day \(day)")
        }
    }

    @Test("fields agree with Foundation's Gregorian calendar in UTC, microseconds included")
    func fieldsAgreeWithFoundation() throws {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = try #require(TimeZone(secondsFromGMT: 0))
        // Whole seconds from 1600 to 2400 (after the Julian calendar's end in Foundation's
        // calendar); within 30 years of 2001, where a Double holds them exactly, microseconds too.
        for (i, whole) in stride(from: Int64(-12_600_000_000), through: 12_600_000_000, by: 7_777_777).enumerated() {
            let micros = abs(whole) < 1_000_000_000 ? Int64(i * 7919 % 1_000_000) : 0
            let seconds = Double(whole) + Double(micros) / 1e6
            let t = try #require(UTCDateTime(referenceSeconds: seconds))
            let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second],
                                            from: Date(timeIntervalSinceReferenceDate: Double(whole)))
            #expect([t.year, t.month, t.day] == [c.year, c.month, c.day].map { Int64($0 ?? -1) }, "\(whole)")
            #expect(t.secondOfDay == Int64(c.hour! * 3600 + c.minute! * 60 + c.second!), "\(whole)")
            #expect(t.microsecond == micros, "\(seconds)")
        }
        #expect(UTCDateTime(referenceSeconds: 0) == UTCDateTime(referenceSeconds: -0.0))
        #expect(UTCDateTime(referenceSeconds: 0)?.year == Int64(calendar.component(.year, from: Date(timeIntervalSinceReferenceDate: 0))))
        #expect(UTCDateTime(referenceSeconds: 1e12.nextDown) != nil && UTCDateTime(referenceSeconds: -(1e12.nextDown)) != nil)
    }

    @Test("values no calendar can show give no fields", arguments: [Double.nan, .infinity, -.infinity, 1e12, -1e12, .greatestFiniteMagnitude])
    func outOfRange(_ seconds: Double) {
        #expect(UTCDateTime(referenceSeconds: seconds) == nil)
    }
}
