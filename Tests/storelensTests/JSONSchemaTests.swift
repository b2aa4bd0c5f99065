import Foundation
import StoreTestSupport
import Testing

/// scripts/json-schemas.py with `jsonschema` (the Python reference validator) in a virtualenv
/// made once under `.build/` (the one `make test` validates every recorded JSON output with).
enum SchemaValidator {
    static let unavailable = "jsonschema could not be installed (python3 -m venv + pip install from PyPI); the reason is printed above. JSON Schema validation is skipped"

    static let python: URL? = PythonVenv.make("jsonschema", packages: ["jsonschema"],
                                              probe: ["python", "-c", "import jsonschema, referencing"])
        .map { $0.appendingPathComponent("bin/python") }

    static var available: Bool { python != nil }

    static let script = ProjectPaths.root().appendingPathComponent("scripts/json-schemas.py").path

    /// What the validator says of `text` as schema `name` ("" when it matches): one document, or
    /// (`lines`) one per line.
    static func problems(_ name: String, _ text: String, lines: Bool = false, in folder: TemporaryFolder) throws -> String {
        let python = try #require(Self.python)
        let file = folder.path("\(UUID().uuidString).json")
        try Data(text.utf8).write(to: file)
        let run = PythonVenv.run([python.path, script, lines ? "validate-lines" : "validate", name, file.path])
        return run.status == 0 ? "" : run.stdout + run.stderr
    }
}

/// schemas/ holds a JSON Schema (draft 2020-12) for every JSON document storelens writes; each is
/// held to real output here, and `make test` validates every JSON output of the whole suite
/// against its schema afterwards (scripts/test.sh).
@Suite("JSON Schemas of every JSON output", .enabled(if: SchemaValidator.available, Comment(rawValue: SchemaValidator.unavailable)))
struct JSONSchemaTests {
    static let root = ProjectPaths.root()
    static let container = root.appendingPathComponent("Fixtures/demo-container").path
    static let store = container + "/Library/Application Support/default.store"
    static let manifest = root.appendingPathComponent("Fixtures/demo-container.storelens.json").path

