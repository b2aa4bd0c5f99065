import Foundation
import Operations
import StoreTestSupport
import Testing

@Suite("BatchShard and BatchMerge")
struct BatchShardTests {
    @Test("K/N, counted from 1; every input in exactly one of N shards")
    func split() throws {
        let shard = try BatchShard.parse("3/8", environment: [:])
        #expect(shard.index == 3 && shard.count == 8 && shard.description == "3/8")
        let inputs = (0..<500).map { "/mnt/tickets/\($0).tar.gz" }
        let shards = try (1...8).map { try BatchShard(index: $0, count: 8) }
        var seen: [String: Int] = [:]
        for s in shards { for input in s.select(inputs) { seen[input, default: 0] += 1 } }
        #expect(seen.count == inputs.count && seen.values.allSatisfy { $0 == 1 })
        // Spread, not all in one: each of 8 shards gets some of 500 inputs.
        #expect(shards.allSatisfy { !$0.select(inputs).isEmpty })
        #expect(try BatchShard(index: 1, count: 1).select(inputs) == inputs)
        for bad in ["0/8", "9/8", "1/0", "8", "a/b", "1/2/3", "", "-1/4", "1/100001"] {
            #expect(throws: BatchShardError.self, "\(bad)") { try BatchShard.parse(bad, environment: [:]) }
        }
    }

