import CoreDataStore
import Findings
import Foundation
import SQLiteAccess
import StoreFormats

/// A model's readiness for CloudKit (NSPersistentCloudKitContainer, SwiftData's
/// `cloudKitDatabase`), and what else a store shows a reviewer. Each rule is one finding id,
/// reported once per entity with the properties it concerns; only what the model (and, given a
/// store, its rows and history) proves is reported.
public enum CloudKitLint {
    /// The rules, with the finding id, severity and Apple's reason (docs/lint.md lists them).
    public enum Rule: String, CaseIterable, Sendable {
        case uniqueConstraint = "cloudkit-unique-constraint"
        case requiredRelationship = "cloudkit-required-relationship"
        case missingInverse = "cloudkit-missing-inverse"
        case denyDeleteRule = "cloudkit-deny-delete-rule"
        case orderedRelationship = "cloudkit-ordered-relationship"
        case requiredAttributeWithoutDefault = "cloudkit-required-attribute-without-default"
        case inlineBinary = "binary-without-external-storage"
        case historyOff = "history-off"
        case severalWriters = "several-writing-processes"
        case modelInferred = "lint-model-inferred"

        public var reason: String {
            switch self {
            case .uniqueConstraint:
                return "CloudKit cannot enforce uniqueness across devices, so NSPersistentCloudKitContainer refuses a model with unique constraints (Apple, \"Creating a Core Data Model for CloudKit\"; SwiftData: @Attribute(.unique) is not supported with CloudKit)."
            case .requiredRelationship:
                return "CloudKit records can arrive in any order, so every relationship must be optional (Apple, \"Creating a Core Data Model for CloudKit\")."
            case .missingInverse:
                return "NSPersistentCloudKitContainer requires every relationship to have an inverse (Apple, \"Creating a Core Data Model for CloudKit\")."
            case .denyDeleteRule:
                return "The Deny delete rule is not supported with CloudKit (Apple, \"Creating a Core Data Model for CloudKit\")."
            case .orderedRelationship:
                return "Ordered relationships are not supported with CloudKit (Apple, \"Creating a Core Data Model for CloudKit\")."
            case .requiredAttributeWithoutDefault:
                return "Every attribute must be optional or have a default value, because a record may arrive without it (Apple, \"Creating a Core Data Model for CloudKit\")."
            case .inlineBinary:
                return "Binary data stored in the row is read with every fetch of the row and counts against a CloudKit record's 1 MB; with external storage (@Attribute(.externalStorage)) Core Data keeps large values in files (the 100 KB threshold used here is inferred)."
            case .historyOff:
                return "Without persistent history a process cannot learn what another (a widget, an extension, CloudKit mirroring, which turns history on itself) changed; the store cannot show who writes it either."
            case .severalWriters:
                return "Each process that writes the store must merge the others' changes from persistent history, or its context keeps stale objects."
            case .modelInferred:
                return "The store has no cached model and none was given with --model: optionality, defaults, inverses and delete rules are unknown, so those rules were not applied."
            }
        }

        var severity: Finding.Severity {
            switch self {
            case .uniqueConstraint, .requiredRelationship, .missingInverse, .denyDeleteRule, .orderedRelationship, .requiredAttributeWithoutDefault: return .error
            case .inlineBinary, .modelInferred: return .warning  // inlineBinary: info when the store shows only small values
            case .historyOff, .severalWriters: return .info
            }
        }
    }

    /// Values at least this large (bytes) make an inline binary attribute a warning.
    public static let largeValueBytes = 100 * 1024

