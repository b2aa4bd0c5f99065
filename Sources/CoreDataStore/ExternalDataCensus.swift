import Acquisition
import Foundation
import SQLiteAccess

/// How a store keeps its external binary data, counted: the files of `_EXTERNAL_DATA` that came
/// with it, and the values of its external-storage attributes (references to files, bytes kept
/// inline), with the references whose file did not come.
public struct ExternalDataCensus: Sendable, Equatable {
    /// `.<name>_SUPPORT/_EXTERNAL_DATA`, relative to the store's folder.
    public let folder: String
    /// What `_EXTERNAL_DATA` is: `folder`, or `missing` when the store came without it.
    public let folderKind: ExternalFile.Kind
    /// Regular files in the folder, and their bytes.
    public let files: Int
    public let bytes: Int
    /// Entries that are not regular files (links, pipes, folders): reported, never read.
    public let otherEntries: Int
    /// `Entity.attribute` of every attribute with external storage allowed.
    public let attributes: [String]
    /// Values that name a file (`0x02` + UUID), and those whose file is not a regular file here.
    public let references: Int
    public let missingReferences: Int
    /// Values kept in the row (`0x01` + bytes).
    public let inlineValues: Int
    /// Files no value names.
    public let unreferencedFiles: Int
    /// Why values were not counted (the cached model could not be read), when they were not.
    public var note: String?

    /// Counts `map`'s external-storage attributes against `folder`; nil when the store has neither
    /// an attribute with external storage nor an `_EXTERNAL_DATA` folder.
    public static func take(_ connection: Connection, map: SchemaMap?, folder: ExternalDataFolder, decoder: ValueDecoder) throws -> ExternalDataCensus? {
        var attributes: [String] = []
        var references = 0, missing = 0, inline = 0
        var named = Set<String>()
        for e in map?.entities ?? [] where e.tableExists {
            for a in e.attributes where a.declaredBy == e.entity.name && a.attribute.allowsExternalBinaryDataStorage {
                attributes.append("\(e.entity.name).\(a.attribute.name)")
                guard let column = a.column else { continue }
                let c = Identifier.quoted(column)
                let numbers = e.entityNumbers.isEmpty ? "NULL" : e.entityNumbers.map(String.init).joined(separator: ", ")
                let from = "FROM \(Identifier.quoted(e.table)) WHERE Z_ENT IN (\(numbers))"
                inline += try connection.scalar("SELECT count(*) \(from) AND substr(\(c), 1, 1) = x'01'").int ?? 0
                try connection.prepare("SELECT \(c) \(from) AND substr(\(c), 1, 1) = x'02'").forEach { row in
                    references += 1
                    guard case .binary(let b) = decoder.decode(row[0], as: a.attribute), case .external(let file) = b.storage else { return }
                    if file.exists { named.insert(file.name) } else { missing += 1 }
                }
            }
        }
        guard !attributes.isEmpty || folder.kind != .missing else { return nil }
        let regular = folder.files
        return ExternalDataCensus(folder: folder.relativePath, folderKind: folder.kind, files: regular.count,
                                  bytes: regular.reduce(0) { $0 + ($1.size ?? 0) }, otherEntries: folder.entries.count - regular.count,
                                  attributes: attributes.sorted(), references: references, missingReferences: missing,
                                  inlineValues: inline, unreferencedFiles: regular.filter { !named.contains($0.name) }.count)
    }

    /// The census of a working copy's store, its model read from the store's cache; nil when it
    /// has no cached model and no `_EXTERNAL_DATA` folder.
    public static func take(_ copy: WorkingCopy, connection: Connection, store: CoreDataStore) throws -> ExternalDataCensus? {
        var map: SchemaMap?
        var note: String?
        do {
            map = try ModelCacheReader.read(connection).map { try SchemaMap.build(model: $0, store: store, connection: connection) }
        } catch let error as ModelError {
            // `schema` and `check` report a damaged cache; here it only means values go uncounted.
            note = "values not counted: \(error)"
        }
        var census = try take(connection, map: map, folder: copy.externalData, decoder: ValueDecoder(copy))
        census?.note = note
        return census
    }
}
