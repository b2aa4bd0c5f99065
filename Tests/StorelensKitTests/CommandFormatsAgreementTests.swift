import Foundation
import StoreBuilder
import StoreFormats
import StorelensKit
import StoreTestSupport
import Testing

/// Every `--format` of the commands that print one document: what the command prints is the
/// library's answer rendered by `Reports` in that format, byte for byte. The formats come from
/// the families' own lists (`DocumentFormats.all`, `FindingsFormats.all`),
/// so a format added there is compared here without a line more.
@Suite("every format of the command is the library's answer rendered")
struct CommandFormatsAgreementTests {
    static let toolVersion: String = {
        // `storelens --version` prints "storelens 0.1.0 (commit …)".
        let words = ((try? CLI.run(["--version"]))?.stdout ?? "").split(separator: " ")
        return words.count > 1 ? String(words[1]) : "unknown"
    }()

    static let documentFormats = DocumentFormats.names
    static let findingsFormats = FindingsFormats.names

    /// For each format, `storelens arguments --format F` against `render(F)`.
    static func expectEveryFormat(_ arguments: [String], formats: [String], _ render: (String) throws -> String) throws {
        for format in formats {
            try SameOutput.expect(arguments + ["--format", format]) { try render(format) }
        }
    }

    /// inspect, check, wal, scan and lint of `input`, in every format each offers.
    static func expectEveryFormatOfReads(_ input: String) throws {
        let inputs = [input]
        let inspected = Result { try Storelens.inspect(inputs) }
        try expectEveryFormat(["inspect", input], formats: documentFormats) { try InspectionReport.rendered(inspected.get(), as: $0) }
        let checked = Result { try Storelens.check(inputs) }
        try expectEveryFormat(["check", input], formats: findingsFormats) {
            try CheckReport.rendered(checked.get(), as: $0, command: "check", toolVersion: toolVersion, places: SARIFPlaces(inputs: inputs))
        }
        let analysed = Result { try Storelens.wal(inputs) }
        try expectEveryFormat(["wal", input], formats: documentFormats) { try WALReport.rendered(analysed.get(), as: $0) }
        // The text view does not hash archives; JSON carries their SHA-256 (docs/json-output.md).
        try expectEveryFormat(["scan", input], formats: documentFormats) { format in
            ScanReport.rendered(try Storelens.scan(inputs, .init(hashArchives: format == "json")), as: format)
        }
        let linted = Result { try Storelens.lint(inputs) }
        try expectEveryFormat(["lint", input], formats: findingsFormats) {
            try LintReport.rendered(linted.get(), as: $0, command: "lint", toolVersion: toolVersion, places: SARIFPlaces(inputs: inputs))
        }
    }

    @Test("the demo container: inspect, check, wal, scan, lint and audit in every format")
    func demo() throws {
        let root = ProjectPaths.root()
        let demo = root.appendingPathComponent("Fixtures/demo-container").path
        try Self.expectEveryFormatOfReads(demo)
        let manifestPath = root.appendingPathComponent("Fixtures/demo-container.storelens.json").path
        let audited = try Storelens.audit([demo], manifest: try Manifest.load(path: manifestPath),
                                          .init(manifestFile: URL(fileURLWithPath: manifestPath)))
        try Self.expectEveryFormat(["audit", demo, "--manifest", manifestPath], formats: Self.findingsFormats) {
            AuditReport.rendered(.init(audited, manifest: manifestPath, input: demo), as: $0, command: "audit", toolVersion: Self.toolVersion, places: SARIFPlaces(inputs: [demo]))
        }
    }

