import Acquisition
import CoreDataStore
import Findings
import Foundation
import StoreFormats

/// External binary storage against the files that came with the store: references whose file
/// is not in `_EXTERNAL_DATA`, and files there that no row references.
extension StoreChecker {
    func externalData() throws -> [Finding] {
        var result: [Finding] = []
        // Names referenced by any row, kept only when the folder has them (bounded by the folder).
        let folder = opened.decoder.externalData
        var referenced = Set<String>()
        for e in opened.map.entities where e.tableExists {
            for a in e.attributes where a.declaredBy == e.entity.name && a.attribute.allowsExternalBinaryDataStorage {
                guard let column = a.column else { continue }
                // Only rows whose value is an external reference (marker byte 0x02) are read.
                var missing: [Int] = []
                // Every missing file's name, once: what an examiner asks the device for again.
                var missingFiles: [String] = []
                var seenFiles = Set<String>()
                var count = 0
                let statement = try connection.prepare("SELECT Z_PK, \(q(column)) FROM \(q(e.table)) WHERE Z_ENT IN (\(inList(e.entityNumbers))) AND substr(\(q(column)), 1, 1) = x'02' ORDER BY Z_PK")
                try statement.forEach { row in
                    guard case .binary(let b) = opened.decoder.decode(row[1], as: a.attribute), case .external(let file) = b.storage else { return }
                    if folder?.entries[file.name] != nil { referenced.insert(file.name) }
                    guard !file.exists else { return }
                    count += 1
                    if missing.count < limit, let pk = row[0].int { missing.append(pk) }
                    if seenFiles.insert(file.name).inserted { missingFiles.append(file.name) }
                }
                guard count > 0 else { continue }
                result.append(finding(.externalDataMissing, .error, entity: e.entity.name,
                                      "\(e.entity.name).\(a.attribute.name): \(plural(count, "reference")) to files missing from _EXTERNAL_DATA.",
                                      evidence: ["attribute": .string(a.attribute.name), "pks": .keys(missing), "count": .int(count),
                                                 "files": .list(missingFiles.map(EvidenceValue.string))],
                                      explanation: "The data lives in files beside the store; without them the app reads nil or crashes.",
                                      suggestion: "Copy the store's .<name>_SUPPORT folder off the device too."))
            }
        }
        if let folder, let unreferenced = unreferencedFiles(folder, referenced: referenced) { result.append(unreferenced) }
        return result
    }

    /// Regular files of `_EXTERNAL_DATA` that no reference names: data Core Data has not yet
    /// removed (of a deleted or changed record, or a save that did not finish), or files that
    /// came from another copy of the store.
    func unreferencedFiles(_ folder: ExternalDataFolder, referenced: Set<String>) -> Finding? {
        let files = folder.files.filter { !referenced.contains($0.name) }
        guard !files.isEmpty else { return nil }
        let bytes = files.reduce(0) { $0 + ($1.size ?? 0) }
        return finding(.externalDataUnreferenced, .info, entity: nil,
                       "\(plural(files.count, "file")) in _EXTERNAL_DATA (\(bytes) bytes) are referenced by no row.",
                       evidence: ["count": .int(files.count), "bytes": .int(bytes), "folder": .string(folder.relativePath),
                                  "files": .list(files.map { .string($0.name) })],
                       explanation: "Core Data removes a file after the row that named it is deleted or changed; files left over can hold the data of deleted or earlier versions of records, or come from another copy of the store.",
                       suggestion: "Read them with `export --with-external-data` (each file's bytes and SHA-256 as read).")
    }
}
