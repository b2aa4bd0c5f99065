import Acquisition
import Foundation
import SQLiteAccess
import StoreBuilder
import StoreFormats
import StoreTestSupport
import Testing

/// The evidence guarantee: every command, in every output format, on every kind of
/// input — a loose store, a container folder, an `.xcappdata` bundle, a tar.gz, a zip and a
/// Finder/iTunes backup — over the genuine Apple stores in ../shared/fixtures/real/ and over
/// builder-made containers, leaves every input file's SHA-256, size and mtime as it was, adds
/// nothing beside them (not even for a moment: directory mtimes are compared too), and leaves
/// nothing in TMPDIR, and changes nothing anywhere in the test's root folder but the run's own
/// named output in its outputs folder (`TreeSnapshot`: type, mode, size, SHA-256, link target,
/// mtime and ctime of every entry).
///
/// Each input is read with its folder made read-only (directories 555, files 444), then writable
/// again. The machine runs the tests as root, which permissions do not stop, so the read-only
/// pass mainly proves that no command needs write access to its input; the hashes prove the rest.
/// The real stores are also read in place; ../shared is never written (nor chmod-ed).
/// `repair --in-place --backup DIR` is the one mode that changes its input on request; it is
/// not run here.
@Suite("evidence guarantee: inputs are left exactly as they were")
struct EvidenceGuaranteeTests {
    /// One store inside an input, with what the per-store commands need.
    struct Target: Sendable {
        /// `--store` value when the input holds several stores.
        let select: String?
        let entity: String
        let model: String?
    }

    /// One input to run every command on.
    struct Input: Sendable {
        let path: String
        let targets: [Target]
        let manifest: URL
    }

    /// A kind of input, prepared in a folder of its own (`evidence`: the tree to guard).
    struct Kind: Sendable, CustomStringConvertible {
        let name: String
        let needsRealFixtures: Bool
        /// In place: the folder is not ours (../shared), so it is not made read-only.
        let inPlace: Bool
        let prepare: @Sendable (_ evidence: URL, _ work: URL, _ real: URL?) throws -> (folder: URL, inputs: [Input])
        var description: String { name }
    }

    // MARK: The real stores

    static let realManifest = """
    {"manifestVersion": 1,
     "stacks": [
       {"name": "resources", "kind": "swiftdata", "store": "**/default.store", "writers": {"bundleIDs": ["com.sdsoftware.ResourcesManager"]}},
       {"name": "feedback", "kind": "coredata", "store": "**/Model.sqlite", "writers": {"processNames": ["TavantTrade"]}}
     ],
     "entities": [
       {"current": "Item", "writer": "resources", "identity": ["name"]},
       {"current": "Component", "writer": "resources"},
       {"current": "CraftingRecipe", "writer": "resources"},
       {"current": "FeedbackCategory", "writer": "feedback", "identity": ["name"]},
       {"current": "FeedbackSubCategory", "writer": "feedback"}
     ]}
    """

    /// The same manifest with only the stack (and entities) of one store, for a loose store input.
    static let resourcesManifest = """
    {"manifestVersion": 1,
     "stacks": [{"name": "resources", "kind": "swiftdata", "store": "**/default.store", "writers": {"bundleIDs": ["com.sdsoftware.ResourcesManager"]}}],
     "entities": [{"current": "Item", "writer": "resources", "identity": ["name"]}, {"current": "Component", "writer": "resources"},
                  {"current": "CraftingRecipe", "writer": "resources"}]}
    """
    static let feedbackManifest = """
    {"manifestVersion": 1,
     "stacks": [{"name": "feedback", "kind": "coredata", "store": "**/Model.sqlite", "writers": {"processNames": ["TavantTrade"]}}],
     "entities": [{"current": "FeedbackCategory", "writer": "feedback", "identity": ["name"]}, {"current": "FeedbackSubCategory", "writer": "feedback"}]}
    """

