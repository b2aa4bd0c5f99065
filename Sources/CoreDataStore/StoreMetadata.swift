import Foundation
import SQLiteAccess
import StoreFormats

/// The store's `Z_METADATA` row: the store UUID and the binary plist of store metadata.
public struct StoreMetadata: Equatable, Sendable {
    /// `Z_UUID`, the store's `NSStoreUUID` (not stored inside the plist).
    public let uuid: String?
    public let storeType: String?
    /// `NSPersistenceFrameworkVersion`: 479 for iOS 7-era Core Data, 1345 for SwiftData in 2024 …
    public let frameworkVersion: Int?
    public let maximumFrameworkVersion: Int?
    /// `NSStoreModelVersionIdentifiers`: `[""]` for unversioned Xcode models, `["1.0.0"]` for SwiftData.
    public let modelVersionIdentifiers: [String]
    /// `NSStoreModelVersionHashes`: entity name → 32-byte version hash.
    public let versionHashes: [String: Data]
    public let versionHashesVersion: Int?
    /// `NSStoreModelVersionHashesDigest` (base64), present from about iOS 13 on.
    public let versionHashesDigest: String?
    /// `NSStoreModelVersionChecksumKey` (base64), present from 2024 on.
    public let versionChecksum: String?
    /// `_NSAutoVacuumLevel`.
    public let autoVacuumLevel: String?
    /// The whole plist, for keys this type does not name.
    public let plist: PlistValue

    /// Reads `Z_METADATA`. The plist comes from a device: a damaged one is an error, not a crash.
    static func read(_ connection: Connection) throws -> StoreMetadata {
        let rows = try connection.rows("SELECT Z_UUID, Z_PLIST FROM Z_METADATA ORDER BY Z_VERSION LIMIT 1")
        guard let row = rows.first else {
            throw CoreDataStoreError.metadata(path: connection.path, detail: "Z_METADATA has no row")
        }
        guard let blob = row[1].data else {
            throw CoreDataStoreError.metadata(path: connection.path, detail: "Z_METADATA.Z_PLIST is not a blob")
        }
        let plist: PlistValue
        do {
            plist = try DecodedMetadataMemo.shared.plist(for: blob)
        } catch {
            throw CoreDataStoreError.metadata(path: connection.path, detail: "Z_PLIST is not a readable binary property list: \(error)")
        }
        guard let dict = plist.dictionaryValue else {
            throw CoreDataStoreError.metadata(path: connection.path, detail: "Z_PLIST holds a \(plist.typeName), not a dictionary")
        }
        var hashes: [String: Data] = [:]
        for (name, value) in dict["NSStoreModelVersionHashes"]?.dictionaryValue ?? [:] {
            if let data = value.dataValue { hashes[name] = data }
        }
        return StoreMetadata(
            uuid: row[0].string,
            storeType: dict["NSStoreType"]?.stringValue,
            frameworkVersion: dict["NSPersistenceFrameworkVersion"]?.intValue.flatMap { Int(exactly: $0) },
            maximumFrameworkVersion: dict["NSPersistenceMaximumFrameworkVersion"]?.intValue.flatMap { Int(exactly: $0) },
            modelVersionIdentifiers: (dict["NSStoreModelVersionIdentifiers"]?.arrayValue ?? []).compactMap(\.stringValue),
            versionHashes: hashes,
            versionHashesVersion: dict["NSStoreModelVersionHashesVersion"]?.intValue.flatMap { Int(exactly: $0) },
            versionHashesDigest: dict["NSStoreModelVersionHashesDigest"]?.stringValue,
            versionChecksum: dict["NSStoreModelVersionChecksumKey"]?.stringValue,
            autoVacuumLevel: dict["_NSAutoVacuumLevel"]?.stringValue,
            plist: plist)
    }
}

/// The last Z_PLIST decoded, by its bytes: commands that open one state per WAL commit (recover,
/// wal --each, timeline) read the same metadata again and again, and a device can make it huge
/// (the hostile corpus's 300,000 strings took seconds a commit). One entry, so memory stays one plist.
final class DecodedMetadataMemo: @unchecked Sendable {
    static let shared = DecodedMetadataMemo()
    private let lock = NSLock()
    // A refusal is remembered too: a plist past the decoder's limits costs the most to refuse.
    private var last: (blob: Data, result: Result<PlistValue, any Error>)?

    func plist(for blob: Data) throws -> PlistValue {
        lock.lock()
        if let last, last.blob == blob {
            lock.unlock()
            return try last.result.get()
        }
        lock.unlock()
        let result = Result<PlistValue, any Error> { try BinaryPlist.decode(blob) }
        lock.lock()
        last = (blob, result)
        lock.unlock()
        return try result.get()
    }
}