    /// schema and migration (to its own model: nothing to migrate) of one store, every format.
    static func expectEveryFormatOfOneStore(_ store: String) throws {
        let schema = Result { try Storelens.schema(store) }
        try expectEveryFormat(["schema", store], formats: ["text", "json"]) { format in
            format == "json" ? SchemaReport.json(try schema.get()).rendered() + "\n" : SchemaReport.text(try schema.get())
        }
        let migration = Result { try Storelens.migration([store], to: store) }
        try expectEveryFormat(["migration", store, "--to", store], formats: findingsFormats) {
            try MigrationReport.rendered(migration.get().plan, as: $0, command: "migration", toolVersion: toolVersion, places: SARIFPlaces(inputs: [store]))
        }
    }

    @Test("a store of the builder: schema and migration in every format")
    func builderStore() throws {
        let folder = try TemporaryFolder("formats-agreement")
        let store = try SampleStores.todo(in: folder.url, journal: .wal)
        try Self.expectEveryFormatOfOneStore(store.path)
    }

    @Test("genuine Apple stores: every format of inspect, check, wal, scan, lint, schema and migration",
          .enabled(if: ProjectPaths.hasRealFixtures, Comment(rawValue: ProjectPaths.realFixturesMissing)),
          arguments: ProjectPaths.realFixtureFolders())
    func realStore(_ name: String) throws {
        let folder = try #require(ProjectPaths.realFixtures()).appendingPathComponent(name)
        let store = try #require(try ProjectPaths.realStoreFile(in: folder), "a store in \(name)")
        try Self.expectEveryFormatOfReads(store.path)
        try Self.expectEveryFormatOfOneStore(store.path)
    }

    // MARK: - The streaming commands: every case of their writer's `Format`

    /// rows of `entity`, history, recover and wal --diff of `store`, in every format their
    /// writers have; bytes and text are gathered as the command writes them.
    static func expectEveryStreamedFormat(_ store: String, entity: String?) throws {
        if let entity {
            for format in RowsWriter.Format.allCases {
                try SameOutput.expect(["rows", store, entity, "--format", format.rawValue, "--limit", "40"]) {
                    try Storelens.rows(store, .init(entity: entity, limit: 40)) { read -> String in
                        guard case .sqlite(let rows) = read else { return "" }
                        var out: [UInt8] = []
                        let writer = RowsWriter(format: format, fields: rows.fields, header: RowsWriter.header(rows),
                                                write: { out += Array($0.utf8) }, writeBytes: { out += $0 })
                        if format == .table { out += Array((RowsWriter.title(rows) + "\n").utf8) }
                        writer.begin()
                        if writer.takesScanRows { try rows.forEachStored { try writer.add($0) } } else { try rows.forEach { try writer.add($0) } }
                        writer.end()
                        if format == .table { out += Array((plural(writer.count, "row") + "\n").utf8) }
                        return String(decoding: out, as: UTF8.self)
                    }
                }
            }
        }
        for format in HistoryWriter.Format.allCases {
            try SameOutput.expect(["history", store, "--format", format.rawValue]) {
                let (history, transactions) = try Storelens.history(store)
                var out = ""
                let writer = HistoryWriter(format: format, header: HistoryWriter.header(history), path: history.path) { out += $0 }
                writer.begin(title: HistoryWriter.title(history))
                transactions.forEach(writer.add)
                writer.end()
                return out
            }
        }
        for format in RecoveryWriter.Format.allCases {
            try SameOutput.expect(["recover", store, "--format", format.rawValue]) {
                var out: [UInt8] = []
                let writer = RecoveryWriter(format: format, write: { out += Array($0.utf8) }, writeBytes: { out += $0 })
                writer.begin()
                try Storelens.recover(store) { writer.add($0) }
                writer.end()
                return String(decoding: out, as: UTF8.self)
            }
        }
        for format in RecordDiffWriter.Format.allCases {
            try SameOutput.expect(["wal", store, "--diff", "--format", format.rawValue]) {
                var out = ""
                RecordDiffWriter(format: format, each: false) { out += $0 }.write(try Storelens.walDiff([store]))
                return out
            }
        }
    }

