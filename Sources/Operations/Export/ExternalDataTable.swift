import Acquisition
import Foundation
import SQLiteAccess
import StoreFormats

extension DecodedExport {
    /// `_storelens_external_data`: one row per entry of the store's `_EXTERNAL_DATA` folder as it
    /// came (name, path relative to the store's folder, kind, size, SHA-256 as read), and with
    /// `--with-external-data` the file's bytes, copied from storelens's private copy (or, for a
    /// store read in place, from the original, only ever opened for reading) in pieces, so a large
    /// file costs a piece of memory, not its size.
    enum ExternalDataTable {
        static let table = "_storelens_external_data"
        static let piece = 1 << 20

        /// Writes the table when the store came with an `_EXTERNAL_DATA` folder; returns its row count.
        static func write(_ folder: ExternalDataFolder, withData: Bool, _ connection: Connection, output: String) throws -> Int? {
            guard folder.kind != .missing else { return nil }
            try DecodedExport.output(output) {
                try connection.execute("CREATE TABLE \(table) (name TEXT NOT NULL, path TEXT NOT NULL, kind TEXT NOT NULL, size INTEGER, sha256 TEXT, data BLOB)")
            }
            let entries = folder.entries.values.sorted { $0.name < $1.name }
            for file in entries {
                let copy = withData ? folder.copy(of: file) : nil
                let size = copy != nil ? Int64(file.size ?? 0) : nil
                try DecodedExport.output(output) {
                    try connection.run("INSERT INTO \(table) VALUES (?, ?, ?, ?, ?, \(size != nil ? "zeroblob(?)" : "NULL"))",
                                       [.text(file.name), .text(file.relativePath), .text(file.kind.name),
                                        file.size.map { .integer(Int64($0)) } ?? .null, file.sha256.map(DatabaseValue.text) ?? .null]
                                       + (size.map { [DatabaseValue.integer($0)] } ?? []))
                }
                if let copy, let size { try fill(from: copy, file: file, size: size, connection, output: output) }
            }
            return entries.count
        }

        /// Streams the file into the row just inserted, checking its bytes against the hash taken
        /// when the original was read: bytes that no longer match stop the export.
        static func fill(from copy: URL, file: ExternalFile, size: Int64, _ connection: Connection, output: String) throws {
            let writer = try DecodedExport.output(output) {
                try connection.storedValue(table: table, column: "data", rowid: connection.lastInsertedRowID, writable: true)
            }
            // The copy, or the original of a store read in place: no link followed, no FIFO waited for.
            guard let (fd, _) = try? SmallFile.openRegular(copy) else {
                throw DecodedExportError.outputFailed(path: output, reason: "\(file.relativePath) cannot be read again as the regular file it was")
            }
            let handle = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
            var hash = SHA256()
            var offset = 0
            while offset < size, let bytes = try handle.read(upToCount: piece), !bytes.isEmpty {
                let chunk = bytes.prefix(Int(size) - offset)
                hash.update(chunk)
                try DecodedExport.output(output) { try writer.write(Array(chunk), at: offset) }
                offset += chunk.count
            }
            guard offset == size, hash.finalizeHex() == file.sha256 else {
                throw DecodedExportError.outputFailed(path: output, reason: "\(file.relativePath) no longer matches the file as hashed when the store was opened")
            }
        }
    }
}