    static var schemaNames: [String] {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("schemas").path)) ?? []
        return files.filter { $0.hasSuffix(".schema.json") }.map { String($0.dropLast(".schema.json".count)) }.sorted()
    }

    @Test("every schema is draft 2020-12 and named by its $id, its references resolve, and docs/json-output.md links it")
    func schemasAndDocs() throws {
        let python = try #require(SchemaValidator.python)
        let run = PythonVenv.run([python.path, SchemaValidator.script, "check"])
        #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
        let docs = try String(contentsOf: Self.root.appendingPathComponent("docs/json-output.md"), encoding: .utf8)
        #expect(Self.schemaNames.count >= 20)
        for name in Self.schemaNames {
            #expect(docs.contains("../schemas/\(name).schema.json"), "docs/json-output.md does not link schemas/\(name).schema.json")
        }
    }

    /// One real output of each schema: the command, the schema, and whether stdout is one
    /// document, JSON Lines or an array of the schema's items.
    struct Output: Sendable, CustomStringConvertible {
        let schema: String
        let arguments: @Sendable (TemporaryFolder) throws -> [String]
        var shape = "document"
        var description: String { schema + (shape == "document" ? "" : " (\(shape))") }
    }

    static let outputs: [Output] = [
        Output(schema: "inspect") { _ in ["inspect", container, "--format", "json"] },
        Output(schema: "scan") { _ in ["scan", container, "--format", "json"] },
        Output(schema: "schema") { _ in ["schema", store, "--format", "json"] },
        Output(schema: "rows") { _ in ["rows", store, "TodoItem", "--format", "json"] },
        Output(schema: "rows-line", arguments: { _ in ["rows", store, "TodoItem", "--format", "jsonl"] }, shape: "lines"),
        Output(schema: "rows-line", arguments: { _ in ["rows", store, "TodoList", "--format", "array"] }, shape: "array"),
        Output(schema: "history") { _ in ["history", store, "--format", "json"] },
        Output(schema: "history-line", arguments: { _ in ["history", store, "--format", "jsonl"] }, shape: "lines"),
        Output(schema: "timeline-line", arguments: { _ in ["timeline", store, "--format", "jsonl"] }, shape: "lines"),
        Output(schema: "wal") { _ in ["wal", store, "--format", "json"] },
        Output(schema: "wal-diff") { _ in ["wal", store, "--diff", "--format", "json"] },
        Output(schema: "wal-diff") { _ in ["wal", store, "--diff", "--each", "--format", "json"] },
        Output(schema: "wal-diff-line", arguments: { _ in ["wal", store, "--diff", "--format", "jsonl"] }, shape: "lines"),
        Output(schema: "recover") { _ in ["recover", store, "--format", "json"] },
        Output(schema: "recover-line", arguments: { _ in ["recover", store, "--format", "jsonl"] }, shape: "lines"),
        Output(schema: "export") { folder in ["export", store, "--out", folder.path("decoded.sqlite").path, "--format", "json"] },
        Output(schema: "check") { _ in ["check", container, "--format", "json"] },
        Output(schema: "audit") { _ in ["audit", container, "--manifest", manifest, "--format", "json"] },
        Output(schema: "migration") { _ in ["migration", store, "--to", store, "--format", "json"] },
        Output(schema: "lint") { _ in ["lint", store, "--format", "json"] },
        Output(schema: "repair") { _ in ["repair", store, "--plan", "--format", "json"] },
        Output(schema: "batch-line", arguments: { folder in
            let results = folder.path("results.jsonl").path
            for arguments in [["check", container], ["scan", container], ["inspect", container], ["audit", container, "--manifest", manifest],
                              ["report", container, "--out-dir", folder.path("reports").path], ["check", folder.path("missing.store").path]] {
                _ = try CLI.run(arguments + ["--jsonl", results])
            }
            return ["__file__", results]
        }, shape: "lines"),
        Output(schema: "merge") { folder in
            let results = folder.path("results.jsonl").path
            _ = try CLI.run(["check", container, "--jsonl", results])
            _ = try CLI.run(["inspect", container, "--jsonl", results])
            return ["merge", results, "--format", "json"]
        },
    ]

    @Test("each kind of JSON output matches its schema", arguments: outputs)
    func matches(_ output: Output) throws {
        let folder = try TemporaryFolder("json-schema-\(output.schema)")
        let arguments = try output.arguments(folder)
        let text: String
        if arguments.first == "__file__" {
            text = try String(contentsOf: URL(fileURLWithPath: arguments[1]), encoding: .utf8)
        } else {
            let run = try CLI.run(arguments)
            #expect([0, 1].contains(run.status), "\(arguments.joined(separator: " ")): \(run.stderr)")
            text = run.stdout
        }
        #expect(!text.isEmpty)
        var checked = text
        if output.shape == "array" {
            let items = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [Any])
            #expect(!items.isEmpty)
            checked = try items.map { String(decoding: try JSONSerialization.data(withJSONObject: $0), as: UTF8.self) }.joined(separator: "\n")
        }
        let problems = try SchemaValidator.problems(output.schema, checked, lines: output.shape != "document", in: folder)
        #expect(problems.isEmpty, "\(output): \(problems)")
    }

    /// The schemas are strict where storelens defines the keys: a key taken away, an undocumented
    /// key, or a value of the wrong type is a mismatch, so a change of shape cannot pass unnoticed.
    @Test("a key taken away, a key added, a value of another type: each is a mismatch")
    func strict() throws {
        let folder = try TemporaryFolder("json-schema-strict")
        let run = try CLI.run(["inspect", Self.container, "--format", "json"])
        let document = try CommandJSON.object(run.stdout)
        #expect(try SchemaValidator.problems("inspect", run.stdout, in: folder).isEmpty)
        func text(_ object: [String: Any]) throws -> String { String(decoding: try JSONSerialization.data(withJSONObject: object), as: UTF8.self) }
        var missing = document
        missing["schemaVersion"] = nil
        var added = document
        added["undocumented"] = 1
        var nested = document
        var stores = try #require(document["stores"] as? [[String: Any]])
        stores[0]["pageSize"] = "4096"
        nested["stores"] = stores
        for (what, variant) in [("a key taken away", missing), ("an undocumented key", added), ("a number as a string", nested)] {
            #expect(try !SchemaValidator.problems("inspect", try text(variant), in: folder).isEmpty, "\(what) passed the schema")
        }
    }
}
