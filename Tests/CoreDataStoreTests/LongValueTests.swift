import Acquisition
import CoreDataStore
import Foundation
import SQLiteAccess
import StoreBuilder
import StoreFormats
import StoreTestSupport
import Testing

/// Values over `LongValue.window` read in pieces: what the pieces give is what SQLite's whole
/// value gives, and the rows around them are the rows an ordinary read gives.
@Suite("long values are read in pieces, as the whole value decodes")
struct LongValueTests {
    /// A text of about 3 MB whose 1 MiB pieces split multi-byte characters, with an invalid byte
    /// and an unfinished sequence at the very end.
    static let textSQL = "'long ' || replace(printf('%.*c', 230000, 'a'), 'a', '€😀é\"x,' || char(10)) || CAST(x'ff' AS TEXT) || 'tail' || CAST(x'e282' AS TEXT)"

    /// The library store with long values: Book 1's summary, Audiobook 2's inline cover (3 MB of
    /// bytes after the 0x01 marker), the borrower's street (a composite element) and preferences
    /// (3 MB that are no archive). Returns the store, opened through the evidence path.
    static func store(_ folder: TemporaryFolder, session: EvidenceSession) throws -> OpenedStore {
        let url = folder.path("library.sqlite")
        try LibraryStore.write(url)
        let connection = try Connection.open(path: url.path, mode: .readWrite)
        // The columns, from the store as written (a session of its own: a session keeps its copies).
        let first = try EvidenceSession()
        defer { first.scratch.remove() }
        let opened = try OpenedStore.open(try first.workingCopy(of: url), displayPath: url.path)
        func column(_ entity: String, _ attribute: String) throws -> String {
            let mapping = try #require(opened.map.entity(named: entity)?.attributes.first { $0.attribute.name == attribute })
            if let column = mapping.column { return column }
            return try #require(mapping.elements.first?.column)
        }
        try connection.execute("UPDATE ZMEDIA SET \(try column("Book", "summary")) = \(textSQL) WHERE Z_PK = 1")
        try connection.execute("UPDATE ZMEDIA SET \(try column("Media", "cover")) = CAST(x'01' || randomblob(3000000) AS BLOB) WHERE Z_PK = 2")
        try connection.execute("UPDATE ZBORROWER SET \(try column("Borrower", "address")) = 'street ' || \(textSQL), \(try column("Borrower", "preferences")) = randomblob(3000000) WHERE Z_PK = 1")
        try connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return try OpenedStore.open(try session.workingCopy(of: url), displayPath: url.path)
    }

    static func whole(_ text: LongText) throws -> String {
        var out = ""
        try text.forEachPiece { out += $0 }
        return out
    }

    @Test("a long text's pieces join to SQLite's text; its fingerprint is the SHA-256 of that text; blobs are summarised from SQLite's bytes")
    func piecesAreTheWhole() throws {
        let folder = try TemporaryFolder("long-values")
        let session = try EvidenceSession()
        defer { session.scratch.remove() }
        let opened = try Self.store(folder, session: session)
        let connection = opened.connection
        let expected = try #require(try connection.scalar("SELECT \(Self.textSQL)").string)
        #expect(expected.utf8.count > 2 * LongValue.window)

        let media = try LibraryFixture.rows(opened, "Media")
        #expect(media.map(\.pk) == (try connection.rows("SELECT Z_PK FROM ZMEDIA ORDER BY Z_PK").compactMap { $0[0].int64 }))
        guard case .longText(let summary)? = media.first(where: { $0.pk == 1 })?["summary"] else {
            Issue.record("Book 1's summary is not a long text: \(String(describing: media.first?["summary"]))")
            return
        }
        #expect(try Self.whole(summary) == expected, "the pieces join to SQLite's text, decoded as a whole")
        #expect(expected.utf8.starts(with: summary.prefix.utf8) && summary.prefix.utf8.count > LongValue.prefixLength - 4, "the first 64 KiB, cut at a character")
        #expect(summary.fingerprint?.sha256 == SHA256.hex(Data(expected.utf8)))
        #expect(summary.fingerprint?.count == expected.utf8.count)

        let coverColumn = try #require(opened.map.entity(named: "Media")?.attribute(named: "cover")?.column)
        let cover = try #require(try connection.scalar("SELECT substr(\(coverColumn), 2, 16) FROM ZMEDIA WHERE Z_PK = 2").data)
        if case .binary(let b)? = media.first(where: { $0.pk == 2 })?["cover"] {
            #expect(b.storage == .inline && b.size == 3_000_000 && b.prefixHex == ValueDecoder.hex(cover))
        } else {
            Issue.record("Audiobook 2's cover is not an inline binary")
        }

        let borrower = try #require(try LibraryFixture.rows(opened, "Borrower").first)
        guard case .composite(let elements)? = borrower["address"], case .longText(let street)? = elements.first?.value else {
            Issue.record("the street is not a long text: \(String(describing: borrower["address"]))")
            return
        }
        #expect(try Self.whole(street) == "street " + expected)
        guard case .binary(let preferences)? = borrower["preferences"] else {
            Issue.record("the preferences are not bytes: \(String(describing: borrower["preferences"]))")
            return
        }
        #expect(preferences.size == 3_000_000)
    }

    @Test("with long values, rows come in key order with --limit and --where as SQLite selects them; one field's scan gives the same value")
    func resumedScan() throws {
        let folder = try TemporaryFolder("long-values-scan")
        let session = try EvidenceSession()
        defer { session.scratch.remove() }
        let opened = try Self.store(folder, session: session)
        let entity = try opened.entity("Media")
        let reader = RowReader(map: opened.map, entity: entity, decoder: opened.decoder)
        let numbers = entity.entityNumbers.map(String.init).joined(separator: ", ")
        for limit in [0, 1, 2, 3, nil] as [Int?] {
            var pks: [Int64] = []
            try reader.forEach(opened.connection, limit: limit) { pks.append($0.pk) }
            let expected = try opened.connection.rows("SELECT Z_PK FROM ZMEDIA WHERE Z_ENT IN (\(numbers)) ORDER BY Z_PK LIMIT \(limit ?? -1)").compactMap { $0[0].int64 }
            #expect(pks == expected, "limit \(String(describing: limit))")
            var scanned: [Int64] = []
            try reader.scan(opened.connection, limit: limit)?.forEach { scanned.append($0.pk) }
            #expect(scanned == expected, "scan, limit \(String(describing: limit))")
        }
        var titled: [Int64] = []
        try reader.forEach(opened.connection, filters: [try reader.filter("title=Dune (audio)")]) { titled.append($0.pk) }
        #expect(titled == [2])

        let index = try #require(reader.fields.firstIndex { $0.name == "summary" && $0.declaredBy == "Book" })
        var values: [Int64: FieldValue?] = [:]
        try reader.values(of: index, opened.connection)?.forEach(keys: 1 ... 3) { values[$0] = $1 }
        #expect(values.keys.sorted() == [1, 2, 3])
        guard case .longText(let text)?? = values[1] else {
            Issue.record("one field's scan did not give the long text: \(String(describing: values[1]))")
            return
        }
        #expect(text.byteCount == (try opened.connection.scalar("SELECT length(CAST(\(Self.textSQL) AS BLOB))").int))
    }
}
