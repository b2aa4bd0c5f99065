import Foundation
import StoreBuilder
import StoreFormats
import StorelensKit
import StoreTestSupport
import Testing

/// Every `--format` of the commands that print one document: what the command prints is the
/// library's answer rendered by `Reports` in that format, byte for byte. The formats come from
/// the views' own lists (`DocumentFormat.allCases`, and `sarif` for the views made of findings),
/// so a format added there is compared here without a line more.
@Suite("every format of the command is the library's answer rendered")
struct CommandFormatsAgreementTests {
    static let toolVersion: String = {
        // `storelens --version` prints "storelens 0.1.0 (commit …)".
        let words = ((try? CLI.run(["--version"]))?.stdout ?? "").split(separator: " ")
        return words.count > 1 ? String(words[1]) : "unknown"
    }()

    static let documentFormats = DocumentFormat.allCases.map(\.rawValue)
    static let findingsFormats = documentFormats + ["sarif"]

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
            try CheckReport.rendered(checked.get(), as: $0, command: "check", toolVersion: toolVersion, inputs: inputs)
        }
        let analysed = Result { try Storelens.wal(inputs) }
        try expectEveryFormat(["wal", input], formats: documentFormats) { try WALReport.rendered(analysed.get(), as: $0) }
        // The text view does not hash archives; JSON carries their SHA-256 (docs/json-output.md).
        try expectEveryFormat(["scan", input], formats: documentFormats) { format in
            ScanReport.rendered(try Storelens.scan(inputs, .init(hashArchives: format == "json")), as: format)
        }
        let linted = Result { try Storelens.lint(inputs) }
        try expectEveryFormat(["lint", input], formats: findingsFormats) {
            try LintReport.rendered(linted.get(), as: $0, command: "lint", toolVersion: toolVersion, inputs: inputs)
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
        try Self.expectEveryFormat(["audit", demo, "--manifest", manifestPath], formats: Self.findingsFormats) { format in
            switch format {
            case "json": return AuditReport.json(audited, manifest: manifestPath).rendered() + "\n"
            case "sarif": return SARIF.log(AuditReport.located(audited, manifest: manifestPath), command: "audit", toolVersion: Self.toolVersion,
                                           inputs: [demo]).rendered() + "\n"
            case "markdown": return AuditReport.markdown(audited, input: demo)
            default: return AuditReport.text(audited)
            }
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
            try MigrationReport.rendered(migration.get().plan, as: $0, command: "migration", toolVersion: toolVersion, inputs: [store])
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
}
