import Acquisition
import CoreDataStore
import Findings
import Foundation
import SQLiteAccess
import StoreFormats

/// The model a migration goes to: an Xcode model, a compiled model from an app bundle, or the
/// cached model of a newer store.
public struct MigrationTarget: Sendable {
    public let model: StoreModel
    /// How to name it: the path given, and what was read there.
    public let name: String
    /// `NSStoreModelVersionHashes` when the target is a store (nil for a model file).
    public let versionHashes: [String: Data]?

    public init(model: StoreModel, name: String, versionHashes: [String: Data]? = nil) {
        self.model = model
        self.name = name
        self.versionHashes = versionHashes
    }

    /// Reads `path`: `.xcdatamodeld`/`.xcdatamodel` (or its `contents`/`elements`), `.momd`/`.mom`,
    /// else a store (file, container, archive, backup) whose cached model is the target. A store
    /// is read like any evidence: through `session`, on a working copy.
    public static func load(_ path: String, session: EvidenceSession, select: String? = nil,
                            options: OpenOptions = OpenOptions(), limits: ArchiveLimits = ArchiveLimits()) throws -> MigrationTarget {
        let url = URL(fileURLWithPath: path)
        switch url.pathExtension {
        case "xcdatamodeld", "xcdatamodel":
            return MigrationTarget(model: try XcodeModelReader.read(url), name: path)
        case "momd", "mom":
            return MigrationTarget(model: try CompiledModelReader.read(url), name: path)
        default:
            if ["contents", "elements"].contains(url.lastPathComponent) {
                return MigrationTarget(model: try XcodeModelReader.read(url), name: path)
            }
        }
        let stores = try session.stores(from: [path], select: select, options: options, limits: limits)
        guard stores.count == 1, let store = stores.first else {
            throw MigrationError.targetAmbiguous(path: path, stores: stores.map(\.displayPath))
        }
        let opened = try OpenedStore.open(store.copy, displayPath: store.displayPath)
        guard opened.model.source == .cache else { throw MigrationError.targetWithoutModel(path: store.displayPath) }
        return MigrationTarget(model: opened.model, name: store.displayPath, versionHashes: opened.store.metadata.versionHashes)
    }
}

public enum MigrationError: Error, CustomStringConvertible, Equatable {
    case targetAmbiguous(path: String, stores: [String])
    case targetWithoutModel(path: String)

    public var description: String {
        switch self {
        case .targetAmbiguous(let path, let stores):
            return "The target \(path) holds \(stores.count) stores (\(stores.prefix(6).joined(separator: ", "))); give one store, or an Xcode or compiled model, with --to."
        case .targetWithoutModel(let path):
            return "The target store \(path) has no cached model (Z_MODELCACHE), so the model it was written with is unknown; give the Xcode model (.xcdatamodeld) or compiled model (.momd) with --to instead."
        }
    }
}

/// One hop of a migration: the stores at one model version, what changes on the way to the
/// target, and what their data says about each change.
public struct MigrationHop: Sendable {
    public let number: Int
    /// The stores at this version (display paths).
    public let stores: [String]
    public let versionIdentifiers: [String]
    /// A short digest of the stores' version hashes, naming the version.
    public let versionDigest: String
    /// Where the old model came from (the first store's cached model, or --model).
    public let modelOrigin: String
    public let changes: [ModelChange]
    /// Every change as a finding (classification, rule, rows and keys), errors first.
    public let findings: [Finding]
    /// Whether the hop fails, or drops data, on these stores: any finding is an error.
    public var failsOrLosesData: Bool { findings.any(atOrAbove: .error) }
}

public struct MigrationPlan: Sendable {
    public let target: MigrationTarget
    public let hops: [MigrationHop]
    public var findings: [Finding] { hops.flatMap(\.findings) }
    public var failsOrLosesData: Bool { hops.contains { $0.failsOrLosesData } }
}

/// Plans the migration of old stores to a target model, hop by hop: one hop per distinct model
/// version among the stores (by `NSStoreModelVersionHashes` and identifiers), each change
/// classified by `MigrationRule` and checked against the stores' rows.
public enum MigrationPlanner {
    /// Plans from stores already open (each a working copy, never an original).
    public static func plan(_ stores: [OpenedStore], to target: MigrationTarget, limit: Int = 20) throws -> MigrationPlan {
        var groups: [(key: String, stores: [OpenedStore])] = []
        for store in stores {
            let key = versionKey(store)
            if let i = groups.firstIndex(where: { $0.key == key }) { groups[i].stores.append(store) } else { groups.append((key, [store])) }
        }
        var hops: [MigrationHop] = []
        for (index, group) in groups.enumerated() {
            hops.append(try hop(number: index + 1, stores: group.stores, digest: group.key, target: target, limit: limit))
        }
        return MigrationPlan(target: target, hops: hops)
    }

