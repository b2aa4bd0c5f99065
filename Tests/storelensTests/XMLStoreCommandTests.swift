import Foundation
import SQLiteAccess
import StoreBuilder
import StoreTestSupport
import Testing

/// An independent reader of the XML store: Python's `xml.etree` and `plistlib` on the same file,
/// giving each object's values as `rows --format jsonl` should write them (computed there, not
/// copied from storelens: dates from `datetime`, bytes from `base64`).
enum XMLStoreOracle {
    static let script = #"""
    import sys, json, base64, datetime, plistlib, xml.etree.ElementTree as ET
    root = ET.parse(sys.argv[1]).getroot()
    meta = plistlib.loads(ET.tostring(root.find('databaseInfo/metadata/plist')))
    hashes = sorted(meta['NSStoreModelVersionHashes'].keys())
    name_of = {h.upper(): h for h in hashes}
    objects = root.findall('object')
    entity_of = {o.get('id'): name_of.get(o.get('type'), o.get('type')) for o in objects}
    def iso(seconds):
        d = datetime.datetime(2001, 1, 1, tzinfo=datetime.timezone.utc) + datetime.timedelta(seconds=seconds)
        text = d.strftime('%Y-%m-%dT%H:%M:%S')
        if d.microsecond:
            text += ('.%06d' % d.microsecond).rstrip('0')
        return text + 'Z'
    def value(kind, text):
        if kind in ('string', 'uri'): return text
        if kind.startswith('int'): return int(text)
        if kind in ('double', 'float'): return float(text)
        if kind == 'decimal': return text.strip()
        if kind == 'bool': return text.strip() == '1'
        if kind == 'date': return iso(float(text))
        if kind == 'uuid': return text.strip().upper()
        data = base64.b64decode(text)
        return {'size': len(data), 'hexPrefix': data[:16].hex(), 'storage': 'column'}
    rows = {}
    for o in objects:
        entity = entity_of[o.get('id')]
        row = {'_entity': entity, '_pk': int(o.get('id')[1:])}
        for a in o.findall('attribute'):
            row[a.get('name')] = value(a.get('type'), a.text or '')
        for r in o.findall('relationship'):
            refs = (r.get('idrefs') or '').split()
            if r.get('type') == '1/1' and len(refs) == 1:
                row[r.get('name')] = '%s#%d' % (entity_of[refs[0]], int(refs[0][1:]))
            elif refs:
                row[r.get('name')] = ' '.join('%s#%d' % (entity_of[x], int(x[1:])) for x in refs)
        rows.setdefault(entity, []).append(row)
    print(json.dumps({'storeType': meta['NSStoreType'], 'uuid': meta['NSStoreUUID'], 'hashes': hashes, 'rows': rows}))
    """#

    static let unavailable = "python3 is not available; the XML store is not compared with xml.etree"
    static let available: Bool = {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", "import xml.etree.ElementTree, plistlib"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return false }
        process.waitUntilExit()
        return process.terminationStatus == 0
    }()

    static func read(_ store: URL) throws -> [String: Any] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script, store.path]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }
}

@Suite("Core Data XML stores through the commands")
struct XMLStoreCommandTests {
    /// A container-like folder with an XML store and a SQLite store beside it.
    static func evidence(in folder: TemporaryFolder) throws -> (root: URL, store: URL) {
        let root = folder.path("evidence")
        let support = root.appendingPathComponent("Library/Application Support")
        try FileManager.default.createDirectory(at: support, withIntermediateDirectories: true)
        let store = support.appendingPathComponent("Books.storedata")
        try XMLStoreWriter.sample(libraries: 3, booksPerLibrary: 5).write(to: store)
        let sqlite = try ShelfStores.flat(in: folder)
        try FileManager.default.moveItem(at: sqlite, to: support.appendingPathComponent("Flat.sqlite"))
        return (root, store)
    }

    @Test("scan, inspect, rows and export read it as xml.etree does; the evidence is unchanged",
          .enabled(if: XMLStoreOracle.available, Comment(rawValue: XMLStoreOracle.unavailable)))
    func readsAsPythonDoes() throws {
        let folder = try TemporaryFolder("xmlstore")
        let (root, store) = try Self.evidence(in: folder)
        let before = try FolderSnapshot(root)
        let oracle = try XMLStoreOracle.read(store)
        let oracleRows = try #require(oracle["rows"] as? [String: [[String: Any]]])

        let scan = try CLI.run(["scan", root.path, "--format", "json"])
        #expect(scan.status == 0, "\(scan.stderr)")
        let found = try #require(try CommandJSON.object(scan.stdout)["stores"] as? [[String: Any]])
        let formats = Dictionary(found.map { (($0["path"] as? String) ?? "", ($0["format"] as? String) ?? "") }, uniquingKeysWith: { a, _ in a })
        #expect(formats["Library/Application Support/Books.storedata"] == "coredata-xml", "\(formats)")
        #expect(formats["Library/Application Support/Flat.sqlite"] == "coredata", "\(formats)")
        let scanText = try CLI.run(["scan", root.path])
        #expect(scanText.stdout.contains("coredata-xml") && scanText.stdout.contains("Core Data XML store"), "\(scanText.stdout)")

        let inspect = try CLI.run(["inspect", store.path, "--format", "json"])
        #expect(inspect.status == 0, "\(inspect.stderr)")
        let atomic = try #require((try CommandJSON.object(inspect.stdout)["atomicStores"] as? [[String: Any]])?.first)
        #expect(atomic["format"] as? String == "coredata-xml")
        #expect(atomic["storeType"] as? String == oracle["storeType"] as? String)
        #expect(atomic["storeUUID"] as? String == oracle["uuid"] as? String)
        #expect((atomic["modelVersionHashes"] as? [String: Any]).map { $0.keys.sorted() } == oracle["hashes"] as? [String])
        let counts = Dictionary(((atomic["entities"] as? [[String: Any]]) ?? []).map { ($0["name"] as! String, $0["objects"] as! Int) }, uniquingKeysWith: { a, _ in a })
        #expect(counts == oracleRows.mapValues(\.count))
        #expect(try CLI.run(["inspect", root.path]).stdout.contains("Core Data XML store"))

        for (entity, expected) in oracleRows {
            let rows = try CLI.run(["rows", store.path, entity, "--format", "jsonl"])
            #expect(rows.status == 0, "\(rows.stderr)")
            let lines = rows.stdout.split(separator: "\n").map { line -> [String: Any]? in
                do { return try CommandJSON.object(line) } catch { Issue.record("\(error)"); return nil }
            }
            #expect(lines.count == expected.count)
            for (line, want) in zip(lines, expected) {
                let got = (line ?? [:]).filter { !($0.value is NSNull) }
                // Compared as canonical JSON text: Foundation on Linux does not call two JSON `true`s equal.
                func canonical(_ value: Any?) -> String? {
                    value.flatMap { try? JSONSerialization.data(withJSONObject: [$0], options: .sortedKeys) }.map { String(decoding: $0, as: UTF8.self) }
                }
                let differing = Set(got.keys).union(want.keys).filter { canonical(got[$0]) != canonical(want[$0]) }
                #expect(differing.isEmpty, "\(entity): \(differing.sorted().map { "\($0): storelens \(String(describing: got[$0])), xml.etree \(String(describing: want[$0]))" })")
            }
        }
        let table = try CLI.run(["rows", store.path, "Library"])
        #expect(table.status == 0 && table.stdout.contains("3 rows"), "\(table.stdout)\(table.stderr)")

        let out = folder.path("export.sqlite")
        let export = try CLI.run(["export", store.path, "--out", out.path])
        #expect(export.status == 0, "\(export.stderr)")
        let exported = try Connection.open(path: out.path, mode: .readOnly)
        for (entity, expected) in oracleRows {
            let n = try exported.scalar("SELECT count(*) FROM \(Identifier.quoted(entity))")
            #expect(n == .integer(Int64(expected.count)), "\(entity)")
        }
        #expect(try FolderSnapshot(root) == before)
    }

    @Test("every command that needs SQLite says it is a Core Data XML store and what reads it: exit 2, one sentence, nothing left")
    func sqliteCommandsRefuse() throws {
        let folder = try TemporaryFolder("xmlstore-refuse")
        let (root, store) = try Self.evidence(in: folder)
        let before = try FolderSnapshot(root)
        for arguments in [["wal", store.path], ["check", store.path], ["history", store.path], ["schema", store.path],
                          ["recover", store.path], ["timeline", store.path], ["rows", store.path, "Library", "--as-of", "1"],
                          ["wal", root.path, "--store", "Books.storedata"]] {
            let result = try CLI.run(arguments)
            #expect(result.status == 2, "\(arguments): \(result.status) \(result.stderr)")
            let errors = result.stderr.split(separator: "\n").filter { $0.hasPrefix("Error:") }
            #expect(errors.count == 1 && errors[0].contains("Core Data XML store"), "\(arguments): \(result.stderr)")
        }
        // Beside a SQLite store: the commands that stop at one bad store read the SQLite one, as
        // before they knew XML stores; check lists the XML store as refused, saying what reads it.
        let wal = try CLI.run(["wal", root.path, "--format", "json"])
        #expect(wal.status == 0 && wal.stdout.contains("Flat.sqlite") && !wal.stdout.contains("Books.storedata"), "\(wal.stderr)")
        let check = try CLI.run(["check", root.path])
        #expect(check.status == 2 && check.stdout.contains("Flat.sqlite") && check.stderr.contains("Books.storedata is a Core Data XML store"),
                "\(check.stdout)\(check.stderr)")
        // The file's size is checked before a byte of it is parsed.
        let size = try #require(try FileManager.default.attributesOfItem(atPath: store.path)[.size] as? Int)
        for arguments in [["inspect", store.path], ["rows", store.path, "Book"], ["export", store.path, "--out", folder.path("big.sqlite").path]] {
            let limited = try CLI.run(arguments, environment: ["STORELENS_MAX_ATOMIC_STORE_BYTES": String(size - 1)])
            #expect(limited.status == 2 && limited.stderr.contains("\(size) bytes, more than the \(size - 1)"), "\(arguments): \(limited.stderr)")
        }
        #expect(try FolderSnapshot(root) == before)
    }

    @Test("the DOCTYPE's file:// DTD is never opened: a FIFO there does not block, and strace sees no open of it")
    func dtdNeverOpened() throws {
        let folder = try TemporaryFolder("xmlstore-dtd")
        let dtd = folder.path("CoreData.dtd")
        try "<!ATTLIST object planted CDATA \"LEAKED\">\n".write(to: dtd, atomically: true, encoding: .utf8)
        let fifo = folder.path("fifo.dtd")
        #expect(mkfifo(fifo.path, 0o600) == 0)
        for target in [dtd, fifo] {
            let store = folder.path("store-\(target.lastPathComponent).storedata")
            let xml = XMLStoreWriter.sample(libraries: 1, booksPerLibrary: 1).xml()
                .replacingOccurrences(of: "file:///System/Library/DTDs/CoreData.dtd", with: "file://" + target.path)
            try xml.write(to: store, atomically: true, encoding: .utf8)
            let result = try CLI.run(["inspect", store.path, "--format", "json"], timeout: 60)
            #expect(result.status == 0 && !result.stdout.contains("LEAKED"), "\(result.stderr)")
        }
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/strace") else {
            print("strace is not installed; the open calls are not traced (the FIFO case above still holds)")
            return
        }
        let store = folder.path("store-CoreData.dtd.storedata")
        let trace = folder.path("trace.txt")
        let traced = try CLI.bounded(["-f", "-e", "trace=open,openat,creat,stat,lstat,newfstatat,statx,access,faccessat", "-o", trace.path,
                                      ProjectPaths.executable().path, "inspect", store.path],
                                     environment: ["TMPDIR": folder.url.path], timeout: 120, executable: URL(fileURLWithPath: "/usr/bin/strace"))
        let log = try String(contentsOf: trace, encoding: .utf8)
        guard traced.status == 0, log.contains(store.path) else {
            print("strace cannot trace here (\(traced.stderr.prefix(200))); the open calls are not checked")
            return
        }
        #expect(!log.contains(dtd.path), "the DTD was looked at: \(log.split(separator: "\n").filter { $0.contains(dtd.path) })")
    }
}

@Suite("Core Data binary stores through the commands")
struct BinaryStoreCommandTests {
    @Test("scan lists it as coredata-binary, inspect shows its metadata and model, rows and the SQLite commands say what they cannot do")
    func binaryStore() throws {
        let folder = try TemporaryFolder("binstore-cli")
        let root = folder.path("evidence")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let store = root.appendingPathComponent("Books.binary")
        let writer = BinaryStoreWriter(model: XMLStoreWriter.sampleModel)
        try writer.write(to: store)
        let before = try FolderSnapshot(root)

        let scan = try CLI.run(["scan", root.path, "--format", "json"])
        #expect(scan.status == 0 && scan.stdout.contains("\"coredata-binary\""), "\(scan.stdout)\(scan.stderr)")
        let inspect = try CLI.run(["inspect", store.path, "--format", "json"])
        #expect(inspect.status == 0, "\(inspect.stderr)")
        let atomic = try #require((try CommandJSON.object(inspect.stdout)["atomicStores"] as? [[String: Any]])?.first)
        #expect(atomic["storeType"] as? String == "Binary")
        #expect(atomic["storeUUID"] as? String == writer.storeUUID.uuidString)
        #expect((atomic["modelVersionHashes"] as? [String: Any])?.keys.sorted() == XMLStoreWriter.sampleModel.entities.map(\.name).sorted())
        for arguments in [["rows", store.path, "Book"], ["export", store.path, "--out", folder.path("x.sqlite").path], ["check", store.path]] {
            let result = try CLI.run(arguments)
            #expect(result.status == 2 && result.stderr.contains("Core Data binary store"), "\(arguments): \(result.stderr)")
        }
        #expect(!FileManager.default.fileExists(atPath: folder.path("x.sqlite").path))
        #expect(try FolderSnapshot(root) == before)
    }
}

extension XMLStoreCommandTests {
    @Test("an XML store inside a tar.gz and a zip is found by its first bytes and read from its extracted copy",
          .enabled(if: XMLStoreOracle.available, Comment(rawValue: XMLStoreOracle.unavailable)))
    func insideArchives() throws {
        let folder = try TemporaryFolder("xmlstore-archive")
        let (root, store) = try Self.evidence(in: folder)
        let expected = try #require(try XMLStoreOracle.read(store)["rows"] as? [String: [[String: Any]]]).mapValues(\.count)
        for (name, format, filter) in [("evidence.tar.gz", ArchiveMaker.Format.paxTar, ArchiveMaker.Filter.gzip), ("evidence.zip", .zip, .none)] {
            let archive = folder.path(name)
            try ArchiveMaker.write(try ArchiveMaker.entries(of: root), to: archive, format: format, filter: filter)
            let before = try FolderSnapshot(folder.url)
            let scan = try CLI.run(["scan", archive.path, "--format", "json"])
            #expect(scan.status == 0 && scan.stdout.contains("\"coredata-xml\""), "\(name): \(scan.stderr)")
            let inspect = try CLI.run(["inspect", archive.path, "--store", "Books.storedata", "--format", "json"])
            let atomic = try #require((try CommandJSON.object(inspect.stdout)["atomicStores"] as? [[String: Any]])?.first, "\(name): \(inspect.stderr)")
            let counts = Dictionary(((atomic["entities"] as? [[String: Any]]) ?? []).map { ($0["name"] as! String, $0["objects"] as! Int) }, uniquingKeysWith: { a, _ in a })
            #expect(counts == expected, "\(name)")
            let rows = try CLI.run(["rows", archive.path, "Book", "--store", "Books.storedata", "--format", "jsonl"])
            #expect(rows.status == 0 && rows.stdout.split(separator: "\n").count == expected["Book"], "\(name): \(rows.stderr)")
            #expect(try FolderSnapshot(folder.url) == before)
        }
    }
}

extension XMLStoreCommandTests {
    @Test("an XML store changed while inspect or rows reads it, before or after the after-hash: exit 3 naming it",
          arguments: EvidenceChange.Moment.allCases, EvidenceChange.Change.allCases)
    func changeCaught(moment: EvidenceChange.Moment, change: EvidenceChange.Change) throws {
        for command in [["inspect"], ["rows", "<store>", "Book", "--format", "jsonl"]] {
            let folder = try TemporaryFolder("xmlstore-change")
            let url = folder.path("Books.storedata")
            try XMLStoreWriter.sample().write(to: url)
            let arguments = command.count == 1 ? command + [url.path] : command.map { $0 == "<store>" ? url.path : $0 }
            try EvidenceChange.assertCaught(arguments, store: url, moment: moment, change: change)
        }
    }
}
