import Foundation
import SQLiteAccess
import StoreTestSupport
import Testing

/// Every command on every item of the hostile corpus (HostileCorpus.swift). For each run:
/// - exit 0 or 1 (a normal result: the input is merely odd) or 2 with a one-line error that names
///   the input; never 3, never a crash (a signal, an exit code ≥ 128, "Fatal error");
/// - no hang: each run is killed after 30 seconds and that fails the test;
/// - nothing written outside the scratch folder: TMPDIR is a folder of its own that must be empty
///   afterwards, nothing new appears beside the input, and the paths the corpus aims at stay absent;
/// - the input is unchanged (every file's size, SHA-256 and mtime).
@Suite("hostile corpus: every command on every item")
struct HostileCorpusTests {
    static let timeout: TimeInterval = 30

    @Test("no crash, no hang, no stray file, input unchanged; exit 2 is one line naming the input", arguments: HostileCorpus.items)
    func everyCommand(_ item: HostileCorpus.Item) throws {
        let root = try TemporaryFolder("hostile")
        let folder = root.path("input"), work = root.path("work"), outputs = root.path("outputs"), tmp = root.path("tmp")
        for url in [folder, work, outputs, tmp] { try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true) }
        let input = try item.make(folder, work).path
        try? FileManager.default.removeItem(at: work)
        let manifest = root.path("storelens.json")
        try Data((item.manifest ?? BoundedRun.todoManifest).utf8).write(to: manifest)
        for target in HostileCorpus.escapeTargets { try? FileManager.default.removeItem(atPath: target) }