    /// Plans from inputs on disk (store files, containers, archives, backups), for a test in an
    /// app's CI: every store is hashed, copied and read on its copy, and the originals are
    /// checked unchanged before this returns. `oldModel` is used for stores without a cached model.
    public static func plan(inputs: [String], to target: String, oldModel: URL? = nil, limit: Int = 20) throws -> MigrationPlan {
        let session = try EvidenceSession()
        defer { session.scratch.remove() }
        let destination = try MigrationTarget.load(target, session: session)
        let acquired = try session.stores(from: inputs)
        let opened = try acquired.map { try OpenedStore.open($0.copy, displayPath: $0.displayPath, xcodeModel: oldModel) }
        let plan = try plan(opened, to: destination, limit: limit)
        try session.finish()
        return plan
    }

    /// The model version of a store: its version hashes and identifiers, digested.
    static func versionKey(_ store: OpenedStore) -> String {
        let m = store.store.metadata
        var hasher = SHA256()
        for (name, hash) in m.versionHashes.sorted(by: { $0.key < $1.key }) {
            hasher.update(Data(name.utf8)); hasher.update(Data([0])); hasher.update(hash)
        }
        hasher.update(Data(m.modelVersionIdentifiers.sorted().joined(separator: "\u{0}").utf8))
        if m.versionHashes.isEmpty {
            // Very old stores keep no version hashes: the model's own shape tells the versions apart.
            for e in store.model.entities.sorted(by: { $0.name < $1.name }) {
                let properties = e.attributes.map { "\($0.name):\($0.type.code):\($0.isOptional)" } + e.relationships.map { "\($0.name)>\($0.destination)" }
                hasher.update(Data((e.name + "|" + properties.sorted().joined(separator: ",") + "\u{0}").utf8))
            }
        }
        return String(hasher.finalizeHex().prefix(12))
    }

    static func hop(number: Int, stores: [OpenedStore], digest: String, target: MigrationTarget, limit: Int) throws -> MigrationHop {
        let first = stores[0]
        let identifiers = first.store.metadata.modelVersionIdentifiers
        let version = identifiers.filter { !$0.isEmpty }.joined(separator: ", ")
        let label = version.isEmpty ? "version \(digest)" : "version \(version) (\(digest))"
        var findings: [Finding] = []
        guard first.model.source != .inferred else {
            findings.append(Finding(id: "old-model-unknown", severity: .error, store: first.displayPath, entity: nil,
                                    message: "The stores at \(label) have no cached model, so what changes on the way to \(target.name) cannot be told.",
                                    evidence: ["stores": .list(stores.map { .string($0.displayPath) })],
                                    explanation: "A model inferred from the SQL schema guesses names, types and optionality; comparing it with the target would report differences that are not there.",
                                    suggestion: "Give the Xcode model these stores were written with: `--model Model.xcdatamodeld`."))
            return MigrationHop(number: number, stores: stores.map(\.displayPath), versionIdentifiers: identifiers, versionDigest: digest,
                                modelOrigin: first.model.origin, changes: [], findings: findings)
        }
        let changes = ModelDiff.changes(from: first.model, to: target.model)
        for change in changes {
            var answers: [(store: String, answer: DataAnswer)] = []
            var unanswered: String?
            if let question = change.question {
                for store in stores {
                    do {
                        answers.append((store.displayPath, try StoreQuestions(opened: store, limit: limit).answer(question)))
                    } catch let error as StoreQuestions.Unanswerable {
                        unanswered = error.description
                    } catch let error as SQLiteError {
                        // A table SQLite cannot read here (a private tokenizer) leaves the question open, not the run.
                        guard !(error.isCorrupt || error.isNotADatabase) else { throw error }
                        unanswered = "SQLite cannot read it here (\(error.message))"
                    }
                }
            }
            findings.append(finding(change, answers: answers, unanswered: unanswered, hop: number, label: label, stores: stores))
        }
        if changes.isEmpty {
            findings.append(Finding(id: "no-model-changes", severity: .info, store: stores.count == 1 ? first.displayPath : nil, entity: nil,
                                    message: "The stores at \(label) already have the target's model: nothing to migrate.",
                                    evidence: ["hop": .int(number)], explanation: "Every entity, property and constraint matches \(target.name).", suggestion: nil))
        }
        return MigrationHop(number: number, stores: stores.map(\.displayPath), versionIdentifiers: identifiers, versionDigest: digest,
                            modelOrigin: first.model.origin, changes: changes, findings: findings.bySeverity)
    }

    /// Rules whose outcome the data decides: the hop passes as lightweight on stores where no row is affected.
    static let dataDecides: Set<String> = [
        MigrationRule.attributeAddedRequired.id, MigrationRule.attributeMadeRequired.id, MigrationRule.uniqueAdded.id,
        MigrationRule.relationshipAddedRequired.id, MigrationRule.relationshipMadeRequired.id,
    ]

