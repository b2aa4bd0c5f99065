import Foundation
import SQLiteAccess
import StoreBuilder
import StoreTestSupport
import Testing

/// External binary storage as Apple writes it (`0x02` + the UUID file name + NUL; `0x01` + the
/// bytes inline), read through storelens's private copies of `_EXTERNAL_DATA`: every present file
/// shown with the size and SHA-256 that `sha256sum` computes from the original, a removed one
/// named by `check`, a file no row names reported, the bytes exported on request, and the
/// evidence (the store and its support folder) left byte-identical.
@Suite("External binary storage, file by file")
struct ExternalDataTests {
    struct Layout {
        let folder: TemporaryFolder
        let store: URL
        let external: URL
        /// Photo Z_PK → file name, for the references that name a file.
        let references: [Int64: String]
        let removed: String
        let stray: String
        let inline: Data
    }

    /// - Parameter wal: the rows stay in the `-wal`, uncheckpointed (each is then a version of a
    ///   WAL commit for `recover`).
    static func make(wal: Bool = false) throws -> Layout {
        let folder = try TemporaryFolder("external-data")
        let evidence = folder.path("evidence")
        try FileManager.default.createDirectory(at: evidence, withIntermediateDirectories: true)
        let store = evidence.appendingPathComponent("Photos.sqlite")
        let model = ModelDescription(entities: [
            EntityDescription("Photo", attributes: [AttributeDescription("caption", .string),
                                                    AttributeDescription("image", .binaryData, externalStorage: true)]),
        ], versionIdentifiers: ["1.0.0"])
        let writer = try StoreWriter(url: store, model: model, options: .init(journalMode: wal ? .wal : .delete))
        var references: [Int64: String] = [:]
        let inline = Data((0 ..< 40).map { UInt8($0 * 7 & 0xFF) })
        try writer.transaction { w in
            for (i, size) in [5000, 123_457, 1].enumerated() {
                let name = UUID()
                let bytes = Data((0 ..< size).map { UInt8(($0 * 31 + i) & 0xFF) })
                let pk = try w.insert("Photo", ["caption": .string("photo \(i)"), "image": try writer.externalData(bytes, name: name)])
                references[Int64(pk)] = name.uuidString
            }
            _ = try w.insert("Photo", ["caption": .string("small"), "image": StoreWriter.inlineExternal(inline)])
        }
        try writer.close(leavingWAL: wal)
        let external = writer.supportFolder.appendingPathComponent("_EXTERNAL_DATA")
        // One referenced file lost in the copy off the device; one file no row names.
        let removed = try #require(references.sorted { $0.key < $1.key }.dropFirst().first?.value)
        try FileManager.default.removeItem(at: external.appendingPathComponent(removed))
        let stray = UUID().uuidString
        try Data("left behind".utf8).write(to: external.appendingPathComponent(stray))
        return Layout(folder: folder, store: store, external: external, references: references, removed: removed, stray: stray, inline: inline)
    }

    /// `sha256sum` of each file in the folder, by name: the independent reader.
    static func sha256sum(_ folder: URL) throws -> [String: String] {
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
        let run = try CLI.bounded(["sha256sum", "--"] + names.map { folder.appendingPathComponent($0).path },
                                  executable: URL(fileURLWithPath: "/usr/bin/env"))
        #expect(run.status == 0, "\(run.stderr)")
        var result: [String: String] = [:]
        for line in run.stdout.split(separator: "\n") {
            let parts = line.split(separator: " ", maxSplits: 1)
            let path = String(parts[1].drop { $0 == " " || $0 == "*" })
            result[(path as NSString).lastPathComponent] = String(parts[0])
        }
        return result
    }