    static func looseInputs(in folder: URL, real: URL, work: URL) throws -> [Input] {
        let targets = realTargets(real, several: false)
        return [Input(path: folder.appendingPathComponent("swiftdata-resources/default.store").path, targets: [targets[0]],
                      manifest: try writeManifest(resourcesManifest, in: work)),
                Input(path: folder.appendingPathComponent("coredata-2014/Model.sqlite").path, targets: [targets[1]],
                      manifest: try writeManifest(feedbackManifest, in: work))]
    }

    static func realTargets(_ real: URL, several: Bool) -> [Target] {
        [Target(select: several ? "default.store" : nil, entity: "Item", model: nil),
         Target(select: several ? "Model.sqlite" : nil, entity: "FeedbackCategory",
                model: real.appendingPathComponent("coredata-2014/Model.xcdatamodeld").path)]
    }

    /// The real stores laid out as an app container (with their sidecars) under `root`.
    static func realContainer(at root: URL, from real: URL) throws {
        let support = root.appendingPathComponent("Library/Application Support")
        try FileManager.default.createDirectory(at: support, withIntermediateDirectories: true)
        for name in ["default.store", "default.store-wal", "default.store-shm"] {
            try FileManager.default.copyItem(at: real.appendingPathComponent("swiftdata-resources/\(name)"), to: support.appendingPathComponent(name))
        }
        try FileManager.default.copyItem(at: real.appendingPathComponent("coredata-2014/Model.sqlite"), to: support.appendingPathComponent("Model.sqlite"))
        try FileManager.default.createDirectory(at: root.appendingPathComponent("Documents"), withIntermediateDirectories: true)
        try Data("notes".utf8).write(to: root.appendingPathComponent("Documents/readme.txt"))
    }

    static func writeManifest(_ text: String, in work: URL) throws -> URL {
        let url = work.appendingPathComponent("sltest-\(UUID().uuidString.prefix(8)).json")
        try Data(text.utf8).write(to: url)
        return url
    }

