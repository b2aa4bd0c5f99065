/// Which framework most likely wrote a store last, with the facts that say so.
///
/// On disk SwiftData and Xcode-model Core Data follow the same rules, so this is a weighing
/// of hints, never a certainty; the evidence is always shown beside the verdict.
public struct StackVerdict: Equatable, Sendable {
    public enum Stack: String, Sendable {
        case swiftData = "swiftdata"
        case coreData = "coredata"
        case unknown
    }

    public let stack: Stack
    /// One sentence per hint, each saying which way it points.
    public let evidence: [String]

    /// Weighs the hints in a store's metadata, its cached model's class names and its tables.
    ///
    /// - Parameter classNames: entity name → `NSClassNameForEntity` from the cached model, when decoded.
    public static func judge(store: CoreDataStore, classNames: [String: String]?) -> StackVerdict {
        var swiftData = 0
        var coreData = 0
        var evidence: [String] = []
        let identifiers = store.metadata.modelVersionIdentifiers
        let isSemanticVersion = identifiers.count == 1 && identifiers[0].split(separator: ".").count == 3
            && identifiers[0].split(separator: ".").allSatisfy { $0.allSatisfy(\.isNumber) }
        // The version identifier is the strongest hint: SwiftData writes "1.0.0" (or its
        // VersionedSchema's version), Xcode models write "" unless someone set one.
        if identifiers == ["1.0.0"] {
            swiftData += 3
            evidence.append("NSStoreModelVersionIdentifiers is [\"1.0.0\"], the identifier SwiftData writes for an unversioned schema (points to SwiftData)")
        } else if isSemanticVersion {
            swiftData += 1
            evidence.append("NSStoreModelVersionIdentifiers is [\"\(identifiers[0])\"], a VersionedSchema-style version (points to SwiftData)")
        } else if identifiers == [""] || identifiers.isEmpty {
            coreData += 3
            evidence.append("NSStoreModelVersionIdentifiers is \(identifiers.isEmpty ? "[]" : "[\"\"]"), as an Xcode model without a version identifier writes it (points to Core Data)")
        } else {
            coreData += 1
            evidence.append("NSStoreModelVersionIdentifiers is \(identifiers), a developer-set identifier as Xcode models have (points to Core Data)")
        }

        if store.modelCacheBytes == nil {
            coreData += 1
            evidence.append("there is no Z_MODELCACHE table, which SwiftData-era frameworks always write (points to an older Core Data stack)")
        }
        if let classNames, !classNames.isEmpty {
            let userEntities = store.entities.filter { $0.kind == .user }.map(\.name)
            let generic = userEntities.filter { classNames[$0] == nil || classNames[$0] == "NSManagedObject" }
            let sameAsEntity = userEntities.filter { classNames[$0] == $0 }
            if !generic.isEmpty {
                coreData += 2
                evidence.append("the cached model gives \(generic.count) entit\(generic.count == 1 ? "y" : "ies") the class NSManagedObject or no class, which SwiftData never does (points to Core Data)")
            } else if sameAsEntity.count == userEntities.count {
                swiftData += 1
                evidence.append("every entity's class name in the cached model equals its entity name, as SwiftData's @Model classes do (points to SwiftData)")
            } else {
                coreData += 1
                evidence.append("class names in the cached model differ from entity names, as with Xcode models' class prefixes (points to Core Data)")
            }
        }
        if store.history.present && store.cloudKitTables.isEmpty {
            swiftData += 1
            evidence.append("persistent history tables are present without CloudKit mirroring; SwiftData always turns history on, Core Data only when asked (points to SwiftData)")
        } else if !store.history.present {
            coreData += 1
            evidence.append("there are no persistent history tables; SwiftData always creates them (points to Core Data)")
        }

        let stack: Stack = swiftData > coreData ? .swiftData : coreData > swiftData ? .coreData : .unknown
        return StackVerdict(stack: stack, evidence: evidence)
    }
}
