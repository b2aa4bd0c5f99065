/// Which framework most likely wrote a store last, with the facts that say so.
///
/// On disk SwiftData and Xcode-model Core Data follow the same rules, so this is a weighing
/// of hints, never a certainty; the evidence is always shown beside the verdict. Each hint says
/// only what holds for the frameworks it is given for (`StackHint`), and `StackHintTests` runs
/// every hint over every genuine store in `../shared` and fails where one contradicts the store's
/// known stack. A fact both stacks produce (an entity's class name equal to its name, no class
/// name, history without CloudKit) is no evidence and is not given.
public struct StackVerdict: Equatable, Sendable {
    public enum Stack: String, Sendable {
        case swiftData = "swiftdata"
        case coreData = "coredata"
        case unknown
    }

    public let stack: Stack
    /// One sentence per hint, each saying which way it points.
    public let evidence: [String]

    /// Weighs the hints that hold for the store's framework (`StackHint.all`).
    public static func judge(store: CoreDataStore) -> StackVerdict {
        let facts = StackHint.Facts(store: store)
        var swiftData = 0, coreData = 0
        var evidence: [String] = []
        for hint in StackHint.all {
            guard let found = hint.read(facts) else { continue }
            switch found.points {
            case .swiftData: swiftData += found.weight
            case .coreData: coreData += found.weight
            case .unknown: break
            }
            evidence.append(found.sentence)
        }
        let stack: Stack = swiftData > coreData ? .swiftData : coreData > swiftData ? .coreData : .unknown
        return StackVerdict(stack: stack, evidence: evidence)
    }
}

/// One hint about the writing stack: a fact of the store, the stack it points to, how strongly,
/// and for which frameworks it is true (docs/inspect.md lists them with the genuine stores that
/// prove each).
public struct StackHint: Sendable {
    /// SwiftData shipped with iOS 17 and macOS 14. The Core Data stores we hold from that release
    /// are framework 1340, the oldest SwiftData store 1345, and a store of framework 1145 predates
    /// SwiftData by two years: no store below this framework can have been written by SwiftData.
    public static let firstSwiftDataFramework = 1300

    /// What the hints read of a store.
    public struct Facts: Sendable {
        public let framework: Int?
        public let versionIdentifiers: [String]
        public let hasModelCache: Bool
        public let hasHistory: Bool

        public init(store: CoreDataStore) {
            framework = store.metadata.frameworkVersion
            versionIdentifiers = store.metadata.modelVersionIdentifiers
            hasModelCache = store.modelCacheBytes != nil
            hasHistory = store.history.present
        }

        /// Whether SwiftData can have written a store of this framework (unknown: yes).
        var swiftDataPossible: Bool { framework.map { $0 >= StackHint.firstSwiftDataFramework } ?? true }
    }

    public struct Found: Sendable {
        public let points: StackVerdict.Stack
        public let weight: Int
        public let sentence: String
    }

    /// A short name (docs/inspect.md's table, the tests).
    public let id: String
    /// The frameworks it holds for, in words.
    public let holdsFor: String
    public let read: @Sendable (Facts) -> Found?

    public static let all: [StackHint] = [
        StackHint(id: "framework-before-swiftdata", holdsFor: "every framework below \(firstSwiftDataFramework)") { f in
            guard let fw = f.framework, fw < firstSwiftDataFramework else { return nil }
            return Found(points: .coreData, weight: 4,
                         sentence: "NSPersistenceFrameworkVersion is \(fw), older than SwiftData (iOS 17, macOS 14): no SwiftData stack wrote it (points to Core Data)")
        },
        StackHint(id: "version-1.0.0", holdsFor: "frameworks \(firstSwiftDataFramework) and later") { f in
            guard f.versionIdentifiers == ["1.0.0"], f.swiftDataPossible else { return nil }
            return Found(points: .swiftData, weight: 3,
                         sentence: "NSStoreModelVersionIdentifiers is [\"1.0.0\"], the identifier SwiftData writes for an unversioned schema (points to SwiftData)")
        },
        StackHint(id: "version-semantic", holdsFor: "frameworks \(firstSwiftDataFramework) and later") { f in
            let ids = f.versionIdentifiers
            guard ids.count == 1, ids != ["1.0.0"], f.swiftDataPossible else { return nil }
            let parts = ids[0].split(separator: ".", omittingEmptySubsequences: false)
            guard parts.count == 3, parts.allSatisfy({ !$0.isEmpty && $0.allSatisfy(\.isNumber) }) else { return nil }
            return Found(points: .swiftData, weight: 1,
                         sentence: "NSStoreModelVersionIdentifiers is [\"\(ids[0])\"], a VersionedSchema-style version (points to SwiftData)")
        },
        StackHint(id: "version-empty", holdsFor: "every framework") { f in
            guard f.versionIdentifiers == [""] || f.versionIdentifiers.isEmpty else { return nil }
            return Found(points: .coreData, weight: 3,
                         sentence: "NSStoreModelVersionIdentifiers is \(f.versionIdentifiers.isEmpty ? "[]" : "[\"\"]"), as an Xcode model without a version identifier writes it (points to Core Data)")
        },
        StackHint(id: "version-developer", holdsFor: "every framework") { f in
            let ids = f.versionIdentifiers
            guard !ids.isEmpty, ids != [""] else { return nil }
            // SwiftData writes a VersionedSchema's version: three numbers ("1.0.0" unversioned).
            let semantic = ids.count == 1 && ids[0].split(separator: ".", omittingEmptySubsequences: false).count == 3
                && ids[0].split(separator: ".", omittingEmptySubsequences: false).allSatisfy { !$0.isEmpty && $0.allSatisfy(\.isNumber) }
            guard !semantic else { return nil }
            return Found(points: .coreData, weight: 1,
                         sentence: "NSStoreModelVersionIdentifiers is \(ids), a developer-set identifier as Xcode models have, not the three numbers of a SwiftData VersionedSchema (points to Core Data)")
        },
        StackHint(id: "no-model-cache", holdsFor: "every framework") { f in
            guard !f.hasModelCache else { return nil }
            return Found(points: .coreData, weight: 1,
                         sentence: "there is no Z_MODELCACHE table, which SwiftData-era frameworks always write (points to an older Core Data stack)")
        },
        StackHint(id: "no-history", holdsFor: "every framework") { f in
            guard !f.hasHistory else { return nil }
            return Found(points: .coreData, weight: 1,
                         sentence: "there are no persistent history tables; SwiftData always creates them (points to Core Data)")
        },
    ]
}
