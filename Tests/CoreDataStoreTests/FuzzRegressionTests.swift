import Acquisition
import CoreDataStore
import Deflate
import Foundation
import StoreFormats
import StoreTestSupport
import Testing

/// `make fuzz` (scripts/fuzz.sh) runs libFuzzer on the readers of device bytes. Every input that
/// once crashed one is kept in Fuzz/regressions/<target>/ and replayed here through the same calls
/// as the fuzz entry point in Fuzz/, together with the hand-made seeds of Fuzz/corpus/<target>/.
/// (The manifest parser's inputs are replayed in CoexistenceTests.)
@Suite("fuzz regression inputs")
struct FuzzRegressionTests {
    static let targets = ["wal", "shm", "database", "binary-plist", "keyed-archive", "model-cache", "archive-path", "backup-path", "gzip-archive"]

    static func inputs(_ target: String) throws -> [URL] {
        let fuzz = ProjectPaths.root().appendingPathComponent("Fuzz")
        var urls: [URL] = []
        for folder in ["regressions", "corpus"] {
            let dir = fuzz.appendingPathComponent(folder).appendingPathComponent(target)
            guard let names = try? FileManager.default.contentsOfDirectory(atPath: dir.path) else { continue }
            urls += names.filter { !$0.hasPrefix(".") }.sorted().map { dir.appendingPathComponent($0) }
        }
        return urls
    }

    @Test("every regression input and seed goes through its reader without a crash", arguments: targets)
    func replay(_ target: String) throws {
        let urls = try Self.inputs(target)
        // A target with nothing to replay would pass without reading a byte.
        #expect(!urls.isEmpty, "Fuzz/corpus/\(target) and Fuzz/regressions/\(target) are empty: commit a seed")
        for url in urls {
            let data = try Data(contentsOf: url)
            switch target {
            case "wal": Self.wal(data)
            case "shm": Self.shm(data)
            case "database": Self.database(data)
            case "binary-plist": _ = try? BinaryPlist.decode(data)
            case "keyed-archive": Self.keyedArchive(data)
            case "model-cache": Self.modelCache(data)
            case "archive-path": Self.archivePath([UInt8](data))
            case "backup-path": try Self.backupPath([UInt8](data))
            case "gzip-archive": try Self.gzipArchive(data)
            default: Issue.record("unknown target \(target)")
            }
        }
    }

    @Test("the Fuzz folder holds the regression inputs found so far")
    func regressionInputsArePresent() throws {
        #expect(try Self.inputs("keyed-archive").contains { $0.lastPathComponent == "self-referencing-uid" })
        #expect(try Self.inputs("archive-path").contains { $0.lastPathComponent == "slash-before-combining-mark" })
    }

