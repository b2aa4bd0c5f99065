import Foundation
import StoreTestSupport
import Testing
@testable import StoreFormats

@Suite("DatabaseHeader")
struct DatabaseHeaderTests {
    typealias Fixture = WALTestSupport.RealFixture

    @Test("the SwiftData store is in WAL mode with 4096-byte pages",
          .enabled(if: Fixture.isAvailable, Fixture.skipReason))
    func realSwiftDataStore() throws {
        let data = try Fixture.data("swiftdata-resources/default.store")
        let header = try DatabaseHeader(data: data)
        // SQLite itself on a copy of the main file alone (no -wal), and the raw bytes at the
        // offsets of the file format, read here.
        let sqlite = try SQLiteOracle(copying: try Fixture.url("swiftdata-resources/default.store"), wal: .none)
        func pragma(_ name: String) throws -> (int: Int?, string: String?) {
            let value = try sqlite.scalar("PRAGMA \(name)")
            return (value.int, value.string)
        }
        #expect(header.isWALMode)
        #expect(header.writeVersion == 2 && header.readVersion == 2)
        #expect(header.pageSize == (try pragma("page_size").int))
        #expect(Int(header.pageCount) == (try pragma("page_count").int))
        #expect(Int(header.pageCount) * header.pageSize == data.count)
        #expect(header.pageCountIsValid)
        #expect(try pragma("encoding").string == header.textEncodingName)
        #expect(header.textEncoding == 1)
        #expect(Int(header.schemaFormat) == data[44..<48].reduce(0) { $0 << 8 | Int($1) })
        #expect(Int(header.schemaCookie) == (try pragma("schema_version").int))
        #expect(Int(header.freelistPageCount) == (try pragma("freelist_count").int))
        // auto_vacuum 2 = incremental: both header flags set.
        #expect(try pragma("auto_vacuum").int == 2)
        #expect(header.autoVacuum)
        #expect(header.incrementalVacuum)
        let version = data[96..<100].reduce(0) { $0 << 8 | Int($1) }
        #expect(Int(header.sqliteVersionNumber) == version)
        #expect(DatabaseHeader.isSQLite(data))
        print("""
            default.store header: change counter \(header.fileChangeCounter), pages \(header.pageCount), \
            schema cookie \(header.schemaCookie), freelist \(header.freelistPageCount), \
            largest root \(header.largestRootPage), SQLite \(header.sqliteVersionNumber)
            """)
    }

    @Test("the 2014 Core Data store is in rollback-journal mode",
          .enabled(if: Fixture.isAvailable, Fixture.skipReason))
    func realCoreDataStore() throws {
        let data = try Fixture.data("coredata-2014/Model.sqlite")
        let header = try DatabaseHeader(data: data)
        #expect(!header.isWALMode)
        #expect(header.writeVersion == 1 && header.readVersion == 1)
        #expect(Int(header.pageCount) * header.pageSize == data.count)
    }

    @Test("fields are read big-endian at their offsets")
    func fieldOffsets() throws {
        var bytes = DatabaseHeaderBytes.minimal(pageSize: 1024, write: 2, read: 2)
        func put(_ value: UInt32, at offset: Int) {
            bytes.replaceSubrange(offset..<offset + 4, with: WALTestSupport.SyntheticWAL.be(value))
        }
        bytes[20] = 12
        put(0x0102_0304, at: 24)
        put(77, at: 28)
        put(5, at: 32)
        put(6, at: 36)
        put(40, at: 40)
        put(4, at: 44)
        put(9, at: 52)
        put(2, at: 56)
        put(0xDEAD_BEEF, at: 60)
        put(1, at: 64)
        put(0x4344_4154, at: 68)
        put(0x0102_0304, at: 92)
        put(3_040_001, at: 96)
        let header = try DatabaseHeader(data: Data(bytes))
        #expect(header.pageSize == 1024)
        #expect(header.isWALMode)
        #expect(header.reservedBytesPerPage == 12)
        #expect(header.fileChangeCounter == 0x0102_0304)
        #expect(header.pageCount == 77)
        #expect(header.pageCountIsValid)
        #expect(header.firstFreelistTrunk == 5)
        #expect(header.freelistPageCount == 6)
        #expect(header.schemaCookie == 40)
        #expect(header.schemaFormat == 4)
        #expect(header.largestRootPage == 9)
        #expect(header.autoVacuum)
        #expect(header.textEncoding == 2)
        #expect(header.textEncodingName == "UTF-16le")
        #expect(header.userVersion == 0xDEAD_BEEF)
        #expect(header.incrementalVacuum)
        #expect(header.applicationID == 0x4344_4154)
        #expect(header.versionValidFor == 0x0102_0304)
        #expect(header.sqliteVersionNumber == 3_040_001)
    }