        let before = try FolderSnapshot(folder)
        for (command, arguments) in BoundedRun.everyCommand(input: input, manifest: manifest, outputs: outputs) {
            let run = try BoundedRun.run(arguments, environment: ["TMPDIR": tmp.path], timeout: Self.timeout)
            let what = "\(item.name) — storelens \(command) (exit \(run.status), \(String(format: "%.1f", run.seconds)) s)\nstderr: \(run.stderr.prefix(2000))"
            #expect(!run.timedOut, "hang: killed after \(Int(Self.timeout)) s: \(what)")
            #expect(!run.crashed, "crash: \(what)")
            #expect([0, 1, 2].contains(run.status), "exit \(run.status) is neither a result nor an input error: \(what)")
            // scan and report list every store they find, a damaged one with its problem (exit 0),
            // so only the commands that read one store must refuse an unreadable input.
            if item.expectation == .rejected && command != "scan" && command != "report" {
                #expect(run.status == 2, "an unreadable input must be refused: \(what)")
            }
            if run.status == 2 {
                let lines = run.stderr.split(separator: "\n", omittingEmptySubsequences: true)
                #expect(lines.count == 1, "one line: \(what)")
                #expect(run.stderr.hasPrefix("Error: "), "\(what)")
                #expect(Self.names(run.stderr, input), "the error must name the input: \(what)")
            }
            let leftInTMPDIR = try FileManager.default.contentsOfDirectory(atPath: tmp.path)
            #expect(leftInTMPDIR.isEmpty, "left in TMPDIR: \(leftInTMPDIR): \(what)")
            #expect(try FolderSnapshot(folder) == before, "the input folder changed: \(what)")
            for target in HostileCorpus.escapeTargets {
                #expect(!FileManager.default.fileExists(atPath: target), "\(target) was written: \(what)")
            }
            if command == "repair" { try Self.checkRepairOutput(outputs.appendingPathComponent("repaired.store"), item: item, input: input, work: root.path("facts")) }
            // Outputs are the commands' own; clear them for the next run.
            for name in try FileManager.default.contentsOfDirectory(atPath: outputs.path) {
                try FileManager.default.removeItem(at: outputs.appendingPathComponent(name))
            }
        }
    }

    @Test("every output option aimed at the item's own files, directly or through a link, is refused and writes nothing", arguments: HostileCorpus.items)
    func outputsOntoEvidence(_ item: HostileCorpus.Item) throws {
        let root = try TemporaryFolder("hostile-out")
        let folder = root.path("input"), work = root.path("work"), tmp = root.path("tmp"), links = root.path("links")
        for url in [folder, work, tmp, links] { try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true) }
        let input = try item.make(folder, work).path
        try? FileManager.default.removeItem(at: work)
        let manifest = root.path("storelens.json")
        try Data((item.manifest ?? BoundedRun.todoManifest).utf8).write(to: manifest)
        // The input's own files (an input folder: a new file inside it), and a symlink to each.
        var targets: [String] = []
        var isFolder: ObjCBool = false
        if FileManager.default.fileExists(atPath: input, isDirectory: &isFolder), isFolder.boolValue {
            targets.append(input + "/storelens-output.json")
        } else {
            targets += [input, input + "-wal", input + "-shm", input + "-journal"]
        }
        // A link to the last, whatever it is (a -journal that does not exist yet: a dangling link).
        let link = links.appendingPathComponent("link").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: targets[targets.count - 1])
        targets.append(link)
        let before = try FolderSnapshot(folder)
        for target in targets {
            // Every option against every target would be 6 × 5 runs per item; each target meets three
            // options, and across the targets every option is used.
            let all = [["inspect", input, "--jsonl", target], ["scan", input, "--evidence", target],
                       ["wal", input, "--out", target], ["audit", input, "-m", manifest.path, "--jsonl", target],
                       ["repair", input, "--out", target], ["report", input, "--out", target, "--force"]]
            let index = targets.firstIndex(of: target) ?? 0
            for arguments in (0..<3).map({ all[(index * 3 + $0) % all.count] }) {
                let run = try BoundedRun.run(arguments, environment: ["TMPDIR": tmp.path], timeout: Self.timeout)
                let what = "\(item.name) — \(arguments.joined(separator: " ")) (exit \(run.status))\nstderr: \(run.stderr.prefix(1000))"
                #expect(run.status == 2 && run.stderr.contains("never writes"), "\(what)")
                #expect(try FileManager.default.contentsOfDirectory(atPath: tmp.path).isEmpty, "refused before any work: \(what)")
            }
        }
        #expect(try FolderSnapshot(folder) == before, "\(item.name): the input folder changed")
    }

    /// Whether an error message names the input (its path, or its file name).
    static func names(_ message: String, _ input: String) -> Bool {
        let name = URL(fileURLWithPath: input).lastPathComponent
        return message.contains(input) || message.contains(name)
    }

    /// A hostile trigger must not get to run while repair writes its copy; a repaired store keeps
    /// every row and every reference to a row that exists (counted by SQLite on a copy of the input).
    static func checkRepairOutput(_ url: URL, item: HostileCorpus.Item, input: String, work: URL) throws {
        guard FileManager.default.fileExists(atPath: url.path) else { return }
        if item.name.hasPrefix("keys:") {
            try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
            let copy = work.appendingPathComponent("input.store")
            for suffix in ["", "-wal"] where FileManager.default.fileExists(atPath: input + suffix) {
                try FileManager.default.copyItem(atPath: input + suffix, toPath: copy.path + suffix)
            }
            let before = try Connection.open(path: copy.path, mode: .readOnly), after = try Connection.open(path: url.path, mode: .readOnly)
            for sql in ["SELECT count(*) FROM ZTODOITEM", "SELECT count(*) FROM ZTODOLIST",
                        "SELECT count(*) FROM ZTODOITEM i JOIN ZTODOLIST l ON l.Z_PK = i.ZLIST"] {
                #expect(try before.scalar(sql).int == after.scalar(sql).int, "\(item.name): \(sql)")
            }
            try? FileManager.default.removeItem(at: work)
        }
        guard item.name.contains("trigger") else { return }
        let db = try Connection.open(path: url.path, mode: .readOnly)
        let rewritten = try db.scalar("SELECT count(*) FROM ZTODOITEM WHERE ZTITLE = 'rewritten by a trigger'").int ?? -1
        #expect(rewritten == 0, "\(item.name): a trigger in the input changed rows while repair wrote its copy")
    }

    @Test("the corpus covers what issue 9 lists")
    func coverage() {
        let names = HostileCorpus.items.map(\.name)
        for prefix in ["header:", "truncated:", "wal: d1", "wal: d2", "wal: d3", "wal: d4", "wal: d5", "wal: d6", "wal: d7",
                       "wal: e1", "wal: e2", "wal: e3", "wal: e4", "shm:", "metadata: cyclic", "metadata: 10,000 nested",
                       "metadata: huge", "model cache: cyclic", "model cache: DEFLATE bomb", "names: quotes", "names: a NUL",
                       "names: 10,000", "names: a view that calls load_extension", "names: triggers", "archive: traversal",
                       "archive: symlinks", "archive: hardlinks", "archive: a bzip2 bomb", "archive: a zip bomb",
                       "archive: duplicate names", "archive: names that are not UTF-8", "backup: rows with NULL",
                       "keys: Z_MAX and a Z_PK at 2^63-1", "keys: to-one targets with a wrong Z_ENT", "keys: a WITHOUT ROWID",
                       "shm: a 64 MiB sparse", "archive: a tar with a 7 GiB sparse", "manifest: a store pattern of **/", "values: formulas"] {
            #expect(names.contains { $0.hasPrefix(prefix) }, "no item for \(prefix)")
        }
        #expect(Set(names).count == names.count, "item names are unique")
    }

    /// STORELENS_HOSTILE_CORPUS_OUT=<folder> swift test --filter HostileCorpusTests writes the whole
    /// corpus there (one folder per item) for running storelens on it by hand.
    @Test("writes the corpus to STORELENS_HOSTILE_CORPUS_OUT when set", .enabled(if: !(ProcessInfo.processInfo.environment["STORELENS_HOSTILE_CORPUS_OUT"] ?? "").isEmpty, "writes the corpus only when STORELENS_HOSTILE_CORPUS_OUT names a folder"))
    func writeCorpusWhenAsked() throws {
        let out = try #require(ProcessInfo.processInfo.environment["STORELENS_HOSTILE_CORPUS_OUT"])
        let work = try TemporaryFolder("hostile-work")
        for (i, item) in HostileCorpus.items.enumerated() {
            let slug = String(format: "%03d-", i) + item.name.lowercased().map { $0.isLetter || $0.isNumber ? $0 : "-" }.prefix(60)
            let folder = URL(fileURLWithPath: out).appendingPathComponent(String(slug))
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let scratch = work.path(String(i))
            try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
            _ = try item.make(folder, scratch)
        }
    }
}
