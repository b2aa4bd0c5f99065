import Foundation
import SQLiteAccess
import StoreTestSupport
import Testing

/// Every command on every item of the hostile corpus (HostileCorpus.swift), in every output
/// format and mode it has (`CommandPlan`), and on each store of an input that holds several
/// (`--store`). For each run:
/// - exit 0 or 1 (a normal result: the input is merely odd) or 2 with a one-line error that names
///   the input; never 3, never a crash (a signal, an exit code ≥ 128, "Fatal error");
/// - no hang: each run is killed after 60 seconds and that fails the test;
/// - on an input with several stores, a command that reads one says "choose one with --store";
///   given `--store`, none does;
/// - nothing written anywhere but the outputs it was told to write: the whole test root (input,
///   manifest, outputs folder, TMPDIR) is snapshotted before and after every run — every entry's
///   type, mode, size, SHA-256, link target, mtime and ctime, folders included — and must be
///   unchanged except for the run's own named outputs in `outputs/`; TMPDIR must be empty; a
///   refused run leaves no output; the paths the corpus aims at outside the root stay absent.
@Suite("hostile corpus: every command on every item")
struct HostileCorpusTests {
    /// Of an input with several stores, at most this many are each run with `--store`.
    static let storesPerItem = 5

    @Test("no crash, no hang, no stray file anywhere in the test root, input unchanged; exit 2 is one line naming the input; every format; each store of a multi-store input", arguments: HostileCorpus.items)
    func everyCommand(_ item: HostileCorpus.Item) throws {
        let root = try TemporaryFolder("hostile")
        let folder = root.path("input"), work = root.path("work"), outputs = root.path("outputs"), tmp = root.path("tmp")
        for url in [folder, work, outputs, tmp] { try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true) }
        let input = try item.make(folder, work).path
        try? FileManager.default.removeItem(at: work)
        let manifest = root.path("storelens.json")
        try Data((item.manifest ?? BoundedRun.todoManifest).utf8).write(to: manifest)
        for target in HostileCorpus.escapeTargets { try? FileManager.default.removeItem(atPath: target) }

        // The repair check's SQLite copies of the input live outside the root, which must stay still.
        let facts = try TemporaryFolder("hostile-facts")
        var tree = try TreeSnapshot(root.url)
        let initial = tree
        var stores: [String] = []
        var runs = 0, selectedRuns = 0

        func execute(_ command: CommandPlan.Command, _ run: CommandPlan.Run, select: String?) throws -> BoundedRun.Outcome {
            let result = try BoundedRun.run(run.arguments, environment: ["TMPDIR": tmp.path], timeout: HostileRuns.timeout)
            runs += 1
            let what = "\(item.name) — storelens \(run.label)\(select.map { " --store \($0)" } ?? "") (exit \(result.status), \(String(format: "%.1f", result.seconds)) s)\nstderr: \(result.stderr.prefix(2000))"
            #expect(!result.timedOut, "hang: killed after \(Int(HostileRuns.timeout)) s: \(what)")
            #expect(!result.crashed, "crash: \(what)")
            #expect([0, 1, 2].contains(result.status), "exit \(result.status) is neither a result nor an input error: \(what)")
            // scan and report list every store they find, a damaged one with its problem (exit 0),
            // so only the commands that read stores must refuse an unreadable input. merge reads
            // results files: an empty file is an empty one (a shard with no inputs), not a refusal.
            if item.expectation == .rejected && !["scan", "report", "merge"].contains(command.name) {
                #expect(result.status == 2, "an unreadable input must be refused: \(what)")
            }
            if result.status == 2 {
                let lines = result.stderr.split(separator: "\n", omittingEmptySubsequences: true)
                #expect(lines.count == 1, "one line: \(what)")
                #expect(result.stderr.hasPrefix("Error: "), "\(what)")
                #expect(HostileRuns.names(result.stderr, input), "the error must name the input: \(what)")
                #expect(!result.stderr.contains(tmp.path), "the error names a scratch copy, gone by the time it is read, not the input: \(what)")
            }
            let asksForStore = result.stderr.contains("choose one with --store")
            if let select {
                #expect(!result.stderr.contains("--store \(select) match"), "the --store value scan's path gives must pick that one store: \(what)")
                selectedRuns += 1
            }
            if select != nil || stores.count < 2 {
                #expect(!asksForStore, "only an input with several stores, and no --store, asks for one: \(what)")
            } else if command.singleStore {
                #expect(result.status == 2 && asksForStore, "\(stores.count) stores and no --store: \(what)")
            }

            let leftInTMPDIR = try FileManager.default.contentsOfDirectory(atPath: tmp.path)
            #expect(leftInTMPDIR.isEmpty, "left in TMPDIR: \(leftInTMPDIR): \(what)")
            let after = try TreeSnapshot(root.url, reusing: tree)
            let changed = after.differences(from: tree, ignoringInside: ["outputs", "tmp"])
            #expect(changed.isEmpty, "the test root changed outside outputs/: \(changed.prefix(10).joined(separator: "; ")): \(what)")
            let produced = after.contents(of: "outputs")
            #expect(Set(produced).isSubset(of: run.outputs), "in outputs/, more than \(run.outputs): \(produced.prefix(10)): \(what)")
            // (report writes its page even when no store could be read, and exits 2: the page says why.)
            if result.status == 2 && command.name != "report" { #expect(produced.isEmpty, "a refused run leaves no output: \(produced): \(what)") }
            for target in HostileCorpus.escapeTargets {
                #expect(!FileManager.default.fileExists(atPath: target), "\(target) was written: \(what)")
            }
            if command.name == "repair" { try Self.checkRepairOutput(outputs.appendingPathComponent("repaired.store"), item: item, input: input, work: facts.path("facts")) }
            // Outputs are the commands' own; clear them for the next run.
            for name in try FileManager.default.contentsOfDirectory(atPath: outputs.path) {
                try FileManager.default.removeItem(at: outputs.appendingPathComponent(name))
            }
            tree = produced.isEmpty ? after : try TreeSnapshot(root.url, reusing: after)
            return result
        }

        /// The default run, then every other format and mode when it gave a result; after a
        /// refusal (decided before any format is chosen), the JSON one alone.
        func everyFormat(_ command: CommandPlan.Command, select: String?) throws {
            let main = try execute(command, command.main, select: select)
            for run in main.status == 2 ? Array(command.more.prefix(1)) : command.more {
                let result = try execute(command, run, select: select)
                if run.label == "scan --format json" { stores = Self.storePaths(result.stdout) }
            }
        }

        for command in CommandPlan.wholeInput(input: input, manifest: manifest, outputs: outputs) + CommandPlan.perStore(input: input, store: nil, outputs: outputs) {
            try everyFormat(command, select: nil)
        }
        if stores.count > 1 {
            for store in stores.prefix(Self.storesPerItem) {
                let select = Self.selector(for: store, among: stores, input: input)
                for command in CommandPlan.perStore(input: input, store: select, outputs: outputs) {
                    try everyFormat(command, select: select)
                }
            }
        }
        #expect(runs >= CommandPlan.commands.count, "\(item.name): every command ran")
        if stores.count > 1 {
            #expect(selectedRuns >= min(stores.count, Self.storesPerItem) * 7, "\(item.name): every per-store command ran on each of its \(stores.count) stores")
        }
        // Hashed afresh: every file's bytes against the first snapshot.
        let changed = try TreeSnapshot(root.url).differences(from: initial, ignoringInside: ["outputs", "tmp"])
        #expect(changed.isEmpty, "\(item.name): the test root differs from before the first run: \(changed.prefix(10))")
    }