    static let kinds: [Kind] = [
        Kind(name: "real stores, loose, in place", needsRealFixtures: true, inPlace: true) { _, work, real in
            (real!, try looseInputs(in: real!, real: real!, work: work))
        },
        Kind(name: "real stores, loose copies", needsRealFixtures: true, inPlace: false) { evidence, work, real in
            let real = real!
            for name in ["swiftdata-resources", "coredata-2014"] {
                try FileManager.default.copyItem(at: real.appendingPathComponent(name), to: evidence.appendingPathComponent(name))
            }
            return (evidence, try looseInputs(in: evidence, real: real, work: work))
        },
        Kind(name: "real stores in a container folder", needsRealFixtures: true, inPlace: false) { evidence, work, real in
            let root = evidence.appendingPathComponent("AppData")
            try realContainer(at: root, from: real!)
            return (evidence, [Input(path: root.path, targets: realTargets(real!, several: true), manifest: try writeManifest(realManifest, in: work))])
        },
        Kind(name: "real stores in an .xcappdata bundle", needsRealFixtures: true, inPlace: false) { evidence, work, real in
            let bundle = evidence.appendingPathComponent("Resources.xcappdata")
            try realContainer(at: bundle.appendingPathComponent("AppData"), from: real!)
            try BinaryPlistWriter.encode(.dictionary(["DeviceIdentifier": .string("00008030-001A2B3C4D5E802E"),
                                                     "BundleIdentifier": .string("com.sdsoftware.ResourcesManager")]))
                .write(to: bundle.appendingPathComponent("AppDataInfo.plist"))
            return (evidence, [Input(path: bundle.path, targets: realTargets(real!, several: true), manifest: try writeManifest(realManifest, in: work))])
        },
        Kind(name: "real stores in a tar.gz", needsRealFixtures: true, inPlace: false) { evidence, work, real in
            let tree = work.appendingPathComponent("tree")
            try realContainer(at: tree, from: real!)
            let archive = evidence.appendingPathComponent("container.tar.gz")
            try ArchiveMaker.write(try ArchiveMaker.entries(of: tree, prefix: "AppData"), to: archive, format: .paxTar, filter: .gzip)
            return (evidence, [Input(path: archive.path, targets: realTargets(real!, several: true), manifest: try writeManifest(realManifest, in: work))])
        },
        Kind(name: "real stores in a zip", needsRealFixtures: true, inPlace: false) { evidence, work, real in
            let tree = work.appendingPathComponent("tree")
            try realContainer(at: tree, from: real!)
            let archive = evidence.appendingPathComponent("container.zip")
            try ArchiveMaker.write(try ArchiveMaker.entries(of: tree), to: archive, format: .zip)
            return (evidence, [Input(path: archive.path, targets: realTargets(real!, several: true), manifest: try writeManifest(realManifest, in: work))])
        },
        Kind(name: "real stores in a backup", needsRealFixtures: true, inPlace: false) { evidence, work, real in
            let tree = work.appendingPathComponent("tree")
            try realContainer(at: tree, from: real!)
            let backup = evidence.appendingPathComponent("00008030-001A2B3C4D5E802E")
            try PlainBackup.write(of: tree, at: backup, domain: "AppDomain-com.sdsoftware.ResourcesManager")
            return (evidence, [Input(path: backup.path, targets: realTargets(real!, several: true), manifest: try writeManifest(realManifest, in: work))])
        },
        Kind(name: "builder-made demo container folder", needsRealFixtures: false, inPlace: false) { evidence, work, _ in
            let root = evidence.appendingPathComponent("demo-container")
            try DemoContainer.write(into: root)
            return (evidence, [Input(path: root.path, targets: demoTargets, manifest: try writeManifest(DemoContainer.manifest, in: work))])
        },
        Kind(name: "builder-made demo container in a zip", needsRealFixtures: false, inPlace: false) { evidence, work, _ in
            let tree = work.appendingPathComponent("demo")
            try DemoContainer.write(into: tree)
            let archive = evidence.appendingPathComponent("demo.zip")
            try ArchiveMaker.write(try ArchiveMaker.entries(of: tree), to: archive, format: .zip)
            return (evidence, [Input(path: archive.path, targets: demoTargets, manifest: try writeManifest(DemoContainer.manifest, in: work))])
        },
        Kind(name: "builder-made demo container in a backup", needsRealFixtures: false, inPlace: false) { evidence, work, _ in
            let tree = work.appendingPathComponent("demo")
            try DemoContainer.write(into: tree)
            let backup = evidence.appendingPathComponent("00008030-0000000000DE7000")
            try PlainBackup.write(of: tree, at: backup, domain: "AppDomain-com.example.todo")
            return (evidence, [Input(path: backup.path, targets: demoTargets, manifest: try writeManifest(DemoContainer.manifest, in: work))])
        },
    ]

    static let demoTargets = [Target(select: "default.store", entity: "TodoItem", model: nil),
                              Target(select: "Model.sqlite", entity: "CDTodo", model: nil)]

    // MARK: Every command, every format