    @Test("the reference is Apple's 38 bytes: 0x02, the uppercase UUID, one NUL")
    func builderWritesAppleLayout() throws {
        let layout = try Self.make()
        let db = try Connection.open(path: layout.store.path, mode: .readOnly)
        let rows = try db.rows("SELECT hex(ZIMAGE) FROM ZPHOTO WHERE substr(ZIMAGE, 1, 1) = x'02'")
        #expect(rows.count == layout.references.count)
        for row in rows {
            let hex = try #require(row[0].string)
            #expect(hex.count == 76 && hex.hasPrefix("02") && hex.hasSuffix("00"), "\(hex)")
            let name = String(decoding: stride(from: 2, to: 74, by: 2).map { UInt8(hex.dropFirst($0).prefix(2), radix: 16)! }, as: UTF8.self)
            #expect(layout.references.values.contains(name), "\(name)")
        }
    }

    @Test("rows shows each present file with sha256sum's hash and its size, a removed one as missing, inline bytes without the marker")
    func rowsShowFiles() throws {
        let layout = try Self.make()
        let before = try FolderSnapshot(layout.store.deletingLastPathComponent())
        let sums = try Self.sha256sum(layout.external)
        let result = try CLI.run(["rows", layout.store.path, "Photo", "--format", "jsonl"])
        #expect(result.status == 0, "\(result.stderr)")
        let rows = try result.stdout.split(separator: "\n").map { try CommandJSON.object($0) }
        #expect(rows.count == layout.references.count + 1)
        for row in rows {
            let image = try #require(row["image"] as? [String: Any])
            guard let pk = (row["_pk"] as? Int).map(Int64.init), let name = layout.references[pk] else {
                #expect(image["storage"] as? String == "inline")
                #expect(image["size"] as? Int == layout.inline.count)
                #expect(image["hexPrefix"] as? String == layout.inline.prefix(16).map { String(format: "%02x", $0) }.joined())
                continue
            }
            let file = try #require(image["externalFile"] as? [String: Any])
            #expect(file["path"] as? String == ".Photos_SUPPORT/_EXTERNAL_DATA/\(name)")
            if name == layout.removed {
                #expect(file["exists"] as? Bool == false && file["kind"] as? String == "missing" && file["sha256"] is NSNull)
            } else {
                let size = try FileManager.default.attributesOfItem(atPath: layout.external.appendingPathComponent(name).path)[.size] as? Int
                #expect(file["exists"] as? Bool == true && file["size"] as? Int == size)
                #expect(file["sha256"] as? String == sums[name], "\(name)")
            }
        }
        #expect(try FolderSnapshot(layout.store.deletingLastPathComponent()) == before, "the store and its support folder are unchanged")
    }

    /// recover keeps each version's values in a scratch file of its own between reading and
    /// printing (`VersionValues`); a file's hash must come back out of it with the file.
    @Test("recover shows each present file with sha256sum's hash, as rows does, for versions in the -wal too",
          arguments: [false, true])
    func recoverShowsFiles(wal: Bool) throws {
        let layout = try Self.make(wal: wal)
        let sums = try Self.sha256sum(layout.external)
        let result = try CLI.run(["recover", layout.store.path, "--format", "jsonl"])
        #expect(result.status == 0, "\(result.stderr)")
        var seen = 0
        for line in result.stdout.split(separator: "\n") {
            let version = try CommandJSON.object(line)
            guard let pk = (version["_pk"] as? Int).map(Int64.init), let name = layout.references[pk], name != layout.removed,
                  let file = (version["image"] as? [String: Any])?["externalFile"] as? [String: Any] else { continue }
            #expect(file["kind"] as? String == "file" && file["sha256"] as? String == sums[name], "\(name): \(file)")
            seen += 1
        }
        #expect(seen == layout.references.count - 1, "every present file's record has a version")
    }