    @Test("a store of the builder with a -wal and history: every format of rows, history, recover and wal --diff")
    func builderStoreStreamed() throws {
        let folder = try TemporaryFolder("formats-agreement-streamed")
        let store = folder.path("bench/default.store")
        try FileManager.default.createDirectory(at: store.deletingLastPathComponent(), withIntermediateDirectories: true)
        try BenchCorpus.write(to: store, rows: 300, batch: 10, walShare: 0.3)
        let entity = try Storelens.schema(store.path).map.entities.first { $0.tableExists }?.entity.name
        #expect(entity != nil, "the bench store has entities")
        try Self.expectEveryStreamedFormat(store.path, entity: entity)
    }

    @Test("genuine Apple stores: every format of rows, history, recover and wal --diff",
          .enabled(if: ProjectPaths.hasRealFixtures, Comment(rawValue: ProjectPaths.realFixturesMissing)),
          arguments: ["notes-macos15-wal", "swiftdata-cocktails-preloaded", "knowledgec-tombstones", "backup-manifest-db"])
    func realStoreStreamed(_ name: String) throws {
        let folder = try #require(ProjectPaths.realFixtures()).appendingPathComponent(name)
        let store = try #require(try ProjectPaths.realStoreFile(in: folder), "a store in \(name)")
        let entity = (try? Storelens.schema(store.path))?.map.entities.first { $0.tableExists }?.entity.name
        try Self.expectEveryStreamedFormat(store.path, entity: entity)
    }

    // MARK: - Commands that write a file: report and export