    /// What each regression input must give now that its bug is fixed: not only "no crash".
    /// A regression file without an entry here fails, so a new one must say what it proves.
    static let regressionOutcomes: [String: @Sendable (Data) throws -> Void] = [
        "keyed-archive/self-referencing-uid": { data in
            let archive = try KeyedArchive(data: data)
            let failures = archive.topReferences.values.compactMap { reference -> KeyedArchiveError? in
                do { _ = try archive.json(reference); return nil } catch let error as KeyedArchiveError { return error } catch { return nil }
            }
            #expect(failures.contains { if case .cycle = $0 { true } else { false } }, "\(failures)")
        },
        "archive-path/dotdot-slash-combining-acute": { data in
            let name = ArchivePath.decode(rawBytes: [UInt8](data))
            #expect(ArchivePath.sanitize(name) == .rejected(reason: "path traversal (\"..\")"))
        },
        "archive-path/slash-before-combining-mark": { data in
            // The name has no ".." component: it must stay, split on every "/" byte.
            let bytes = [UInt8](data)
            guard case .safe(let components, _) = ArchivePath.sanitize(ArchivePath.decode(rawBytes: bytes)) else {
                Issue.record("a name without \"..\" was rejected"); return
            }
            let slashes = bytes.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: true).count
            #expect(components.count == slashes, "\(components)")
        },
        "backup-path/combining-mark-domain": { data in
            // A domain that is a lone combining mark (U+0301) is one plain name: the file lands
            // beneath the folder. The fuzz target's own check compared Characters, and "/" followed
            // by the mark is one Character, so it called a file inside the folder "outside".
            let bytes = [UInt8](data)
            let domain = ArchivePath.decode(rawBytes: Array(bytes[1..<(1 + Int(bytes[0]))]))
            #expect(domain == "\u{301}")
            try FuzzRegressionTests.backupPath(bytes)
            let inside = "/tmp/t/" + domain + "/b"
            #expect(!inside.hasPrefix("/tmp/t/") && inside.utf8.starts(with: "/tmp/t/".utf8))
        },
    ]

    @Test("every regression input gives the outcome its fix promises")
    func regressionOutcomesHold() throws {
        let root = ProjectPaths.root().appendingPathComponent("Fuzz/regressions")
        var seen = 0
        for target in Self.targets {
            let dir = root.appendingPathComponent(target)
            for name in ((try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []).sorted() where !name.hasPrefix(".") {
                let key = "\(target)/\(name)"
                guard let outcome = Self.regressionOutcomes[key] else {
                    Issue.record("Fuzz/regressions/\(key) has no expected outcome in FuzzRegressionTests.regressionOutcomes")
                    continue
                }
                try outcome(try Data(contentsOf: dir.appendingPathComponent(name)))
                seen += 1
            }
        }
        #expect(seen == Self.regressionOutcomes.count, "an expected outcome names a file that is gone")
    }

    // MARK: The seeds read as what they are

    static func seed(_ path: String) throws -> Data {
        try Data(contentsOf: ProjectPaths.root().appendingPathComponent("Fuzz/corpus").appendingPathComponent(path))
    }

    static func bigEndian32(_ data: Data, _ offset: Int) -> UInt32 {
        data.dropFirst(offset).prefix(4).reduce(0) { $0 << 8 | UInt32($1) }
    }

    /// Facts read from the seed bytes by hand (frame headers, header fields), not by the readers.
    @Test("the WAL seeds: every frame of the intact one is valid; a flipped byte ends the valid prefix at its frame")
    func walSeeds() throws {
        let intact = try Self.seed("wal/three-commits-512")
        let pageSize = Int(Self.bigEndian32(intact, 8))
        let frameSize = 24 + pageSize
        let frames = (intact.count - 32) / frameSize
        let commits = (0..<frames).filter { Self.bigEndian32(intact, 32 + $0 * frameSize + 4) != 0 }.count
        let wal = WAL(data: intact)
        #expect(wal.frames.count == frames)
        #expect(wal.transactions.count == commits)
        #expect(commits > 1)

        let damaged = try Self.seed("wal/bad-checksum-frame-2")
        let firstDifference = try #require(zip(intact, damaged).enumerated().first { $0.element.0 != $0.element.1 }?.offset)
        #expect(WAL(data: damaged).frames.count == (firstDifference - 32) / frameSize)
        #expect(WAL(data: try Self.seed("wal/header-only")).frames.isEmpty)
    }

    @Test("the -shm seed indexes the WAL seed's frames; a header alone still parses")
    func shmSeeds() throws {
        let wal = WAL(data: try Self.seed("wal/three-commits-512"))
        let index = try SharedMemoryIndex(data: try Self.seed("shm/matching-three-commits"))
        #expect(Int(index.mxFrame) == wal.frames.count)
        #expect(index.agrees(with: wal))
        let headerOnly = try SharedMemoryIndex(data: try Self.seed("shm/header-only"))
        #expect(headerOnly.mxFrame == index.mxFrame)
    }

    @Test("the database seeds: page size and count from the header bytes; a cut header is refused")
    func databaseSeeds() throws {
        let data = try Self.seed("database/two-pages-512")
        let header = try DatabaseHeader(data: data)
        let rawPageSize = Int(data[16]) << 8 | Int(data[17])
        #expect(header.pageSize == rawPageSize)
        #expect(Int(header.pageCount) == data.count / rawPageSize)
        #expect(throws: DatabaseHeaderError.tooShort(length: 99)) { try DatabaseHeader(data: try Self.seed("database/header-page-cut").prefix(99)) }
    }

    @Test("the plist and model-cache seeds decode; the model cache names the demo store's entities")
    func plistAndModelSeeds() throws {
        for name in ["binary-plist/store-metadata", "binary-plist/demo-z-metadata"] {
            guard case .dictionary = try BinaryPlist.decode(try Self.seed(name)) else {
                Issue.record("\(name) is not a dictionary"); continue
            }
        }
        let model = try ModelCacheReader.decode(try Self.seed("model-cache/demo-todo-model"), path: "seed")
        // The seed was taken from the bundled demo store; its Z_PRIMARYKEY, read with SQLite, is the oracle.
        let store = ProjectPaths.root().appendingPathComponent("Fixtures/demo-container/Library/Application Support/default.store")
        let names = try Self.sqlite3Column(store, "SELECT Z_NAME FROM Z_PRIMARYKEY WHERE Z_ENT < 16000 ORDER BY Z_NAME")
        #expect(model.entities.map(\.name).sorted() == names)
        _ = try KeyedArchive(data: try Self.seed("keyed-archive/demo-todo-model"))
    }

    // MARK: Found by fuzzing

    /// fuzz-keyed-archive, stack overflow: a bare `$objects` entry that is a UID pointing at itself
    /// (or a long chain of bare UIDs) made `KeyedArchive.json` recurse until the stack ran out,
    /// because only objects with a `$class` had the cycle and depth guards.
    @Test("a bare UID that points at itself is a cycle, not a stack overflow")
    func selfReferencingBareUID() throws {
        let archive = try KeyedArchive(plist: Self.archivePlist([.string("$null"), .uid(1)]))
        #expect(throws: KeyedArchiveError.cycle(KeyedArchive.Reference(uid: 1))) { try archive.json(try archive.root) }

        // 5,000 bare UIDs, each pointing at the next: deep, not cyclic.
        var objects: [PlistValue] = [.string("$null")]
        for i in 1...5_000 { objects.append(i == 5_000 ? .string("end") : .uid(UInt64(i + 1))) }
        let chain = try KeyedArchive(plist: Self.archivePlist(objects))
        #expect(throws: KeyedArchiveError.tooDeep) { try chain.json(try chain.root) }
        // A short chain renders to its end.
        let short = try KeyedArchive(plist: Self.archivePlist([.string("$null"), .uid(2), .uid(3), .string("end")]))
        #expect(try short.json(try short.root) == .string("end"))

        // The input the fuzzer found: a model cache whose archive holds such an entry.
        let found = try Data(contentsOf: ProjectPaths.root().appendingPathComponent("Fuzz/regressions/keyed-archive/self-referencing-uid"))
        let parsed = try KeyedArchive(data: found)
        let results = parsed.topReferences.values.map { reference in Result { try parsed.json(reference) } }
        #expect(results.contains { if case .failure = $0 { true } else { false } })
    }

    static func archivePlist(_ objects: [PlistValue]) -> PlistValue {
        .dictionary(["$archiver": .string("NSKeyedArchiver"), "$version": .integer(100_000),
                     "$top": .dictionary(["root": .uid(1)]), "$objects": .array(objects)])
    }

    /// One column from the sqlite3 shell, run on a copy of `file` (SQLite never opens the original).
    static func sqlite3Column(_ file: URL, _ sql: String) throws -> [String] {
        let folder = try TemporaryFolder("seed-oracle")
        let copy = folder.path("copy.sqlite")
        for suffix in ["", "-wal"] where FileManager.default.fileExists(atPath: file.path + suffix) {
            try FileManager.default.copyItem(atPath: file.path + suffix, toPath: copy.path + suffix)
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["sqlite3", "-batch", "-noheader", copy.path, sql]
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        return String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init)
    }

    // MARK: The fuzz entry points' calls (Fuzz/<Name>Fuzz.swift)

    static func wal(_ data: Data) {
        let wal = WAL(data: data)
        #expect(wal.frames.count <= max(0, wal.totalFrameSlots))
        #expect(wal.lastCommitFrame <= wal.frames.count)
        for n in 0...(wal.transactions.count + 1) {
            _ = wal.commitFrame(ofCommit: n)
            _ = wal.latestFrames(upToCommit: n == 0 ? nil : n)
        }
        _ = try? DatabaseImage.make(mainFile: Data(), wal: wal, walData: data, maxBytes: 8 << 20)
        if wal.transactions.count > 0, wal.databaseSizeInPages <= 256,
           let tracker = try? PageOwnershipTracker(mainFile: Data(), wal: wal, walData: data) {
            while tracker.advance() {}
            _ = tracker.pageUses()
        }
    }

    static func shm(_ data: Data) {
        guard let index = try? SharedMemoryIndex(data: data) else {
            #expect(data.count < SharedMemoryIndex.headerLength)
            return
        }
        _ = index.agrees(with: WAL(data: data.dropFirst(SharedMemoryIndex.headerLength)))
    }

    static func database(_ data: Data) {
        guard let header = try? DatabaseHeader(data: data) else { return }
        _ = try? DatabaseImage.make(mainFile: data, maxBytes: 8 << 20)
        if data.count / header.pageSize <= 512, let tracker = try? PageOwnershipTracker(mainFile: data) {
            _ = tracker.pageUses()
        }
    }

    static func keyedArchive(_ data: Data) {
        if let archive = try? KeyedArchive(data: data, limits: .init(maxInputBytes: 1 << 20, maxObjects: 100_000, maxDepth: 64)) {
            for reference in archive.topReferences.values {
                _ = try? archive.json(reference, depthLimit: 64, maxValues: 10_000)
                _ = try? archive.json(reference)
                _ = try? archive.stringKeyedDictionary(reference)
            }
        }
        if let blob = try? RawDeflate.deflate(data, level: 1) {
            _ = try? ModelCacheReader.decode(blob, path: "fuzz")
        }
    }

    static func modelCache(_ data: Data) {
        if let out = try? RawDeflate.inflate(data, maxOutputBytes: 1 << 16) { #expect(out.count <= 1 << 16) }
        _ = try? ModelCacheReader.decode(data, path: "fuzz")
    }

    static func archivePath(_ bytes: [UInt8]) {
        let decoded = ArchivePath.decode(rawBytes: bytes)
        for name in [decoded, String(decoding: bytes, as: UTF8.self)] {
            guard case .safe(let components, _) = ArchivePath.sanitize(name) else { continue }
            for c in components {
                // Scalars, not Characters: the file system splits on the byte.
                let scalars = c.unicodeScalars
                #expect(!c.isEmpty && !scalars.elementsEqual(".".unicodeScalars) && !scalars.elementsEqual("..".unicodeScalars))
                #expect(!scalars.contains("/") && !scalars.contains("\0"), "\(Array(c.utf8))")
            }
        }
    }

    static func backupPath(_ bytes: [UInt8]) throws {
        guard let first = bytes.first else { return }
        let split = min(bytes.count, 1 + Int(first))
        let domain = ArchivePath.decode(rawBytes: Array(bytes[1..<split]))
        let relative = ArchivePath.decode(rawBytes: Array(bytes[split...]))
        guard case .safe(let components, _) = ArchivePath.sanitize(domain: domain, relativePath: relative) else { return }
        #expect(components.first == domain && components.allSatisfy(PrivateTree.isPlain))
        let folder = try TemporaryFolder("backup-path")
        let tree = folder.path("t")
        try FileManager.default.createDirectory(at: tree, withIntermediateDirectories: false)
        let file = try PrivateTree(root: tree).createFile(components)
        close(file.fd)
        #expect(file.url.resolvingSymlinksInPath().path.utf8.starts(with: (tree.resolvingSymlinksInPath().path + "/").utf8))
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.url.path) == ["t"])
    }

    static func gzipArchive(_ data: Data) throws {
        let folder = try TemporaryFolder("gzip-seed")
        let input = folder.path("input.tar.gz"), scratch = folder.path("scratch")
        try data.write(to: input)
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: false)
        let session = try EvidenceSession(scratchParent: scratch)
        var limits = ArchiveLimits()
        limits.maxExtractedBytes = 32 << 20
        _ = try? InputResolver(session: session, limits: limits).inventory(of: input.path)
        session.scratch.remove()
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.path).isEmpty)
    }

    /// The gzip seeds are what their names say: the whole ones read without damage, each damaged
    /// one (cut, CRC-32, length, bytes after the end) is reported as damaged, the entry named.
    @Test("the gzip-archive seeds: whole ones read clean, each kind of damage is found",
          .enabled(if: GzipDecoder.available.contains(.isal), "ISA-L is not built in; libarchive's filter does not check the trailer"))
    func gzipSeeds() throws {
        for name in ["model.tar.gz", "two-members.tar.gz", "cut-inside-entry.tar.gz", "bad-crc.tar.gz", "bad-isize.tar.gz", "trailing-bytes.tar.gz"] {
            let folder = try TemporaryFolder("gzip-seed-facts")
            let input = folder.path(name)
            try Self.seed("gzip-archive/\(name)").write(to: input)
            let session = try EvidenceSession(scratchParent: folder.url)
            defer { session.scratch.remove() }
            let inventory = try InputResolver(session: session).inventory(of: input.path)
            let whole = name == "model.tar.gz" || name == "two-members.tar.gz"
            #expect((inventory.damage == nil) == whole, "\(name): \(inventory.damage ?? "no damage")")
            if !whole { #expect(inventory.damage?.contains("Model.sqlite") == true, "\(name) names the entry: \(inventory.damage ?? "")") }
        }
    }

    /// fuzz-archive-path, path traversal: "/" followed by a combining mark is one Character, so
    /// splitting names on the Character "/" kept "../\u{301}x" as one "safe" component, which the
    /// file system reads as ".." and "\u{301}x" — one level out of the extraction folder.
    @Test("a slash before a combining mark is still a separator", arguments: [
        "../\u{301}escaped.store", "a/../\u{301}b.store", "Library/..\u{301}/x.store", "/\u{301}../etc/passwd",
    ])
    func slashBeforeCombiningMark(_ name: String) {
        switch ArchivePath.sanitize(name) {
        case .rejected:
            #expect(name.unicodeScalars.split(separator: "/").contains { $0.elementsEqual("..".unicodeScalars) })
        case .safe(let components, _):
            #expect(!components.contains { $0.unicodeScalars.contains("/") }, "\(components)")
            #expect(!components.contains { $0.unicodeScalars.elementsEqual("..".unicodeScalars) })
        }
        #expect(ArchivePath.sanitize("../\u{301}escaped.store") == .rejected(reason: "path traversal (\"..\")"))
    }
}