    /// Each run: the arguments, and whether it may exit 2 (an input this command does not read).
    static func runs(for input: Input, outputs: URL, migrationTarget: URL) -> [[String]] {
        let out = { (name: String) in outputs.appendingPathComponent(name).path }
        var runs: [[String]] = []
        // Commands that read the whole input.
        for format in ["text", "json", "markdown"] { runs.append(["scan", input.path, "--format", format]) }
        runs.append(["scan", input.path, "--evidence", out("evidence.json")])
        for format in ["text", "json", "markdown"] { runs.append(["audit", input.path, "--manifest", input.manifest.path, "--format", format]) }
        // report always runs: the hostile corpus suite's everyCommandIsRun test fails if the binary lacks it.
        runs.append(["report", input.path, "--out", out("report.html")])
        runs.append(["report", input.path, "--manifest", input.manifest.path, "--out", "-"])
        // Commands that read one store.
        for target in input.targets {
            let store = target.select.map { ["--store", $0] } ?? []
            let model = target.model.map { ["--model", $0] } ?? []
            for format in ["text", "json", "markdown"] { runs.append(["inspect", input.path, "--format", format] + store) }
            for format in ["text", "json"] { runs.append(["schema", input.path, "--format", format] + store + model) }
            for format in ["table", "json", "jsonl", "array", "csv", "tsv"] { runs.append(["rows", input.path, target.entity, "--format", format] + store + model) }
            for format in ["text", "json", "jsonl", "csv"] { runs.append(["history", input.path, "--format", format] + store) }
            runs.append(["history", input.path, "--summary"] + store)
            for format in ["text", "json"] { runs.append(["wal", input.path, "--format", format] + store) }
            runs.append(["wal", input.path, "--diff"] + store)
            for format in ["json", "jsonl", "csv"] { runs.append(["wal", input.path, "--diff", "--format", format] + store) }
            for format in ["text", "json", "jsonl", "csv"] { runs.append(["wal", input.path, "--diff", "--each", "--format", format] + store) }
            for format in ["text", "json", "jsonl", "csv"] { runs.append(["recover", input.path, "--format", format] + store) }
            runs.append(["recover", input.path, "--state", "deleted,superseded", "--entity", target.entity] + store)
            runs.append(["recover", input.path, "--out", out("recovered.sqlite")] + store)
            runs.append(["wal", input.path, "--out", out("as-of.sqlite")] + store)
            runs.append(["export", input.path, "--out", out("export.sqlite")] + store + model)
            for format in ["csv", "jsonl"] { runs.append(["timeline", input.path, "--format", format, "--tz", "Europe/Berlin"] + store + model) }
            for format in ["text", "json", "markdown"] { runs.append(["check", input.path, "--format", format] + store + model) }
            for format in ["text", "json", "markdown"] { runs.append(["lint", input.path, "--format", format] + store + model) }
            for format in ["text", "json", "markdown"] {
                runs.append(["migration", input.path, "--to", migrationTarget.path, "--format", format] + store + model)
            }
            // A store as the target is read through the same evidence path as the old stores.
            if target.select == nil { runs.append(["migration", input.path, "--to", input.path] + model) }
            runs.append(["repair", input.path, "--plan"] + store + model)
            for format in ["text", "json"] { runs.append(["repair", input.path, "--out", out("repaired.store"), "--format", format] + store + model) }
        }
        return runs
    }

    /// Runs that may end in an input error on these inputs, with the reason.
    static func mayRefuse(_ arguments: [String]) -> Bool {
        // A store without a WAL has no commit to write as of; a store without history has none to show.
        (arguments.first == "wal" && arguments.contains("--out") && arguments.contains { $0.hasSuffix("Model.sqlite") })
            || (arguments.first == "history" && arguments.contains { $0.hasSuffix("Model.sqlite") })
            // A store without a cached model cannot be the target of a migration.
            || (arguments.first == "migration" && arguments.last?.hasSuffix("Model.sqlite") == true)
            || (arguments.first == "migration" && arguments.firstIndex(of: "--to").map { arguments[$0 + 1].hasSuffix("Model.sqlite") } == true)
    }

    /// Passes allowed over one evidence file: two (the hash, with the copy in the same read, and
    /// the after-hash). The one known exception (docs/safety.md): an archive whose own SHA-256 the
    /// command records (`report`, `scan --format json`, `scan --evidence`) is hashed, read through
    /// and hashed again, three passes; hashing it while it is read through is not done yet.
    static func allowedPasses(_ path: String, input: String, arguments: [String]) -> Int {
        let isArchive = ["zip", "gz", "tgz", "tar"].contains(URL(fileURLWithPath: input).pathExtension.lowercased())
        let hashesArchive = arguments.first == "report"
            || (arguments.first == "scan" && (arguments.contains("--evidence") || arguments.contains("json")))
        let same = URL(fileURLWithPath: path).standardizedFileURL.resolvingSymlinksInPath().path
            == URL(fileURLWithPath: input).standardizedFileURL.resolvingSymlinksInPath().path
        return isArchive && hashesArchive && same ? 3 : 2
    }