    /// `report INPUT --out -` against `Storelens.report` rendered by `HTMLReport`, the moment it
    /// was made masked (the one thing two runs may not share).
    static func expectSameReport(_ input: String) throws {
        func masked(_ html: String) -> String {
            html.replacingOccurrences(of: #"\d{4}-\d\d-\d\dT[0-9:.]+Z"#, with: "TIME", options: .regularExpression)
        }
        let command = try CLI.run(["report", input, "--out", "-"])
        #expect(command.status < 2, "report \(input): \(command.stderr)")
        let options = Storelens.ReportOptions(commandLine: "storelens report \(input) --out -", toolVersion: toolVersion)
        #expect(masked(command.stdout) == masked(HTMLReport.render(try Storelens.report([input], options).document)), "report of \(input)")
    }

    /// Every table of an exported file, row by row, the moment of the export masked.
    static func dump(_ path: String) throws -> [String] {
        let oracle = try SQLiteOracle(copying: URL(fileURLWithPath: path))
        var lines: [String] = []
        for table in try oracle.rows("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").compactMap({ $0[0].string }) {
            lines += try oracle.rows("SELECT * FROM \"\(table.replacingOccurrences(of: "\"", with: "\"\""))\"").map { "\(table): \($0)" }
        }
        return lines.map { $0.replacingOccurrences(of: #"\d{4}-\d\d-\d\dT[0-9:.]+Z"#, with: "TIME", options: .regularExpression) }
    }

    /// `export STORE --out FILE` in each format against `Storelens.export` into the same file
    /// (made anew for each), and the two files' tables alike.
    static func expectSameExport(_ store: String, in folder: TemporaryFolder) throws {
        for format in ["text", "json"] {
            let out = folder.path("export-\(format).sqlite").path
            let command = try CLI.run(["export", store, "--out", out, "--format", format])
            #expect(command.status == 0, "export \(store): \(command.stderr)")
            let commandDump = try Self.dump(out)
            try FileManager.default.removeItem(atPath: out)
            let result = try Storelens.export(store, .init(output: out, toolVersion: toolVersion))
            let rendered = format == "json" ? ExportReport.json(result).rendered() + "\n" : ExportReport.text(result)
            #expect(command.stdout == rendered, "export \(store) --format \(format) and the library differ")
            #expect(try Self.dump(out) == commandDump, "the exported files differ")
        }
    }

    @Test("the demo container's report, and the export of a builder store in every format")
    func reportAndExport() throws {
        try Self.expectSameReport(ProjectPaths.root().appendingPathComponent("Fixtures/demo-container").path)
        let folder = try TemporaryFolder("formats-agreement-export")
        let store = try SampleStores.todo(in: folder.url, journal: .wal)
        try Self.expectSameExport(store.path, in: folder)
    }

    @Test("genuine Apple stores: report and export",
          .enabled(if: ProjectPaths.hasRealFixtures, Comment(rawValue: ProjectPaths.realFixturesMissing)),
          arguments: ["notes-macos15-wal", "swiftdata-cocktails-preloaded", "knowledgec-tombstones"])
    func realStoreReportAndExport(_ name: String) throws {
        let root = try #require(ProjectPaths.realFixtures()).appendingPathComponent(name)
        let store = try #require(try ProjectPaths.realStoreFile(in: root), "a store in \(name)")
        try Self.expectSameReport(store.path)
        try Self.expectSameExport(store.path, in: try TemporaryFolder("formats-agreement-export-real"))
    }

    // MARK: - timeline, repair --plan and merge

    /// timeline and `repair --plan` of `store` in every format, as the command renders what the
    /// library read.
    static func expectSameTimelineAndPlan(_ store: String) throws {
        for format in TimelineWriter.Format.allCases {
            try SameOutput.expect(["timeline", store, "--format", format.rawValue]) {
                try Storelens.reading(.init()) { session in
                    try Storelens.sortedTimeline(store, .init(), in: session) { TimelineWriter.lines(format, store: $0, [$1], rawCSV: false) }
                } then: { timeline, _ in
                    var out = TimelineWriter.header(format, rawCSV: false)
                    try timeline.forEachSorted { out += $0 }
                    return out
                }
            }
        }
        for format in PlainFormats.names {
            try SameOutput.expect(["repair", store, "--plan", "--format", format]) {
                try Storelens.reading(.init()) { try Storelens.repair(store, .init(mode: .plan), in: $0) } then: { outcome, session in
                    format == JSONFormat.name ? RepairReport.json(outcome, inputHashes: session.ledger.entries.map { ($0.path, $0.sha256) }).rendered() + "\n"
                                              : RepairReport.text(outcome, planOnly: true)
                }
            }
        }
    }

    @Test("the demo's stores and a builder store: timeline and repair --plan in every format; merge of a batch's results")
    func timelineRepairMerge() throws {
        let folder = try TemporaryFolder("formats-agreement-timeline")
        let store = folder.path("bench/default.store")
        try FileManager.default.createDirectory(at: store.deletingLastPathComponent(), withIntermediateDirectories: true)
        try BenchCorpus.write(to: store, rows: 300, batch: 10, walShare: 0.3)
        try Self.expectSameTimelineAndPlan(store.path)
        // A batch's results over the store and a path that is not there, merged.
        let results = folder.path("results.jsonl").path
        let batch = try CLI.run(["scan", store.path, folder.path("missing").path, "--jsonl", results])
        #expect(FileManager.default.fileExists(atPath: results), "the batch wrote its results: \(batch.stderr)")
        for format in PlainFormats.names {
            try SameOutput.expect(["merge", results, "--format", format]) {
                MergeReport.rendered(try Storelens.merge(files: [URL(fileURLWithPath: results)]), as: format)
            }
        }
    }

    @Test("genuine Apple stores: timeline and repair --plan in every format",
          .enabled(if: ProjectPaths.hasRealFixtures, Comment(rawValue: ProjectPaths.realFixturesMissing)),
          arguments: ["notes-macos15-wal", "swiftdata-cocktails-preloaded", "knowledgec-tombstones"])
    func realStoreTimelineAndPlan(_ name: String) throws {
        let root = try #require(ProjectPaths.realFixtures()).appendingPathComponent(name)
        let store = try #require(try ProjectPaths.realStoreFile(in: root), "a store in \(name)")
        try Self.expectSameTimelineAndPlan(store.path)
    }
}