    /// Lints a store's model (cached, or `--model`), with what its rows and history show.
    public static func lint(_ opened: OpenedStore) throws -> [Finding] {
        var findings = lint(model: opened.model, store: opened.displayPath, opened: opened)
        if !opened.store.history.present {
            findings.append(Finding(id: Rule.historyOff.rawValue, severity: Rule.historyOff.severity, store: opened.displayPath, entity: nil,
                                    message: "The store has no persistent history tables.", evidence: [:], explanation: Rule.historyOff.reason,
                                    suggestion: "Turn on NSPersistentHistoryTrackingKey when several processes write the store or it syncs with CloudKit."))
        } else if let entities = try? HistoryReader(connection: opened.connection, store: opened.store, model: opened.model).summary() {
            // Per entity, the processes whose transactions changed it (a history that cannot be read here says nothing).
            for e in entities where e.entity != HistoryEntitySummary.noChangesName {
                let processes = Set(e.writers.compactMap { $0.processName ?? $0.bundleID })
                guard processes.count > 1 else { continue }
                let changes = e.writers.reduce(0) { $0 + $1.inserts + $1.updates + $1.deletes + $1.other }
                findings.append(Finding(id: Rule.severalWriters.rawValue, severity: Rule.severalWriters.severity, store: opened.displayPath, entity: e.entity,
                                        message: "Persistent history shows \(processes.count) processes writing \(e.entity) (\(plural(changes, "change"))).",
                                        evidence: ["processes": .list(processes.sorted().prefix(20).map(EvidenceValue.string)), "changes": .int(changes)],
                                        explanation: Rule.severalWriters.reason, suggestion: "Merge remote changes from persistent history in each process (NSPersistentHistoryTrackingKey, a history token per process)."))
            }
        }
        return findings.bySeverity
    }

    /// Lints a model alone (an Xcode or compiled model): what the model proves, no data.
    public static func lint(model: StoreModel, name: String) -> [Finding] {
        lint(model: model, store: name, opened: nil).bySeverity
    }

    static func lint(model: StoreModel, store: String, opened: OpenedStore?) -> [Finding] {
        var findings: [Finding] = []
        let inferred = model.source == .inferred
        if inferred {
            findings.append(Finding(id: Rule.modelInferred.rawValue, severity: Rule.modelInferred.severity, store: store, entity: nil,
                                    message: "The model was inferred from the SQL schema, so only unique constraints and binary data were linted.",
                                    evidence: [:], explanation: Rule.modelInferred.reason,
                                    suggestion: "Give the app's Xcode model with --model."))
        }
        // NSPersistentCloudKitContainer's own entities belong to Core Data, not to the app's model.
        let mirroring = Set(opened?.store.entities.filter { $0.kind == .cloudKit }.map(\.name) ?? [])
        for e in model.entities.sorted(by: { $0.name < $1.name }) where !mirroring.contains(e.name) && !e.name.hasPrefix("NSCK") {
            func add(_ rule: Rule, _ message: String, _ evidence: [String: EvidenceValue], _ suggestion: String?) {
                findings.append(Finding(id: rule.rawValue, severity: rule.severity, store: store, entity: e.name, message: message,
                                        evidence: evidence, explanation: rule.reason, suggestion: suggestion))
            }
            func names(_ list: [String]) -> EvidenceValue { .list(list.map(EvidenceValue.string)) }
            func joined(_ list: [String]) -> String { list.joined(separator: ", ") }

            if !e.uniqueConstraints.isEmpty {
                let tuples = e.uniqueConstraints.map { "(" + $0.joined(separator: ", ") + ")" }
                add(.uniqueConstraint, "\(e.name) has \(tuples.count == 1 ? "a uniqueness constraint" : "\(tuples.count) uniqueness constraints") on \(joined(tuples)).",
                    ["constraints": names(tuples)], "Remove the constraint (@Attribute(.unique) / #Unique) and deduplicate in code, e.g. after each import.")
            }
            let relationships = e.relationships.filter { !$0.isTransient && !$0.name.hasPrefix("(inverse of ") }
            guard !inferred else {
                if let f = lintBinary(e, store: store, opened: opened) { findings.append(f) }
                continue
            }
            let required = relationships.filter { !$0.isOptional }
            if !required.isEmpty {
                add(.requiredRelationship, "\(e.name) has \(plural(required.count, "non-optional relationship")): \(joined(required.map(\.name))).",
                    ["relationships": names(required.map(\.name))], "Make each relationship optional (SwiftData: `Type?`, or an optional array).")
            }
            let withoutInverse = relationships.filter { $0.inverse == nil }
            if !withoutInverse.isEmpty {
                add(.missingInverse, "\(e.name) has \(plural(withoutInverse.count, "relationship")) without an inverse: \(joined(withoutInverse.map { "\($0.name) → \($0.destination)" })).",
                    ["relationships": names(withoutInverse.map { "\($0.name) → \($0.destination)" })],
                    "Declare the inverse on the destination (SwiftData: @Relationship(inverse:)).")
            }
            let deny = relationships.filter { $0.deleteRule == .deny }
            if !deny.isEmpty {
                add(.denyDeleteRule, "\(e.name) uses the Deny delete rule on \(joined(deny.map(\.name))).", ["relationships": names(deny.map(\.name))],
                    "Use Nullify or Cascade, and enforce the rule in code.")
            }
            let ordered = relationships.filter { $0.isToMany && $0.isOrdered }
            if !ordered.isEmpty {
                add(.orderedRelationship, "\(e.name) has ordered relationship\(ordered.count == 1 ? "" : "s") \(joined(ordered.map(\.name))).", ["relationships": names(ordered.map(\.name))],
                    "Store the order in an attribute (an index or sort key) and make the relationship unordered.")
            }
            let requiredAttributes = e.attributes.filter { !$0.isTransient && !$0.isOptional && $0.defaultValue == nil && $0.derivation == nil }
            if !requiredAttributes.isEmpty {
                add(.requiredAttributeWithoutDefault,
                    "\(e.name) has \(plural(requiredAttributes.count, "non-optional attribute")) without a default value: \(joined(requiredAttributes.map(\.name))).",
                    ["attributes": names(requiredAttributes.map(\.name))], "Give each a default value in the model, or make it optional.")
            }
            if let f = lintBinary(e, store: store, opened: opened) { findings.append(f) }
        }
        return findings
    }

