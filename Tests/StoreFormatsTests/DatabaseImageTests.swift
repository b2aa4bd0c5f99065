import Foundation
import StoreTestSupport
import Testing
@testable import StoreFormats

@Suite("DatabaseImage")
struct DatabaseImageTests {
    typealias Fixture = WALTestSupport.RealFixture
    typealias Builder = WALTestSupport.SyntheticWAL
    static let pageSize = 512

    /// Page 1 of a WAL-mode database with 512-byte pages and `pages` pages;
    /// `marker` fills the rest of the page so versions can be told apart.
    static func headerPage(pages: UInt32, marker: UInt8) -> [UInt8] {
        var page = DatabaseHeaderBytes.minimal(pageSize: UInt16(pageSize), write: 2, read: 2)
        page.replaceSubrange(28..<32, with: Builder.be(pages))
        return page + [UInt8](repeating: marker, count: pageSize - page.count)
    }

    /// A main file of `pages` pages: page 1 a header, page n filled with byte 0xA0 + n.
    static func mainFile(pages: Int) -> Data {
        var bytes = headerPage(pages: UInt32(pages), marker: 0xA1)
        for page in stride(from: 2, through: pages, by: 1) {
            bytes += [UInt8](repeating: 0xA0 &+ UInt8(truncatingIfNeeded: page), count: pageSize)
        }
        return Data(bytes)
    }

    /// The sample WAL (commits at frames 2, 4, 6) with real header pages for page 1.
    static func sampleWAL() -> Builder {
        var builder = WALTestSupport.SyntheticWAL.sample()
        builder.frames[0].contents = headerPage(pages: 3, marker: 0xB1)
        builder.frames[5].contents = headerPage(pages: 4, marker: 0xB6)
        return builder
    }

    static func page(_ n: Int, of image: Data) -> [UInt8] {
        [UInt8](image[image.startIndex + (n - 1) * pageSize ..< image.startIndex + n * pageSize])
    }

    static func pageBody(_ n: Int, of image: Data) -> [UInt8] {
        Array(page(n, of: image)[100...])
    }

    // MARK: Synthetic

    @Test("the latest committed frame of each page is laid over the main file")
    func overlay() throws {
        let builder = Self.sampleWAL()
        let walData = builder.data()
        let wal = WAL(data: walData)
        let main = Self.mainFile(pages: 3)
        let image = try DatabaseImage.make(mainFile: main, wal: wal, walData: walData)

        #expect(image.count == 4 * Self.pageSize)
        #expect(image[18] == 1 && image[19] == 1)
        #expect(Array(image[28..<32]) == Builder.be(4))
        #expect(Self.pageBody(1, of: image) == [UInt8](repeating: 0xB6, count: Self.pageSize - 100))
        #expect(Self.page(2, of: image) == builder.page(frameIndex: 4, page: 2))
        #expect(Self.page(3, of: image) == builder.page(frameIndex: 3, page: 3))
        #expect(Self.page(4, of: image) == builder.page(frameIndex: 5, page: 4))
    }

    @Test("an earlier commit shows the database as it stood then")
    func earlierCommit() throws {
        let builder = Self.sampleWAL()
        let walData = builder.data()
        let wal = WAL(data: walData)
        let main = Self.mainFile(pages: 3)

        let first = try DatabaseImage.make(mainFile: main, wal: wal, walData: walData, upToCommit: 1)
        #expect(first.count == 3 * Self.pageSize)
        #expect(Self.pageBody(1, of: first) == [UInt8](repeating: 0xB1, count: Self.pageSize - 100))
        #expect(Self.page(2, of: first) == builder.page(frameIndex: 2, page: 2))
        #expect(Self.page(3, of: first) == Self.page(3, of: main))  // untouched by commit 1
        #expect(Array(first[28..<32]) == Builder.be(3))

        let second = try DatabaseImage.make(mainFile: main, wal: wal, walData: walData, upToCommit: 2)
        #expect(second.count == 4 * Self.pageSize)
        #expect(Self.page(4, of: second) == [UInt8](repeating: 0, count: Self.pageSize))  // not written yet
        #expect(Self.page(3, of: second) == builder.page(frameIndex: 3, page: 3))

        let last = try DatabaseImage.make(mainFile: main, wal: wal, walData: walData, upToCommit: 3)
        #expect(last == (try DatabaseImage.make(mainFile: main, wal: wal, walData: walData)))
    }

