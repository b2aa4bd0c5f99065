import Acquisition
import CoreDataStore
import Foundation
import OutputFiles
import SQLiteAccess
import StoreFormats
import WALForensics

/// `recover --out FILE`: the recovered versions as a plain SQLite file that datasette, DB Browser
/// or pandas open directly: one table per entity, a row per version, the provenance columns
/// (prefixed `_`, which no Core Data attribute name starts with) and one column per property,
/// added as properties appear. Values are stored as `rows` shows them: numbers and text natively,
/// dates as ISO 8601 text, UUIDs and `Entity#pk` as text, bytes and archives as their summary.
///
/// The file is created new (never overwritten, never through a symbolic link) and written in one
/// transaction; a failure removes it.
public final class RecoveredDatabase {
    public let path: String
    let connection: Connection
    private var tables: [String: Table] = [:]
    private var usedTableNames: Set<String> = []
    public private(set) var versions = 0

    struct Table {
        let name: String
        var columns: [String: String] = [:]
        var usedColumns: Set<String>
    }

    static let provenance = ["_store", "_pk", "_state", "_confidence", "_first_commit", "_last_commit", "_source_file",
                             "_written_by_commit", "_first_frame", "_commit_frame", "_ended_by", "_end_commit",
                             "_transactions", "_sources", "_uncertain_columns", "_finds", "_finds_omitted"]

