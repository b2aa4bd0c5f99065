import Foundation
import StoreBuilder
import StoreTestSupport
import Testing

/// Manifests written by hand: store paths in another letter case or another Unicode form than
/// the container's. The audit binds them as a case-insensitive APFS volume would, and a stack
/// that binds nothing fails the audit instead of hiding every finding about it.
@Suite("audit with manifests typed loosely")
struct LooseManifestTests {
    struct Output: Decodable {
        struct Finding: Decodable, Hashable { let id: String; let severity: String; let entity: String?; let message: String }
        struct Binding: Decodable { let stack: String; let store: String? }
        let findings: [Finding]
        let bindings: [Binding]?
    }

    static func audit(_ container: URL, manifest text: String, in folder: TemporaryFolder, name: String) throws -> (status: Int32, output: Output, raw: String) {
        let manifest = folder.path(name)
        try Data(text.utf8).write(to: manifest)
        let r = try CLI.run(["audit", container.path, "-m", manifest.path, "--format", "json"])
        let output = try JSONDecoder().decode(Output.self, from: Data(r.stdout.utf8))
        return (r.status, output, r.stdout + r.stderr)
    }

    static func ids(_ findings: [Output.Finding]) -> [String] { findings.map { "\($0.severity) \($0.id) \($0.entity ?? "")" }.sorted() }

    @Test("store paths in lower case bind as APFS would: the same findings as the exact manifest, each loose binding noted")
    func otherCase() throws {
        let folder = try TemporaryFolder("loose-case")
        let container = folder.path("c")
        try DemoContainer.write(into: container)
        let before = try FolderSnapshot(container)
        let exact = try Self.audit(container, manifest: DemoContainer.manifest, in: folder, name: "exact.json")
        #expect(exact.status == 1)
        #expect(!exact.output.findings.isEmpty)
        let lowered = DemoContainer.manifest
            .replacingOccurrences(of: "Library/Application Support/", with: "library/application support/")
            .replacingOccurrences(of: "Documents/", with: "documents/")
        #expect(lowered != DemoContainer.manifest)
        let loose = try Self.audit(container, manifest: lowered, in: folder, name: "lower.json")
        #expect(loose.status == exact.status, "\(loose.raw)")
        #expect(Self.ids(loose.output.findings.filter { $0.id != "stack-store-case" }) == Self.ids(exact.output.findings))
        let noted = loose.output.findings.filter { $0.id == "stack-store-case" }
        #expect(noted.count == 4, "one note per stack bound ignoring case: \(noted)")
        #expect(noted.allSatisfy { $0.severity == "info" })
        #expect(try FolderSnapshot(container) == before)
    }

    @Test("a manifest in NFC binds a container whose folder names are NFD, with or without the same case")
    func otherUnicodeForm() throws {
        let folder = try TemporaryFolder("loose-unicode")
        let container = folder.path("c")
        try DemoContainer.write(into: container)
        // The stores move into a folder whose name the file system keeps in NFD, as HFS+ writes it.
        let nfd = "Donne\u{0301}es"
        let support = container.appendingPathComponent("Library/Application Support")
        let moved = container.appendingPathComponent("Library/\(nfd)")
        try FileManager.default.moveItem(at: support, to: moved)
        let onDisk = try FileManager.default.contentsOfDirectory(atPath: container.appendingPathComponent("Library").path)
        #expect(onDisk.contains { Array($0.unicodeScalars) == Array(nfd.unicodeScalars) }, "the folder name is NFD on disk")
        let asOnDisk = DemoContainer.manifest.replacingOccurrences(of: "Library/Application Support/", with: "Library/\(nfd)/")
        let exact = try Self.audit(container, manifest: asOnDisk, in: folder, name: "nfd.json")
        #expect(exact.status == 1, "\(exact.raw)")
        #expect(!exact.output.findings.contains { $0.id == "stack-store-missing" })

        let nfc = "Donn\u{00E9}es"
        let composed = DemoContainer.manifest.replacingOccurrences(of: "Library/Application Support/", with: "Library/\(nfc)/")
        let fromNFC = try Self.audit(container, manifest: composed, in: folder, name: "nfc.json")
        #expect(Self.ids(fromNFC.output.findings) == Self.ids(exact.output.findings), "\(fromNFC.raw)")

        let upperNFC = DemoContainer.manifest.replacingOccurrences(of: "Library/Application Support/", with: "LIBRARY/DONN\u{00C9}ES/")
        let both = try Self.audit(container, manifest: upperNFC, in: folder, name: "upper.json")
        #expect(Self.ids(both.output.findings.filter { $0.id != "stack-store-case" }) == Self.ids(exact.output.findings), "\(both.raw)")
        #expect(both.output.findings.filter { $0.id == "stack-store-case" }.count == 3)
    }

    @Test("a stack that binds no store is an error that fails the audit, with the close match suggested")
    func bindsNothing() throws {
        let folder = try TemporaryFolder("loose-missing")
        let container = folder.path("c")
        try DemoContainer.write(into: container)
        let typo = DemoContainer.manifest.replacingOccurrences(of: "Library/Application Support/Model.sqlite", with: "Library/Application Support/Modle.sqlite")
        let r = try Self.audit(container, manifest: typo, in: folder, name: "typo.json")
        #expect(r.status == 1)
        let missing = try #require(r.output.findings.first { $0.id == "stack-store-missing" })
        #expect(missing.severity == "error")
        #expect(missing.message.contains("did you mean Library/Application Support/Model.sqlite?"), "\(missing.message)")
        // --fail-on error is the default: a manifest that binds nothing cannot pass.
        let all = DemoContainer.manifest.replacingOccurrences(of: "Library/Application Support/", with: "Library/Caches/")
            .replacingOccurrences(of: "Documents/", with: "tmp/")
        let none = try Self.audit(container, manifest: all, in: folder, name: "none.json")
        #expect(none.status == 1, "\(none.raw)")
        #expect(none.output.findings.filter { $0.id == "stack-store-missing" }.count == 4)
    }

    @Test("two stores that differ only in case are not guessed between")
    func ambiguousCase() throws {
        let folder = try TemporaryFolder("loose-ambiguous")
        let container = folder.path("c")
        try DemoContainer.write(into: container)
        let support = container.appendingPathComponent("Library/Application Support")
        // A case-sensitive volume (ext4, a case-sensitive APFS image) can hold both.
        try FileManager.default.copyItem(at: support.appendingPathComponent("Model.sqlite"), to: support.appendingPathComponent("MODEL.sqlite"))
        let upper = DemoContainer.manifest.replacingOccurrences(of: "Library/Application Support/Model.sqlite", with: "Library/Application Support/model.SQLITE")
        let r = try Self.audit(container, manifest: upper, in: folder, name: "upper.json")
        #expect(r.status == 1)
        #expect(r.output.findings.contains { $0.id == "stack-store-missing" && $0.severity == "error" }, "\(r.raw)")
        #expect(!r.output.findings.contains { $0.id == "stack-store-case" })
    }
}