    @Test("a commit that shrinks the database truncates the image and drops later pages")
    func shrink() throws {
        var builder = Builder()
        builder.frames = [
            .init(page: 5, commit: 0),
            .init(page: 1, commit: 2, contents: Self.headerPage(pages: 2, marker: 0xC1)),
        ]
        let walData = builder.data()
        let image = try DatabaseImage.make(mainFile: Self.mainFile(pages: 6), wal: WAL(data: walData), walData: walData)
        #expect(image.count == 2 * Self.pageSize)
        #expect(Self.page(2, of: image) == Self.page(2, of: Self.mainFile(pages: 6)))
        #expect(Array(image[28..<32]) == Builder.be(2))
    }

    @Test("the main-file-only view is the main file in rollback mode")
    func mainOnly() throws {
        let main = Self.mainFile(pages: 3)
        let image = try DatabaseImage.make(mainFile: main)
        #expect(image.count == main.count)
        #expect(image[18] == 1 && image[19] == 1)
        var expected = main
        expected[18] = 1
        expected[19] = 1
        #expect(image == expected)

        let slice = Data([7, 7] + main)[2...]
        #expect(try DatabaseImage.make(mainFile: slice) == expected)
    }

    @Test("a WAL SQLite would ignore gives the main-file-only view")
    func ignoredWAL() throws {
        var bytes = Self.sampleWAL().bytes()
        bytes[24] ^= 0x01
        let walData = Data(bytes)
        let main = Self.mainFile(pages: 3)
        let image = try DatabaseImage.make(mainFile: main, wal: WAL(data: walData), walData: walData)
        #expect(image == (try DatabaseImage.make(mainFile: main)))
        #expect(throws: DatabaseImageError.commitOutOfRange(requested: 1, available: 0)) {
            try DatabaseImage.make(mainFile: main, wal: WAL(data: walData), walData: walData, upToCommit: 1)
        }
    }

    @Test("a WAL with no commit gives the main-file-only view")
    func noCommit() throws {
        var builder = Builder()
        builder.frames = [.init(page: 2, commit: 0)]
        let main = Self.mainFile(pages: 3)
        let image = try DatabaseImage.make(mainFile: main, wal: WAL(data: builder.data()), walData: nil)
        #expect(image == (try DatabaseImage.make(mainFile: main)))
    }

    @Test("an empty main file works when the WAL holds page 1")
    func emptyMainFile() throws {
        let walData = Self.sampleWAL().data()
        let image = try DatabaseImage.make(mainFile: Data(), wal: WAL(data: walData), walData: walData)
        #expect(image.count == 4 * Self.pageSize)
        #expect(DatabaseHeader.isSQLite(image))

        var noFirstPage = Builder()
        noFirstPage.frames = [.init(page: 2, commit: 2)]
        let other = noFirstPage.data()
        #expect(throws: DatabaseImageError.imageHeaderInvalid(.notSQLite)) {
            try DatabaseImage.make(mainFile: Data(), wal: WAL(data: other), walData: other)
        }
    }

    @Test("an image written to a file a page at a time is byte for byte the one built in memory")
    func writtenMatchesMade() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("image-write-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let walData = Self.sampleWAL().data()
        let wal = WAL(data: walData)
        var shrinking = Builder()
        shrinking.frames = [.init(page: 5, commit: 0), .init(page: 1, commit: 2, contents: Self.headerPage(pages: 2, marker: 0xC1))]
        let shrinkData = shrinking.data()
        var uncommitted = Builder()
        uncommitted.frames = [.init(page: 2, commit: 0)]
        let cases: [(String, Data, WAL?, Data?, Int?)] = [
            ("main file alone", Self.mainFile(pages: 3), nil, nil, nil),
            ("commit 1", Self.mainFile(pages: 3), wal, walData, 1),
            ("commit 2, grown past the main file", Self.mainFile(pages: 3), wal, walData, 2),
            ("last commit", Self.mainFile(pages: 3), wal, walData, nil),
            ("empty main file", Data(), wal, walData, nil),
            ("a commit that shrinks the database", Self.mainFile(pages: 6), WAL(data: shrinkData), shrinkData, nil),
            ("a WAL with no commit", Self.mainFile(pages: 3), WAL(data: uncommitted.data()), nil, nil),
        ]
        for (n, (name, main, wal, data, commit)) in cases.enumerated() {
            let made = try DatabaseImage.make(mainFile: main, wal: wal, walData: data, upToCommit: commit)
            let path = folder.appendingPathComponent("\(n).sqlite").path
            try DatabaseImage.write(toNewFile: path, mainFile: main, wal: wal, walData: data, upToCommit: commit)
            #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == made, "\(name)")
            // Never over an existing file.
            #expect(throws: DatabaseImageError.self, "\(name)") {
                try DatabaseImage.write(toNewFile: path, mainFile: main, wal: wal, walData: data, upToCommit: commit)
            }
        }
        // The same errors as in memory, and no file left behind.
        let missing = folder.appendingPathComponent("bad.sqlite").path
        #expect(throws: DatabaseImageError.commitOutOfRange(requested: 9, available: 3)) {
            try DatabaseImage.write(toNewFile: missing, mainFile: Self.mainFile(pages: 3), wal: wal, walData: walData, upToCommit: 9)
        }
        var noFirstPage = Builder()
        noFirstPage.frames = [.init(page: 2, commit: 2)]
        let other = noFirstPage.data()
        #expect(throws: DatabaseImageError.imageHeaderInvalid(.notSQLite)) {
            try DatabaseImage.write(toNewFile: missing, mainFile: Data(), wal: WAL(data: other), walData: other)
        }
        #expect(!FileManager.default.fileExists(atPath: missing))
    }

    @Test("pages read from the source files: the same image; a source that cannot be read is said to be read, not written")
    func writtenFromSources() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("image-sources-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let main = Self.mainFile(pages: 3), walData = Self.sampleWAL().data()
        let wal = WAL(data: walData)
        let mainPath = folder.appendingPathComponent("main").path, walPath = folder.appendingPathComponent("wal").path
        try main.write(to: URL(fileURLWithPath: mainPath))
        try walData.write(to: URL(fileURLWithPath: walPath))
        let made = try DatabaseImage.make(mainFile: main, wal: wal, walData: walData, upToCommit: nil)
        let good = folder.appendingPathComponent("good.sqlite").path
        try DatabaseImage.write(toNewFile: good, mainFile: main, wal: wal, walData: walData, sources: (mainPath, walPath))
        #expect(try Data(contentsOf: URL(fileURLWithPath: good)) == made)

        // A source gone, or shorter than the bytes it was mapped as: a read failure on that file.
        let target = folder.appendingPathComponent("bad.sqlite").path
        let gone = folder.appendingPathComponent("gone").path
        #expect(throws: DatabaseImageError.sourceReadFailed(path: gone, code: ENOENT)) {
            try DatabaseImage.write(toNewFile: target, mainFile: main, wal: wal, walData: walData, sources: (gone, walPath))
        }
        let short = folder.appendingPathComponent("short-wal").path
        try walData.prefix(walData.count / 2).write(to: URL(fileURLWithPath: short))
        #expect(throws: DatabaseImageError.sourceReadFailed(path: short, code: EIO)) {
            try DatabaseImage.write(toNewFile: target, mainFile: main, wal: wal, walData: walData, sources: (mainPath, short))
        }
        #expect(!FileManager.default.fileExists(atPath: target), "no half-written image is left")
        let error = DatabaseImageError.sourceReadFailed(path: short, code: EIO)
        #expect(error.description.contains("could not be read") && error.description.contains(short))
    }

    @Test("typed errors for mismatched or unusable input")
    func errors() throws {
        let walData = Self.sampleWAL().data()
        let wal = WAL(data: walData)
        let main = Self.mainFile(pages: 3)

        var bigPages = DatabaseHeaderBytes.minimal(pageSize: 4096, write: 2, read: 2)
        bigPages += [UInt8](repeating: 0, count: 4096 - bigPages.count)
        #expect(throws: DatabaseImageError.pageSizeMismatch(mainFile: 4096, wal: 512)) {
            try DatabaseImage.make(mainFile: Data(bigPages), wal: wal, walData: walData)
        }
        #expect(throws: DatabaseImageError.imageTooLarge(bytes: 2048, limit: 2000)) {
            try DatabaseImage.make(mainFile: main, wal: wal, walData: walData, maxBytes: 2000)
        }
        #expect(throws: DatabaseImageError.imageTooLarge(bytes: 1536, limit: 1000)) {
            try DatabaseImage.make(mainFile: main, maxBytes: 1000)
        }
        #expect(throws: DatabaseImageError.walDataMissing) {
            try DatabaseImage.make(mainFile: main, wal: wal, walData: nil)
        }
        #expect(throws: DatabaseImageError.walDataMismatch(parsedLength: walData.count, givenLength: walData.count - 1)) {
            try DatabaseImage.make(mainFile: main, wal: wal, walData: walData.dropLast())
        }
        var otherSalt = Self.sampleWAL()
        otherSalt.salt2 = 1
        #expect(throws: DatabaseImageError.walDataMismatch(parsedLength: walData.count, givenLength: walData.count)) {
            try DatabaseImage.make(mainFile: main, wal: wal, walData: otherSalt.data())
        }
        for n in [0, 4, -1] {
            #expect(throws: DatabaseImageError.commitOutOfRange(requested: n, available: 3)) {
                try DatabaseImage.make(mainFile: main, wal: wal, walData: walData, upToCommit: n)
            }
        }
        #expect(throws: DatabaseImageError.commitOutOfRange(requested: 1, available: 0)) {
            try DatabaseImage.make(mainFile: main, upToCommit: 1)
        }
        #expect(throws: DatabaseImageError.mainFile(.notSQLite)) {
            try DatabaseImage.make(mainFile: Data(repeating: 1, count: 1024), wal: wal, walData: walData)
        }
        #expect(throws: DatabaseImageError.mainFile(.tooShort(length: 0))) {
            try DatabaseImage.make(mainFile: Data())
        }
        var version = Self.sampleWAL()
        version.formatVersion = 1
        #expect(throws: DatabaseImageError.walRejected(.unsupportedVersion(1))) {
            try DatabaseImage.make(mainFile: main, wal: WAL(data: version.data()), walData: version.data())
        }
    }

    @Test("errors describe themselves in one sentence")
    func descriptions() {
        let errors: [DatabaseImageError] = [
            .mainFile(.notSQLite), .walRejected(.unsupportedVersion(1)),
            .pageSizeMismatch(mainFile: 4096, wal: 1024), .walDataMissing,
            .walDataMismatch(parsedLength: 1, givenLength: 2), .commitOutOfRange(requested: 3, available: 1),
            .imageTooLarge(bytes: 10, limit: 5), .imageHeaderInvalid(.tooShort(length: 0)),
        ]
        for error in errors {
            #expect(error.description.hasSuffix("."))
            #expect(error.description.first?.isUppercase == true)
        }
        let mismatch = DatabaseImageError.pageSizeMismatch(mainFile: 4096, wal: 1024).description
        #expect(mismatch.contains("4096") && mismatch.contains("1024"))
    }

    @Test("random damage to main file and WAL never crashes")
    func fuzz() {
        let main = Self.mainFile(pages: 3)
        let walBytes = Self.sampleWAL().bytes()
        var random = SeededRandom(seed: 77)
        for round in 0..<500 {
            var mainBytes = [UInt8](main)
            var wal = walBytes
            for _ in 0..<(1 + Int(random.next() % 4)) {
                if round % 2 == 0 {
                    let at = Int(random.next() % UInt64(mainBytes.count))
                    mainBytes[at] = UInt8(truncatingIfNeeded: random.next())
                } else {
                    let at = Int(random.next() % UInt64(wal.count))
                    wal[at] = UInt8(truncatingIfNeeded: random.next())
                }
            }
            let mainData = Data(mainBytes.prefix(Int(random.next() % UInt64(mainBytes.count + 1))))
            let walData = Data(wal.prefix(wal.count - Int(random.next() % 600)))
            let commit: Int? = round % 3 == 0 ? nil : Int(random.next() % 5)
            do {
                let image = try DatabaseImage.make(mainFile: mainData, wal: WAL(data: walData), walData: walData,
                                                   upToCommit: commit, maxBytes: 1 << 20)
                #expect(image.count >= DatabaseHeader.length)
                #expect(image[18] == 1 && image[19] == 1)
            } catch {
                #expect(!error.description.isEmpty)
            }
        }
    }

    // MARK: Real store

    @Test("the real store with its WAL applied",
          .enabled(if: Fixture.isAvailable, Fixture.skipReason))
    func realImage() throws {
        let main = try Fixture.data("swiftdata-resources/default.store")
        let walData = try Fixture.data("swiftdata-resources/default.store-wal")
        let wal = WAL(data: walData)
        // The WAL's own frame headers, read by the test's independent reader.
        let truth = try #require(WALFrameOracle(data: walData))
        #expect(wal.commitFrames == truth.commitFrames)
        let last = try #require(wal.transactions.last)

        let image = try DatabaseImage.make(mainFile: main, wal: wal, walData: walData)
        #expect(last.databaseSizeInPages == truth.commitSizes.last)
        #expect(image.count == last.databaseSizeInPages * truth.pageSize)
        #expect(image[18] == 1 && image[19] == 1)
        let header = try DatabaseHeader(data: image)
        #expect(Int(header.pageCount) == last.databaseSizeInPages)
        #expect(!header.isWALMode)
        #expect(header.pageSize == 4096)
        for (page, frame) in wal.latestFrames() where Int(page) <= last.databaseSizeInPages {
            let at = (Int(page) - 1) * 4096
            let expected = walData[frame.pageOffset ..< frame.pageOffset + 4096]
            if page == 1 {
                // Header bytes 18/19 and 28..31 are patched; the rest is the frame's.
                #expect(image[32 ..< 4096].elementsEqual(expected.dropFirst(32)))
            } else {
                #expect(image[at ..< at + 4096].elementsEqual(expected))
            }
        }

        let mainOnly = try DatabaseImage.make(mainFile: main)
        #expect(mainOnly.count == main.count)
        #expect(mainOnly[18] == 1 && mainOnly[19] == 1)
        #expect(mainOnly[20...] == main[20...])

        let first = try DatabaseImage.make(mainFile: main, wal: wal, walData: walData, upToCommit: 1)
        #expect(first.count == truth.commitSizes[0] * truth.pageSize)
        print("real image: \(image.count) bytes (\(last.databaseSizeInPages) pages); after commit 1: \(first.count) bytes")
    }

    @Test("sqlite3 counts in the real images the rows it counts in copies of the store, with and without the WAL",
          .enabled(if: Fixture.isAvailable, Fixture.skipReason),
          .enabled(if: SQLiteShell.path != nil, "The sqlite3 command-line tool is not installed."))
    func realImageRowsWithSQLiteShell() throws {
        let main = try Fixture.data("swiftdata-resources/default.store")
        let walData = try Fixture.data("swiftdata-resources/default.store-wal")
        let wal = WAL(data: walData)
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("sltest-image-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }

        let query = """
            PRAGMA quick_check; SELECT count(*) FROM ZCOMPONENT; SELECT count(*) FROM ZCRAFTINGRECIPE;
            SELECT count(*) FROM ZITEM; SELECT count(*) FROM ACHANGE; SELECT count(*) FROM ATRANSACTION;
            SELECT count(*) FROM ATRANSACTIONSTRING; SELECT group_concat(Z_ENT || ':' || Z_MAX) FROM Z_PRIMARYKEY;
            """
        // The truth: sqlite3 itself on a copy of the store family (it applies the WAL), and on a
        // copy of the main file alone. Never the originals.
        let family = directory.appendingPathComponent("family")
        let lone = directory.appendingPathComponent("lone")
        for folder in [family, lone] { try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true) }
        try main.write(to: family.appendingPathComponent("default.store"))
        try walData.write(to: family.appendingPathComponent("default.store-wal"))
        try main.write(to: lone.appendingPathComponent("default.store"))
        let withWAL = try SQLiteShell.run(family.appendingPathComponent("default.store"), query, readOnly: false)
        let mainAlone = try SQLiteShell.run(lone.appendingPathComponent("default.store"), query, readOnly: false)
        #expect(withWAL.first == "ok" && withWAL.count == 8)
        #expect(withWAL != mainAlone, "the WAL holds rows the main file does not")

        let full = directory.appendingPathComponent("full.sqlite")
        try DatabaseImage.make(mainFile: main, wal: wal, walData: walData).write(to: full)
        #expect(try SQLiteShell.run(full, query) == withWAL)

        let alone = directory.appendingPathComponent("main.sqlite")
        try DatabaseImage.make(mainFile: main).write(to: alone)
        #expect(try SQLiteShell.run(alone, query) == mainAlone)
    }

    /// The `sqlite3` command-line tool, used only to cross-check images.
    enum SQLiteShell {
        static let path: String? = ["/usr/bin/sqlite3", "/usr/local/bin/sqlite3", "/opt/homebrew/bin/sqlite3"]
            .first { FileManager.default.isExecutableFile(atPath: $0) }

        static func run(_ database: URL, _ sql: String, readOnly: Bool = true) throws -> [String] {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: try #require(path))
            process.arguments = (readOnly ? ["-readonly"] : []) + [database.path, sql]
            let output = Pipe()
            process.standardOutput = output
            try process.run()
            let data = output.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init)
        }
    }
}
