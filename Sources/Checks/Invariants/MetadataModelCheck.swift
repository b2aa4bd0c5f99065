import Acquisition
import CoreDataStore
import Findings
import Foundation
import SQLiteAccess
import StoreFormats

extension StoreChecker {
    /// Version hashes in Z_METADATA name the entities of the model that last wrote metadata; the
    /// cached model names those of the model that last opened the store. They should agree.
    public static func metadataModelMismatch(_ o: OpenedStore) -> [Finding] {
        guard o.model.source == .cache else { return [] }
        let hashed = Set(o.store.metadata.versionHashes.keys)
        let cached = Set(o.model.entities.map(\.name))
        guard !hashed.isEmpty, hashed != cached else { return [] }
        return [Finding(
            id: Check.metadataModelMismatch.rawValue, severity: .warning, store: o.displayPath, entity: nil,
            message: "Z_METADATA's version hashes and the cached model name different entities.",
            evidence: ["onlyInMetadata": .list(hashed.subtracting(cached).sorted().map(EvidenceValue.string)),
                       "onlyInModelCache": .list(cached.subtracting(hashed).sorted().map(EvidenceValue.string))],
            explanation: "The model that wrote the metadata differs from the one cached: the next stack to open the store will migrate it.",
            suggestion: "Make every stack that opens the store use the same entities (same names and properties).")]
    }
}