    @Test("check names the missing file's row and the file no row references")
    func checkMissingAndUnreferenced() throws {
        let layout = try Self.make()
        let result = try CLI.run(["check", layout.store.path, "--format", "json"])
        let document = try CommandJSON.object(result.stdout)
        let findings = (document["findings"] as? [[String: Any]]) ?? ((document["stores"] as? [[String: Any]])?.flatMap { $0["findings"] as? [[String: Any]] ?? [] } ?? [])
        let missing = try #require(findings.first { $0["id"] as? String == "external-data-missing" }, "\(result.stdout)")
        let evidence = try #require(missing["evidence"] as? [String: Any])
        let removedPK = try #require(layout.references.first { $0.value == layout.removed }?.key)
        #expect((evidence["pks"] as? [Int]) == [Int(removedPK)], "\(evidence)")
        // The missing file by name: what an examiner asks the device for again.
        #expect((evidence["files"] as? [String]) == [layout.removed], "\(evidence)")
        let text = try CLI.run(["check", layout.store.path])
        #expect(text.stdout.contains("files: \(layout.removed)"), "\(text.stdout)")
        let unreferenced = try #require(findings.first { $0["id"] as? String == "external-data-unreferenced" }, "\(result.stdout)")
        let files = try #require((unreferenced["evidence"] as? [String: Any])?["files"] as? [String])
        #expect(files == [layout.stray])
    }

    @Test("export lists every file with its hash, and copies the bytes with --with-external-data")
    func exportFiles() throws {
        let layout = try Self.make()
        let sums = try Self.sha256sum(layout.external)
        for withData in [false, true] {
            let out = layout.folder.path("export-\(withData).sqlite")
            let result = try CLI.run(["export", layout.store.path, "--out", out.path] + (withData ? ["--with-external-data"] : []))
            #expect(result.status == 0, "\(result.stderr)")
            let db = try Connection.open(path: out.path, mode: .readOnly)
            var listed: [String: String] = [:]
            for row in try db.rows("SELECT name, sha256, data FROM _storelens_external_data") {
                let name = try #require(row[0].string)
                listed[name] = row[1].string
                if withData {
                    guard case .blob(let bytes) = row[2] else { Issue.record("no bytes for \(name)"); continue }
                    #expect(bytes == (try Data(contentsOf: layout.external.appendingPathComponent(name))), "\(name)")
                } else {
                    #expect(row[2].isNull)
                }
            }
            #expect(listed == sums)
        }
    }
}

extension ExternalDataTests {
    @Test("scan and inspect count the files that came and the values that name them")
    func scanAndInspectCount() throws {
        let layout = try Self.make()
        let names = try FileManager.default.contentsOfDirectory(atPath: layout.external.path)
        let bytes = try names.reduce(0) { $0 + ((try FileManager.default.attributesOfItem(atPath: layout.external.appendingPathComponent($1).path)[.size] as? Int) ?? 0) }
        // Counted from the files and the builder's own record of what it wrote.
        let expected: [String: Int] = ["files": names.count, "bytes": bytes, "references": layout.references.count,
                                       "missingReferences": 1, "inlineValues": 1, "unreferencedFiles": 1]
        func census(_ object: Any?) throws -> [String: Int] {
            let x = try #require(object as? [String: Any])
            return x.compactMapValues { $0 as? Int }.filter { expected[$0.key] != nil }
        }
        let inspect = try CLI.run(["inspect", layout.store.path, "--format", "json"])
        #expect(inspect.status == 0, "\(inspect.stderr)")
        let inspected = try CommandJSON.object(inspect.stdout)
        let store = (inspected["stores"] as? [[String: Any]])?.first ?? inspected
        #expect(try census(store["externalData"]) == expected, "\(inspect.stdout)")

        let scan = try CLI.run(["scan", layout.store.deletingLastPathComponent().path, "--format", "json"])
        #expect(scan.status == 0, "\(scan.stderr)")
        let scanned = try #require(try CommandJSON.object(scan.stdout)["stores"] as? [[String: Any]])
        #expect(scanned.count == 1)
        #expect(try census(scanned.first?["externalData"]) == expected, "\(scan.stdout)")
        let text = try CLI.run(["scan", layout.store.deletingLastPathComponent().path])
        #expect(text.stdout.contains("external(\(names.count), 1 missing)"), "\(text.stdout)")
    }
}
