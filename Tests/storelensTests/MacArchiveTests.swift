import Foundation
import StoreBuilder
import StoreTestSupport
import Testing

/// Archives made on a Mac carry AppleDouble files: macOS `tar` (bsdtar with copyfile) writes
/// `._name` before each file with extended attributes; Finder's Compress (`ditto -c -k
/// --sequesterRsrc`) puts them under `__MACOSX/`. A `._default.store-wal` ends like a sidecar
/// but is macOS metadata: it must not be reported as an orphan -wal.
@Suite("archives made on a Mac")
struct MacArchiveTests {
    /// An AppleDouble file as copyfile(3) writes one for a file with extended attributes: the
    /// header (magic 0x00051607, version 2, "Mac OS X" filler), a Finder-info entry whose tail is
    /// the "ATTR" block holding the attributes, and an empty resource fork, 4096 bytes in all.
    static func appleDouble(attributes: [(String, Data)]) -> Data {
        var d = Data()
        func be32(_ v: UInt32) { d.append(contentsOf: withUnsafeBytes(of: v.bigEndian, Array.init)) }
        func be16(_ v: UInt16) { d.append(contentsOf: withUnsafeBytes(of: v.bigEndian, Array.init)) }
        let total = 4096, resourceForkLength = 286
        be32(0x0005_1607); be32(0x0002_0000)
        d.append(contentsOf: Array("Mac OS X        ".utf8))
        be16(2)
        be32(9); be32(50); be32(UInt32(total - 50 - resourceForkLength))          // Finder info + ATTR
        be32(2); be32(UInt32(total - resourceForkLength)); be32(UInt32(resourceForkLength))
        d.append(Data(count: 32))                                                  // Finder info
        d.append(Data(count: 2))                                                   // padding to 84
        // The ATTR header, then one entry per attribute, then their values.
        let headerStart = d.count
        var entries = Data(), values = Data()
        let entriesStart = headerStart + 36
        var entriesLength = 0
        for (name, _) in attributes { entriesLength += (11 + name.utf8.count + 1 + 3) & ~3 }
        var valueOffset = entriesStart + entriesLength
        for (name, value) in attributes {
            var e = Data()
            e.append(contentsOf: withUnsafeBytes(of: UInt32(valueOffset).bigEndian, Array.init))
            e.append(contentsOf: withUnsafeBytes(of: UInt32(value.count).bigEndian, Array.init))
            e.append(contentsOf: [0, 0, UInt8(name.utf8.count + 1)])
            e.append(contentsOf: Array(name.utf8) + [0])
            while e.count % 4 != 0 { e.append(0) }
            entries.append(e)
            values.append(value)
            valueOffset += value.count
        }
        d.append(contentsOf: Array("ATTR".utf8)); be32(0)
        be32(UInt32(total - resourceForkLength)); be32(UInt32(entriesStart + entriesLength)); be32(UInt32(values.count))
        be32(0); be32(0); be32(0); be16(0); be16(UInt16(attributes.count))
        d.append(entries); d.append(values)
        d.append(Data(count: total - resourceForkLength - d.count))
        d.append(Data(count: resourceForkLength))
        return d
    }

    static let quarantine = [("com.apple.quarantine", Data("0083;674d1c2a;Safari;".utf8))]

    /// The demo container's store family and the AppleDouble files a Mac adds for each file.
    static func entries(layout: Layout) throws -> (entries: [ArchiveMaker.Entry], store: String) {
        let folder = try TemporaryFolder("mac-source")
        try DemoContainer.write(into: folder.path("c"))
        let support = "Library/Application Support"
        var entries: [ArchiveMaker.Entry] = [.directory("c/Library"), .directory("c/\(support)")]
        let ad = appleDouble(attributes: quarantine)
        for name in ["default.store", "default.store-shm", "default.store-wal"] {
            let bytes = try Data(contentsOf: folder.path("c/\(support)/\(name)"))
            switch layout {
            case .macTar:
                entries.append(.file("c/\(support)/._\(name)", ad))   // bsdtar writes it just before the file
                entries.append(.file("c/\(support)/\(name)", bytes))
            case .finderZip:
                entries.append(.file("c/\(support)/\(name)", bytes))
                entries.append(.file("__MACOSX/c/\(support)/._\(name)", ad))
            }
        }
        return (entries, "c/\(support)/default.store")
    }

    enum Layout { case macTar, finderZip }

    @Test("._default.store-wal in a tar from macOS tar and under __MACOSX/ in a Finder zip: macOS metadata, not orphan sidecars",
          arguments: [Layout.macTar, .finderZip])
    func appleDoubleEntries(_ layout: Layout) throws {
        let folder = try TemporaryFolder("mac-archive")
        let (entries, store) = try Self.entries(layout: layout)
        let archive = folder.path(layout == .macTar ? "pulled.tar.gz" : "pulled.zip")
        try ArchiveMaker.write(entries, to: archive, format: layout == .macTar ? .paxTar : .zip, filter: layout == .macTar ? .gzip : .none)
        let r = try CLI.run(["scan", archive.path, "--format", "json"])
        #expect(r.status == 0, "\(r.stderr)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
        let orphans = try #require(json["orphans"] as? [[String: Any]])
        #expect(orphans.isEmpty, "no orphan sidecars: \(orphans)")
        let stores = try #require(json["stores"] as? [[String: Any]])
        #expect(stores.compactMap { $0["path"] as? String } == [archive.path + "!" + store])
        let skipped = try #require(json["skipped"] as? [[String: Any]])
        let metadata = skipped.filter { ($0["reason"] as? String)?.hasPrefix("macOS metadata") == true }
        #expect(metadata.count == 3, "\(skipped)")
        #expect(metadata.contains { ($0["path"] as? String)?.hasSuffix("._default.store-wal") == true })
        let text = try CLI.run(["scan", archive.path])
        #expect(!text.stdout.contains("orphan"))
        #expect(text.stdout.contains("macOS metadata (an AppleDouble file holding the Finder info and extended attributes of default.store-wal"))
    }

    @Test("the same AppleDouble files in a folder (an archive unpacked on a non-Mac file system) are labelled the same way")
    func appleDoubleInFolder() throws {
        let folder = try TemporaryFolder("mac-folder")
        try DemoContainer.write(into: folder.path("c"))
        let support = folder.path("c/Library/Application Support")
        for name in ["default.store-wal", "default.store-shm"] {
            try Self.appleDouble(attributes: Self.quarantine).write(to: support.appendingPathComponent("._\(name)"))
        }
        let r = try CLI.run(["scan", folder.path("c").path])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(!r.stdout.contains("orphan"), "\(r.stdout)")
        #expect(r.stdout.contains("Library/Application Support/._default.store-wal: macOS metadata"))
        // A -wal that is not AppleDouble, with no database, is still an orphan.
        try Data(count: 32).write(to: support.appendingPathComponent("lost.store-wal"))
        let orphan = try CLI.run(["scan", folder.path("c").path])
        #expect(orphan.stdout.contains("lost.store-wal (wal"))
    }
}