    static func finding(_ change: ModelChange, answers: [(store: String, answer: DataAnswer)], unanswered: String?,
                        hop: Int, label: String, stores: [OpenedStore]) -> Finding {
        let rule = change.rule
        let rows = answers.reduce(0) { $0 + $1.answer.rows }
        let hit = answers.first { $0.answer.rows > 0 }
        let checked = change.question != nil && unanswered == nil
        let severity: Finding.Severity
        switch rule.classification {
        case .lightweight:
            severity = rows > 0 ? .warning : .info
        case .custom:
            severity = dataDecides.contains(rule.id) && checked && rows == 0 ? .warning : .error
        case .lossy:
            severity = checked && rows == 0 ? .warning : .error
        }
        var evidence: [String: EvidenceValue] = [
            "hop": .int(hop), "classification": .string(rule.classification.rawValue), "rule": .string(rule.change),
        ]
        for (key, value) in change.facts { evidence[key] = .string(value) }
        if let p = change.property { evidence["property"] = .string(p) }
        var message = change.summary
        if change.question != nil {
            if let unanswered, answers.isEmpty {
                message += " Not checked against the data: \(unanswered)."
            } else {
                evidence["rows"] = .int(rows)
                if let hit {
                    evidence["keys"] = .keys(hit.answer.keys)
                    if !hit.answer.groups.isEmpty {
                        evidence["duplicate-groups"] = .int(answers.reduce(0) { $0 + $1.answer.groupCount })
                        evidence["duplicates"] = .list(hit.answer.groups.map {
                            .record([("values", .string($0.values)), ("rows", .int($0.count)), ("keys", .keys($0.keys))])
                        })
                    }
                    if !hit.answer.samples.isEmpty { evidence["values"] = .list(hit.answer.samples.map(EvidenceValue.string)) }
                }
                if answers.count > 1 {
                    evidence["rows-per-store"] = .list(answers.map { .record([("store", .string($0.store)), ("rows", .int($0.answer.rows))]) })
                }
                message += " " + dataSentence(change, rows: rows, answer: hit?.answer)
            }
        }
        return Finding(id: rule.id, severity: severity, store: hit?.store ?? (stores.count == 1 ? stores[0].displayPath : nil),
                       entity: change.entity, message: message, evidence: evidence,
                       explanation: "\(rule.change.prefix(1).uppercased() + rule.change.dropFirst()): \(classText(rule.classification)) (\(rule.source)).",
                       suggestion: suggestion(change, rows: rows))
    }

    static func classText(_ c: MigrationClass) -> String {
        switch c {
        case .lightweight: return "lightweight"
        case .custom: return "needs a custom migration stage"
        case .lossy: return "goes through but loses data"
        }
    }

    static func dataSentence(_ change: ModelChange, rows: Int, answer: DataAnswer?) -> String {
        let r = "\(plural(rows, "row"))"
        let keys = answer.map { $0.keys.isEmpty ? "" : " (Z_PK \($0.keys.prefix(5).map(String.init).joined(separator: ", "))\($0.rows > 5 ? ", …" : ""))" } ?? ""
        switch change.question {
        case .rows?: return rows == 0 ? "The old store has no rows of it, so nothing is affected here." : "The old store has \(r) of it\(keys)."
        case .values?: return rows == 0 ? "No row holds a value, so nothing is lost here." : "\(r) \(rows == 1 ? "holds" : "hold") a value\(keys)."
        case .nulls?, .unlinked?: return rows == 0 ? "No row holds NULL there." : "\(r) \(rows == 1 ? "holds" : "hold") NULL there\(keys)."
        case .linked?: return rows == 0 ? "No row is linked through it." : "\(r) \(rows == 1 ? "is" : "are") linked through it\(keys)."
        case .duplicates?:
            let groups = answer?.groupCount ?? 0
            return rows == 0 ? "No values repeat in the old store." : "\(r) repeat another row's values (\(plural(groups, "group")))\(keys)."
        case .conversion?: return rows == 0 ? "Every stored value converts." : "\(r) \(rows == 1 ? "holds a value" : "hold values") the new type cannot hold\(keys)."
        case nil: return ""
        }
    }

    static func suggestion(_ change: ModelChange, rows: Int) -> String? {
        switch change.rule.id {
        case MigrationRule.probableRename.id:
            return "If it is a rename, declare @Attribute(originalName: \"\(change.facts.first { $0.0 == "old" }?.1 ?? "")\") (Core Data: the renaming identifier) on \(change.property ?? "the new property")."
        case MigrationRule.probableRelationshipRename.id, MigrationRule.probableEntityRename.id:
            return "If it is a rename, set the renaming identifier (SwiftData: originalName) to \(change.facts.first { $0.0 == "old" }?.1 ?? "the old name")."
        case MigrationRule.uniqueAdded.id:
            return rows > 0 ? "Add a custom MigrationStage whose willMigrate removes or merges the duplicates before the constraint applies." : nil
        case MigrationRule.attributeAddedRequired.id, MigrationRule.attributeMadeRequired.id:
            return "Give the property a default value, make it optional, or set it in a custom stage's willMigrate."
        case MigrationRule.attributeTypeChanged.id:
            return "Add a custom MigrationStage that copies the values into the new type (and decides what the unconvertible ones become)."
        case MigrationRule.relationshipAddedRequired.id, MigrationRule.relationshipMadeRequired.id:
            return "Make the relationship optional, or link every row in a custom stage."
        default:
            return change.rule.classification == .custom ? "Add a custom MigrationStage for this change." : nil
        }
    }
}

extension MigrationError: DescribedError {
    public var errorClass: ErrorClass { .input }
}