    @Test("auto: Kubernetes' 0-based index with the count the manifest sets; Slurm's id less the array's first id, over its step")
    func auto() throws {
        #expect(try BatchShard.parse("auto", environment: ["JOB_COMPLETION_INDEX": "0", "JOB_COMPLETION_COUNT": "5"]) == BatchShard(index: 1, count: 5))
        #expect(try BatchShard.parse("auto", environment: ["SLURM_ARRAY_TASK_ID": "7", "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_COUNT": "8"]) == BatchShard(index: 7, count: 8))
        #expect(try BatchShard.parse("auto", environment: ["SLURM_ARRAY_TASK_ID": "6", "SLURM_ARRAY_TASK_STEP": "2", "SLURM_ARRAY_TASK_COUNT": "4"]) == BatchShard(index: 4, count: 4))
        // Kubernetes first when both are set.
        #expect(try BatchShard.parse("auto", environment: ["JOB_COMPLETION_INDEX": "1", "JOB_COMPLETION_COUNT": "2",
                                                           "SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_TASK_COUNT": "2"]) == BatchShard(index: 2, count: 2))
        for env in [[:], ["JOB_COMPLETION_INDEX": "2", "JOB_COMPLETION_COUNT": "2"], ["JOB_COMPLETION_INDEX": "1"],
                    ["SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_STEP": "2", "SLURM_ARRAY_TASK_COUNT": "4"],
                    ["SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_COUNT": "4"],
                    ["JOB_COMPLETION_INDEX": "-1", "JOB_COMPLETION_COUNT": "4"]] {
            #expect(throws: BatchShardError.self, "\(env)") { try BatchShard.parse("auto", environment: env) }
        }
    }

    static func line(_ command: String, _ input: String, _ status: String, _ code: Int, host: String) -> String {
        "{\"schemaVersion\":1,\"command\":\"\(command)\",\"input\":\"\(input)\",\"status\":\"\(status)\",\"exitCode\":\(code),\"error\":\(status == "error" ? "\"bad \(input)\"" : "null"),\"host\":\"\(host)\"}"
    }

    @Test("merge: counts per command, the last line of an input counts, duplicates with their hosts, malformed lines make it partial")
    func merge() throws {
        let folder = try TemporaryFolder("merge-unit")
        let a = folder.path("a.jsonl"), b = folder.path("b.jsonl")
        try Data([Self.line("scan", "x", "error", 2, host: "h1"), Self.line("scan", "y", "ok", 0, host: "h1"),
                  Self.line("audit", "x", "findings", 1, host: "h1")].joined(separator: "\n").utf8).write(to: a)   // no final newline
        try Data(([Self.line("scan", "x", "ok", 0, host: "h2"), ""].joined(separator: "\n") + "\n").utf8).write(to: b)
        let m = try Storelens.merge(files: [a, b])
        #expect(m.lineCount == 4 && m.inputCount == 3)
        #expect(m.commands.map(\.command) == ["audit", "scan"])
        let scan = try #require(m.commands.last)
        #expect(scan.inputs == 2 && scan.ok == 2 && scan.errors == 0, "x's later line (ok, from h2) counts")
        #expect(m.duplicates.map { "\($0.command) \($0.input) \($0.lines) \($0.hosts)" } == ["scan x 2 [\"h1\", \"h2\"]"])
        #expect(m.hosts == ["h1", "h2"])
        #expect(m.exitCode == 1, "the audit's findings")
        #expect(m.lines.count == 3 && m.lines[1].contains("\"host\":\"h2\""))

        let c = folder.path("c.jsonl")
        try Data((Self.line("scan", "z", "ok", 0, host: "h3") + "\n{\"schemaVersion\":1,\"comm\n[1]\n{\"schemaVersion\":2}\n").utf8).write(to: c)
        let partial = try Storelens.merge(files: [c])
        #expect(partial.malformedCount == 3 && partial.malformed.map(\.line) == [2, 3, 4])
        #expect(partial.exitCode == 2)
        #expect(throws: BatchMergeError.self) { try Storelens.merge(files: [folder.path("missing.jsonl")]) }
        #expect(throws: BatchMergeError.self) { try Storelens.merge(files: [folder.url]) }
    }

    @Test("a report batch's file names: the input's name made safe (no slash, control character, leading dot or dash; bounded), and a hash of its path")
    func reportNames() throws {
        // The documented shell recipe: printf %s tickets/4711.tar.gz | sha256sum | cut -c1-10
        #expect(BatchReportName.fileName(for: "tickets/4711.tar.gz") == "4711.tar.gz-6eab1f15aa.html")
        // Same name in two folders: two files. Same path: the same file every time.
        let a = BatchReportName.fileName(for: "site-a/ticket.zip"), b = BatchReportName.fileName(for: "site-b/ticket.zip")
        #expect(a != b && a.hasPrefix("ticket.zip-") && b.hasPrefix("ticket.zip-"))
        #expect(a == BatchReportName.fileName(for: "site-a/ticket.zip"))
        // A folder input, with or without its trailing slash (two spellings, two inputs).
        #expect(BatchReportName.fileName(for: "tickets/a-container/").hasPrefix("a-container-"))
        let hostile = ["t/..hidden", "t/-rf", "t/a\nb\u{7}c\u{1B}[2J.store", "t/Fjällräven 🦊.zip", "t/.", "t/..", "/", "", "t/<script>.tar",
                       "t/" + String(repeating: "x", count: 5000)]
        var seen = Set<String>()
        for input in hostile {
            let name = BatchReportName.fileName(for: input)
            seen.insert(name)
            #expect(name.hasSuffix(".html") && name.utf8.count <= BatchReportName.baseLimit + 1 + BatchReportName.hashDigits + 5, "\(name)")
            #expect(name.unicodeScalars.allSatisfy { ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0) || "._-".unicodeScalars.contains($0) },
                    "only safe characters: \(name.debugDescription)")
            #expect(!name.hasPrefix(".") && !name.hasPrefix("-"), "\(name)")
        }
        #expect(seen.count == hostile.count, "every input its own file")
        #expect(BatchReportName.fileName(for: "t/..hidden").hasPrefix("hidden-"))
        #expect(BatchReportName.fileName(for: "t/-rf").hasPrefix("rf-"))
        #expect(BatchReportName.fileName(for: "t/a\nb\u{7}c\u{1B}[2J.store").hasPrefix("a_b_c__2J.store-"))
        #expect(BatchReportName.fileName(for: "t/Fjällräven 🦊.zip").hasPrefix("Fj_llr_ven__.zip-"))
        #expect(BatchReportName.fileName(for: "t/..").hasPrefix("input-"))
        #expect(BatchReportName.fileName(for: "/").hasPrefix("input-"))
    }

    @Test("a batch line's startedAt is an RFC 3339 timestamp, never one Foundation's ISO 8601 parser refuses")
    func startedAt() {
        let candidates = ["2026-11-29T10:00:00.123Z", "2026-11-29T10:00:00Z", "2026-11-29T10:00:00+01:00", "2026-11-29T23:59:59.5-05:30",
                          "2026-13-29T10:00:00Z", "2026-11-32T10:00:00Z", "2026-11-29T24:00:00Z", "2026-11-29T10:60:00Z",
                          "2026-11-29 10:00:00Z", "2026-11-29T10:00:00", "2026-11-29T10:00:00.Z", "2026-11-29T10:00:00Zjunk",
                          "2026-11-29", "yesterday", "", "2026-11-29T10:00:00+1:00", "２０２６-11-29T10:00:00Z"]
        // The oracle: Foundation's parser, with and without fractional seconds.
        let formatter = ISO8601DateFormatter()
        func parses(_ text: String) -> Bool {
            formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            if formatter.date(from: text) != nil { return true }
            formatter.formatOptions = [.withInternetDateTime]
            return formatter.date(from: text) != nil
        }
        for text in candidates {
            let line = "{\"schemaVersion\":1,\"command\":\"audit\",\"input\":\"a\",\"status\":\"ok\",\"exitCode\":0,\"startedAt\":\"\(text)\"}"
            let accepted: Bool
            if case .success = BatchLine.read(line) { accepted = true } else { accepted = false }
            // Never more than Foundation takes; Foundation also takes trailing text, hour 24, a
            // one-digit offset and full-width digits, which RFC 3339 (and merge) do not.
            #expect(!accepted || parses(text), "\(text.debugDescription): read takes what Foundation refuses")
            let strictlyValid = candidates.prefix(4).contains(text)
            #expect(accepted == strictlyValid, "\(text.debugDescription): read \(accepted)")
        }
    }
}