    /// Creates `path` (it must not exist) and opens it for writing.
    public static func create(at path: String) throws -> RecoveredDatabase {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            if errno == EEXIST { throw WALForensicsError.outputExists(path: path) }
            throw WALForensicsError.outputFile(OutputFileFailure(path: path, code: errno))
        }
        close(fd)
        do {
            let connection = try Connection.open(path: path, mode: .readWrite)
            // No journal beside the output: a failed write removes the whole file instead.
            try connection.execute("PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; BEGIN")
            return RecoveredDatabase(path: path, connection: connection)
        } catch {
            unlink(path)
            throw error
        }
    }

    init(path: String, connection: Connection) {
        self.path = path
        self.connection = connection
    }

    /// The tables written so far, by entity.
    public var tableNames: [String] { tables.values.map(\.name).sorted() }

    public func add(store: String, _ v: RecordVersion) throws {
        do {
            var table = try self.table(for: v.entity)
            var names: [String] = []
            var values: [DatabaseValue] = []
            for value in v.values {
                let column = try column(value.name, in: &table)
                if names.contains(column) { continue }
                names.append(column)
                values.append(Self.stored(value.value))
            }
            tables[v.entity] = table
            let runs = v.sources.map { s in
                "{\"file\":\(Self.jsonString(s.file)),\"writtenByCommit\":\(s.writtenBy),\"firstFrame\":\(s.firstFrame.map(String.init) ?? "null"),"
                    + "\"commitFrame\":\(s.commitFrame.map(String.init) ?? "null"),\"firstCommit\":\(s.firstCommit),\"lastCommit\":\(s.lastCommit),"
                    + "\"endedBy\":\(s.endedBy.map { "{\"change\":\"\($0.kind.rawValue)\",\"commit\":\($0.commit)}" } ?? "null")}"
            }
            let first = v.sources.first
            let provenance: [DatabaseValue] = [
                .text(store), v.pkIsKnown ? .integer(v.pk) : .null, .text(v.state.rawValue), .text(v.confidence.rawValue),
                first.map { .integer(Int64($0.firstCommit)) } ?? .null, v.sources.last.map { .integer(Int64($0.lastCommit)) } ?? .null,
                .text(first?.file ?? v.finds.first?.file ?? (v.historyDeletes.isEmpty ? "" : store)),
                first.map { .integer(Int64($0.writtenBy)) } ?? .null, first?.firstFrame.map { .integer(Int64($0)) } ?? .null,
                first?.commitFrame.map { .integer(Int64($0)) } ?? .null,
                v.endingKind.map { .text($0.rawValue) } ?? .null, v.endedBy.map { .integer(Int64($0.commit)) } ?? .null,
                v.endingKind.map { _ in .text(v.endingTransactions.map { String($0.id) }.joined(separator: " ")) } ?? .null,
                .text("[" + runs.joined(separator: ",") + "]"),
                v.uncertainColumns.isEmpty ? .null : .text(v.uncertainColumns.joined(separator: " ")),
                .text("[" + v.finds.map { f in
                    "{\"file\":\(Self.jsonString(f.file)),\"origin\":\"\(f.origin.rawValue)\",\"area\":\"\(f.area.rawValue)\",\"page\":\(f.page),"
                        + "\"offset\":\(f.offset),\"fileOffset\":\(f.fileOffset),\"frame\":\(f.frame.map(String.init) ?? "null"),\"confidence\":\"\(f.confidence.rawValue)\"}"
                }.joined(separator: ",") + "]"),
                .integer(Int64(v.findsOmitted)),
            ]
            let all = Self.provenance + names
            try connection.run("INSERT INTO \(Identifier.quoted(table.name)) (\(all.map(Identifier.quoted).joined(separator: ", "))) VALUES ("
                               + all.map { _ in "?" }.joined(separator: ", ") + ")", provenance + values)
            versions += 1
        } catch let error as SQLiteError {
            // Our output failed, not the evidence: said as such, never as a damaged store.
            abandon()
            throw Self.failure(path, error)
        } catch {
            abandon()
            throw error
        }
    }

    /// Commits and closes the file.
    public func finish() throws {
        do {
            try connection.execute("COMMIT")
        } catch {
            abandon()
            throw Self.failure(path, error)
        }
    }

    /// SQLite failing on the output file: a full or failing disk is ours (`outputFile`, never the
    /// working folder's: the output is where the user asked), anything else as SQLite said.
    static func failure(_ path: String, _ error: SQLiteError) -> WALForensicsError {
        if let code = OutputFileFailure.code(of: error) { return .outputFile(OutputFileFailure(path: path, code: code)) }
        return .outputFailed(path: path, reason: error.message)
    }

    /// Removes the half-written file.
    public func abandon() {
        _ = try? connection.execute("ROLLBACK")
        unlink(path)
    }

    func table(for entity: String) throws -> Table {
        if let table = tables[entity] { return table }
        // A table name SQLite reserves, or one another entity took (names differ only in case).
        let base = Self.identifier(entity)
        var name = base.lowercased().hasPrefix("sqlite_") || base.isEmpty ? "entity_" + base : base
        var n = 2
        while usedTableNames.contains(name.lowercased()) {
            name = "\(base)_\(n)"
            n += 1
        }
        usedTableNames.insert(name.lowercased())
        let columns = Self.provenance.map { Identifier.quoted($0) + ($0 == "_pk" || $0 == "_finds_omitted" || $0.hasSuffix("_commit") || $0.hasSuffix("_frame") ? " INTEGER" : " TEXT") }
        try connection.execute("CREATE TABLE \(Identifier.quoted(name)) (\(columns.joined(separator: ", ")))")
        let table = Table(name: name, usedColumns: Set(Self.provenance))
        tables[entity] = table
        return table
    }

    /// The column for a property, added on first use (without a type, so values keep their own).
    func column(_ property: String, in table: inout Table) throws -> String {
        if let column = table.columns[property] { return column }
        let base = Self.identifier(property)
        var name = base.isEmpty ? "column" : base
        var n = 2
        while table.usedColumns.contains(name.lowercased()) {
            name = "\(base)_\(n)"
            n += 1
        }
        try connection.execute("ALTER TABLE \(Identifier.quoted(table.name)) ADD COLUMN \(Identifier.quoted(name))")
        table.usedColumns.insert(name.lowercased())
        table.columns[property] = name
        return name
    }

    /// A name from the store as a name SQLite can take: SQL text ends at a NUL, so a NUL inside an
    /// entity or property name (the store is untrusted) becomes U+FFFD; everything else is quoted.
    static func identifier(_ name: String) -> String {
        name.contains("\u{0}") ? name.replacingOccurrences(of: "\u{0}", with: "\u{FFFD}") : name
    }

    static func stored(_ value: FieldValue) -> DatabaseValue {
        if let scalar = value.sqliteScalar { return scalar }
        switch value {
        // Over a megabyte: its summary, as recover's JSON has it.
        case .longText: return .text(ValueJSON.json(value).rendered(pretty: false))
        default: return .text(ValueRendering.cell(value))
        }
    }

    static func jsonString(_ s: String) -> String {
        var out = ""
        JSONValue.escape(s, into: &out)
        return out
    }
}