    /// The stores `scan --format json` lists (their paths), in order.
    static func storePaths(_ json: String) -> [String] {
        guard let object = try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any],
              let stores = object["stores"] as? [[String: Any]] else { return [] }
        return stores.compactMap { $0["path"] as? String }
    }

    /// What a user would give `--store` for `store`: its path inside the archive or folder, or its
    /// whole path when that part also ends another store's path.
    static func selector(for store: String, among stores: [String], input: String) -> String {
        var inner = store
        if let bang = store.lastIndex(of: "!") {
            inner = String(store[store.index(after: bang)...])
        } else if store.hasPrefix(input + "/") {
            inner = String(store.dropFirst(input.count + 1))
        }
        return stores.filter { $0.hasSuffix(inner) }.count == 1 ? inner : store
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
                let run = try BoundedRun.run(arguments, environment: ["TMPDIR": tmp.path], timeout: HostileRuns.timeout)
                let what = "\(item.name) — \(arguments.joined(separator: " ")) (exit \(run.status))\nstderr: \(run.stderr.prefix(1000))"
                #expect(run.status == 2 && run.stderr.contains("never writes"), "\(what)")
                #expect(try FileManager.default.contentsOfDirectory(atPath: tmp.path).isEmpty, "refused before any work: \(what)")
            }
        }
        #expect(try FolderSnapshot(folder) == before, "\(item.name): the input folder changed")
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

    @Test("report is not optional: the corpus runs exactly the commands `storelens --help` lists, report among them")
    func everyCommandIsRun() throws {
        let help = try #require(BoundedRun.helpCommands, "storelens --help could not be run or read: the corpus cannot know it runs every command")
        #expect(help.contains("report"))
        #expect(help == CommandPlan.commands.union(CommandPlan.coveredElsewhere.keys), "help lists \(help.sorted()), the corpus runs \(CommandPlan.commands.sorted()), others cover \(CommandPlan.coveredElsewhere.keys.sorted())")
        #expect(CommandPlan.commands.isDisjoint(with: CommandPlan.coveredElsewhere.keys), "a command is run here or elsewhere, not both")
        let outputs = URL(fileURLWithPath: "/nonexistent")
        let planned = CommandPlan.wholeInput(input: "x", manifest: outputs, outputs: outputs) + CommandPlan.perStore(input: "x", store: nil, outputs: outputs)
        #expect(Set(planned.map(\.name)) == CommandPlan.commands, "the plan runs every command")
    }

    @Test("the corpus holds an item of every kind of hostile input docs/safety.md promises to survive")
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
