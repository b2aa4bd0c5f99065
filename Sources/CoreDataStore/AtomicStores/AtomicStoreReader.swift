import Foundation
import StoreFormats

/// Reads an atomic store of either type from storelens's private copy of it.
public enum AtomicStoreReader {
    public static func read(_ url: URL, format: StoreFileFormat, displayPath: String) throws(AtomicStoreError) -> AtomicStoreContents {
        switch format {
        case .coreDataXML: return try XMLStoreReader.read(url, displayPath: displayPath)
        case .coreDataBinary: return try BinaryStoreReader.read(url, displayPath: displayPath)
        case .sqlite: throw .malformed(path: displayPath, line: nil, detail: "it is a SQLite database, read by the other commands")
        }
    }
}

/// Reads a binary store's header and metadata (`BinaryStoreHeader`: the layout is inferred from
/// decompiled Core Data, not from a real file). The metadata is a keyed archive of a property
/// list, read with storelens's own `KeyedArchive`. The objects are in a second keyed archive of
/// `NSDictionaryMapNode`s, whose fields no public source describes: they are counted as the map's
/// entries and not decoded.
public enum BinaryStoreReader {
    public static func read(_ url: URL, displayPath: String) throws(AtomicStoreError) -> AtomicStoreContents {
        let data: Data
        do {
            data = try SmallFile.contents(of: url, limit: AtomicStoreLimits.standard.maxFileBytes)
        } catch .tooLarge(let size, let limit) {
            throw .tooLarge(path: displayPath, what: "\(size) bytes", limit: limit)
        } catch {
            throw .unreadable(path: displayPath, detail: error.description)
        }
        guard let header = BinaryStoreHeader(data, fileSize: data.count) else {
            throw .malformed(path: displayPath, line: nil, detail: "its 64-byte header is cut off or names ranges outside the file")
        }
        var contents = AtomicStoreContents(format: .coreDataBinary)
        contents.databaseVersion = String(header.databaseVersion)
        contents.nextObjectID = String(header.nextPrimaryKey)
        let metadata = data.subdata(in: header.metadataRange)
        do {
            let archive = try KeyedArchive(data: metadata)
            if case .dictionary(let members) = try archive.json(try archive.top("metadata")) { contents.metadata = members }
        } catch {
            throw .malformed(path: displayPath, line: nil, detail: "its metadata (bytes \(header.metadataRange.lowerBound)–\(header.metadataRange.upperBound)) is not a readable keyed archive: \(error)")
        }
        contents.note("the objects of a binary store are not decoded by storelens (their archived layout is not documented); its metadata is shown")
        return contents
    }
}
