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
    static let targets = ["wal", "shm", "database", "binary-plist", "keyed-archive", "model-cache", "archive-path"]

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
        for url in try Self.inputs(target) {
            let data = try Data(contentsOf: url)
            switch target {
            case "wal": Self.wal(data)
            case "shm": Self.shm(data)
            case "database": Self.database(data)
            case "binary-plist": _ = try? BinaryPlist.decode(data)
            case "keyed-archive": Self.keyedArchive(data)
            case "model-cache": Self.modelCache(data)
            case "archive-path": Self.archivePath([UInt8](data))
            default: Issue.record("unknown target \(target)")
            }
        }
    }

    @Test("the Fuzz folder holds the regression inputs found so far")
    func regressionInputsArePresent() throws {
        #expect(try Self.inputs("keyed-archive").contains { $0.lastPathComponent == "self-referencing-uid" })
        #expect(try Self.inputs("archive-path").contains { $0.lastPathComponent == "slash-before-combining-mark" })
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