    /// The whole passes (hash, copy, archive read, decryption) storelens made over each file of
    /// `folder`, from the log `STORELENS_EVIDENCE_READS` names (one line per path per session).
    static func evidencePasses(_ log: URL, inside folder: URL) -> [String: Int] {
        let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        let root = folder.standardizedFileURL.resolvingSymlinksInPath().path + "/"
        var result: [String: Int] = [:]
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: "\t", maxSplits: 1)
            guard parts.count == 2, let n = Int(parts[0]) else { continue }
            let path = URL(fileURLWithPath: String(parts[1])).standardizedFileURL.resolvingSymlinksInPath().path
            if path.hasPrefix(root) { result[path, default: 0] += n }
        }
        return result
    }

    /// The modification time of every directory under (and including) `folder`: a file created and
    /// removed beside the input (a transient -shm, a temporary file) changes its folder's mtime.
    static func directoryTimes(_ folder: URL) throws -> [String: Date] {
        var result: [String: Date] = [:]
        let fm = FileManager.default
        result[folder.path] = try fm.attributesOfItem(atPath: folder.path)[.modificationDate] as? Date
        let walker = fm.enumerator(at: folder, includingPropertiesForKeys: nil)
        while let url = walker?.nextObject() as? URL {
            let attributes = try fm.attributesOfItem(atPath: url.path)
            if (attributes[.type] as? FileAttributeType) == .typeDirectory { result[url.path] = attributes[.modificationDate] as? Date }
        }
        return result
    }

    static func setWritable(_ writable: Bool, _ folder: URL) throws {
        let fm = FileManager.default
        var urls = [folder]
        let walker = fm.enumerator(at: folder, includingPropertiesForKeys: nil)
        while let url = walker?.nextObject() as? URL { urls.append(url) }
        // Files first, then folders deepest first, so a read-only folder never blocks its children.
        for url in urls.reversed() {
            let isDirectory = (try fm.attributesOfItem(atPath: url.path)[.type] as? FileAttributeType) == .typeDirectory
            let mode = isDirectory ? (writable ? 0o755 : 0o555) : (writable ? 0o644 : 0o444)
            try fm.setAttributes([.posixPermissions: mode], ofItemAtPath: url.path)
        }
    }

    @Test("every command, every format on builder-made inputs: input hashes, sizes and mtimes unchanged, nothing new beside them, read-only and writable",
          arguments: kinds.filter { !$0.needsRealFixtures })
    func inputsUnchanged(_ kind: Kind) throws {
        try Self.checkInputsUnchanged(kind)
    }

    @Test("every command, every format on the genuine stores: inputs unchanged, nothing new beside them",
          .enabled(if: ProjectPaths.hasRealFixtures, Comment(rawValue: ProjectPaths.realFixturesMissing)),
          arguments: kinds.filter(\.needsRealFixtures))
    func realInputsUnchanged(_ kind: Kind) throws {
        try Self.checkInputsUnchanged(kind)
    }

    static func checkInputsUnchanged(_ kind: Kind) throws {
        let real = ProjectPaths.realFixtures()
        if kind.needsRealFixtures { _ = try #require(real) }
        let root = try TemporaryFolder("evidence")
        let evidence = root.path("evidence"), work = root.path("work"), outputs = root.path("outputs"), tmp = root.path("tmp")
        for url in [evidence, work, outputs, tmp] { try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true) }
        let (folder, inputs) = try kind.prepare(evidence, work, real)
        let migrationTarget = try CompiledModelWriter.writeBundle(SampleModels.todo, to: work.appendingPathComponent("Target.momd"))
        let before = try FolderSnapshot(folder)
        let beforeDirectories = try Self.directoryTimes(folder)
        #expect(before.entries.values.contains { $0.size > 0 }, "the evidence folder holds files")

        // Each run's whole passes over input files (`EvidenceReads`): at most two per evidence file.
        let reads = try TemporaryFolder("evidence-reads")
        var passesSeen = 0
        var count = 0
        for writable in kind.inPlace ? [true] : [false, true] {
            if !kind.inPlace { try Self.setWritable(writable, folder) }
            defer { if !kind.inPlace { try? Self.setWritable(true, folder) } }
            // The whole test root too (evidence, manifests, outputs, TMPDIR): nothing may appear,
            // change or go anywhere in it but the run's own named output in outputs/.
            var tree = try TreeSnapshot(root.url)
            for input in inputs {
                for arguments in Self.runs(for: input, outputs: outputs, migrationTarget: migrationTarget) {
                    let log = reads.path("run-\(count).log")
                    // Read-only, the stores are read in place (the evidence VFS); writable, copied
                    // first (`STORELENS_COPY=1`, as `--copy`): both paths, every command. The
                    // genuine stores in ../shared are read in place.
                    let copying = writable && !kind.inPlace
                    let run = try BoundedRun.run(arguments, environment: ["TMPDIR": tmp.path, "STORELENS_EVIDENCE_READS": log.path,
                                                                          "STORELENS_COPY": copying ? "1" : "0"], timeout: 60)
                    count += 1
                    let what = "\(kind.name), \(writable ? "writable, copied" : "read-only, in place"): storelens \(arguments.joined(separator: " ")) → exit \(run.status)\nstderr: \(run.stderr.prefix(1500))"
                    #expect(!run.timedOut && !run.crashed, "\(what)")
                    let logged = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
                    #expect(!logged.contains(EvidenceReads.refusedWritesName), "SQLite asked the evidence VFS to write: \(what)")
                    let passes = Self.evidencePasses(log, inside: folder)
                    let allowed = { (path: String) in Self.allowedPasses(path, input: input.path, arguments: arguments) }
                    #expect(passes.allSatisfy { $0.value <= allowed($0.key) }, "read more often than allowed: \(passes.filter { $0.value > allowed($0.key) }.sorted { $0.key < $1.key }.prefix(5)): \(what)")
                    passesSeen += passes.values.reduce(0, +)
                    if Self.mayRefuse(arguments) {
                        #expect([0, 1, 2].contains(run.status), "\(what)")
                    } else {
                        #expect(run.status == 0 || run.status == 1, "\(what)")
                    }
                    #expect(try FolderSnapshot(folder) == before, "an input file changed, or a file appeared beside it: \(what)")
                    #expect(try Self.directoryTimes(folder) == beforeDirectories, "a folder of the input was written to: \(what)")
                    let left = try FileManager.default.contentsOfDirectory(atPath: tmp.path)
                    #expect(left.isEmpty, "left in TMPDIR: \(left): \(what)")
                    let after = try TreeSnapshot(root.url, reusing: tree)
                    let changed = after.differences(from: tree, ignoringInside: ["outputs", "tmp"])
                    #expect(changed.isEmpty, "the test root changed outside outputs/: \(changed.prefix(10).joined(separator: "; ")): \(what)")
                    let named = Set(arguments.filter { $0.hasPrefix(outputs.path + "/") }.map { URL(fileURLWithPath: $0).lastPathComponent })
                    let produced = after.contents(of: "outputs")
                    #expect(Set(produced).isSubset(of: named), "in outputs/, more than \(named.sorted()): \(produced.prefix(10)): \(what)")
                    for name in try FileManager.default.contentsOfDirectory(atPath: outputs.path) {
                        try FileManager.default.removeItem(at: outputs.appendingPathComponent(name))
                    }
                    tree = produced.isEmpty ? after : try TreeSnapshot(root.url, reusing: after)
                }
            }
        }
        #expect(count > 20)
        // The log was written: every run hashes its inputs at least once.
        #expect(passesSeen >= count, "\(passesSeen) passes logged over \(count) runs")
    }
}