    /// Binary and transformable attributes kept in the row: a warning when the store holds a large
    /// value, information otherwise (the model alone cannot say how large the values get).
    static func lintBinary(_ e: ModelEntity, store: String, opened: OpenedStore?) -> Finding? {
        let inline = e.attributes.filter { !$0.isTransient && ($0.type == .binary || $0.isTransformable) && !$0.allowsExternalBinaryDataStorage }
        guard !inline.isEmpty else { return nil }
        var largest: [(name: String, bytes: Int, pk: Int?, large: Int)] = []
        if let opened, let mapping = opened.map.entity(named: e.name), mapping.tableExists, !mapping.entityNumbers.isEmpty {
            let filter = "Z_ENT IN (\(mapping.entityNumbers.map(String.init).joined(separator: ", ")))"
            for a in inline {
                guard let column = mapping.attributes.first(where: { $0.attribute.name == a.name })?.column else { continue }
                let c = Identifier.quoted(column), t = Identifier.quoted(mapping.table)
                // A table SQLite cannot read here leaves the sizes unknown, not the lint.
                guard let row = try? opened.connection.rows(
                    "SELECT length(\(c)) AS n, Z_PK, (SELECT count(*) FROM \(t) WHERE \(filter) AND length(\(c)) >= \(largeValueBytes)) FROM \(t) WHERE \(filter) AND \(c) IS NOT NULL ORDER BY n DESC LIMIT 1").first
                else { continue }
                largest.append((a.name, row[0].int ?? 0, row[1].int, row[2].int ?? 0))
            }
        }
        let rule = Rule.inlineBinary
        let list = inline.map(\.name).joined(separator: ", ")
        var evidence: [String: EvidenceValue] = ["attributes": .list(inline.map { .string($0.name) })]
        if !largest.isEmpty {
            evidence["largest"] = .list(largest.map { .record([("attribute", .string($0.name)), ("bytes", .int($0.bytes))] + ($0.pk.map { [("Z_PK", .int($0))] } ?? [])) })
        }
        let large = largest.reduce(0) { $0 + $1.large }
        if large > 0 {
            evidence["rows-at-least-100KB"] = .int(large)
            return Finding(id: rule.rawValue, severity: .warning, store: store, entity: e.name,
                           message: "\(e.name) keeps binary data in the row (\(list)), and \(large) stored value\(large == 1 ? " is" : "s are") at least \(largeValueBytes / 1024) KB.",
                           evidence: evidence, explanation: rule.reason, suggestion: "Turn on external storage (@Attribute(.externalStorage), \"Allows External Storage\").")
        }
        // Small or no values: worth knowing, not a warning.
        let note = opened == nil ? "" : largest.isEmpty ? " (the store holds no values)" : " (the largest stored value is \(largest.map(\.bytes).max() ?? 0) bytes)"
        return Finding(id: rule.rawValue, severity: .info, store: store, entity: e.name,
                       message: "\(e.name) keeps binary data in the row without external storage: \(list)\(note).",
                       evidence: evidence, explanation: rule.reason, suggestion: "If the values can grow past about 100 KB, turn on external storage.")
    }
}