    @Test("WAL mode needs both version bytes to be 2")
    func walModeNeedsBoth() throws {
        #expect(try !DatabaseHeader(data: Data(DatabaseHeaderBytes.minimal(write: 2, read: 1))).isWALMode)
        #expect(try !DatabaseHeader(data: Data(DatabaseHeaderBytes.minimal(write: 1, read: 2))).isWALMode)
        #expect(try DatabaseHeader(data: Data(DatabaseHeaderBytes.minimal(write: 2, read: 2))).isWALMode)
    }

    @Test("page size 1 means 65536", arguments: [(UInt16(1), 65536), (512, 512), (32768, 32768)])
    func pageSizes(raw: UInt16, expected: Int) throws {
        #expect(try DatabaseHeader(data: Data(DatabaseHeaderBytes.minimal(pageSize: raw))).pageSize == expected)
    }

    @Test("impossible page sizes are rejected", arguments: [UInt16(0), 2, 256, 1000, 4097, 65535])
    func invalidPageSizes(raw: UInt16) {
        #expect(throws: DatabaseHeaderError.invalidPageSize(raw: raw)) {
            try DatabaseHeader(data: Data(DatabaseHeaderBytes.minimal(pageSize: raw)))
        }
    }

    @Test("short input and missing magic are typed errors")
    func errors() {
        #expect(throws: DatabaseHeaderError.tooShort(length: 0)) { try DatabaseHeader(data: Data()) }
        #expect(throws: DatabaseHeaderError.tooShort(length: 99)) {
            try DatabaseHeader(data: Data(DatabaseHeaderBytes.minimal().prefix(99)))
        }
        var bytes = DatabaseHeaderBytes.minimal()
        bytes[15] = 0x20
        #expect(throws: DatabaseHeaderError.notSQLite) { try DatabaseHeader(data: Data(bytes)) }
        #expect(throws: DatabaseHeaderError.notSQLite) {
            try DatabaseHeader(data: Data(repeating: 0, count: 4096))
        }
    }

    @Test("isSQLite sniffs only the magic")
    func sniff() {
        #expect(DatabaseHeader.isSQLite(Data("SQLite format 3\0".utf8)))
        #expect(DatabaseHeader.isSQLite(Data(DatabaseHeaderBytes.minimal())))
        #expect(!DatabaseHeader.isSQLite(Data("SQLite format 3".utf8)))
        #expect(!DatabaseHeader.isSQLite(Data("bplist00".utf8)))
        #expect(!DatabaseHeader.isSQLite(Data()))
        let slice = Data([0, 0] + DatabaseHeaderBytes.minimal())[2...]
        #expect(DatabaseHeader.isSQLite(slice))
    }

    @Test("a Data slice with a non-zero start index parses")
    func slice() throws {
        let data = Data([9, 9, 9] + DatabaseHeaderBytes.minimal(pageSize: 8192))[3...]
        #expect(try DatabaseHeader(data: data).pageSize == 8192)
    }

    @Test("errors describe themselves in one sentence")
    func descriptions() {
        for error in [DatabaseHeaderError.tooShort(length: 4), .notSQLite, .invalidPageSize(raw: 3)] {
            #expect(error.description.hasSuffix("."))
            #expect(error.description.first?.isUppercase == true)
        }
    }

    @Test("random and truncated input never crashes")
    func fuzz() {
        var random = SeededRandom(seed: 100)
        for round in 0..<2000 {
            let length = Int(random.next() % 140)
            var bytes = (0..<length).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            if round % 2 == 0 {
                bytes = Array((DatabaseHeader.magic + bytes).prefix(max(length, 16)))
            }
            do {
                let header = try DatabaseHeader(data: Data(bytes))
                #expect(header.pageSize >= 512 && header.pageSize <= 65536)
            } catch {
                #expect(!error.description.isEmpty)
            }
        }
    }
}
