import CoreDataStore
import Findings
import Foundation
import SQLiteAccess
import StoreFormats

// MARK: - Records

extension Auditor {
    /// One side's records: identity key → primary key and compared values; and how many.
    struct SideRecords {
        var byKey: [String: [(pk: String, values: [String: String?])]] = [:]
        var count = 0
    }

    /// Reads every side of one rule and compares them with the writer's side: duplicates by
    /// identity, records missing on either side, values that differ.
    func compareRecords(rule: Manifest.EntityRule, sides: [SideSource]) throws -> ([AuditResult.Side], [Finding]) {
        guard let writerSide = sides.first(where: { $0.stack.name == rule.writer }) ?? sides.first else { return ([], []) }
        // Attribute types from the writer's model decide how JSON values are read.
        let types: [String: ModelAttributeType] = Dictionary(
            (writerSide.mapping?.attributes ?? []).map { ($0.attribute.name, $0.attribute.type) }, uniquingKeysWith: { a, _ in a })
        let compared = (writerSide.mapping?.attributes ?? []).map(\.attribute.name).filter { !rule.identity.contains($0) }
        var records: [String: SideRecords] = [:]
        var result: [AuditResult.Side] = []
        for side in sides {
            let recordsHere = try read(side: side, rule: rule, isWriter: side.stack.name == writerSide.stack.name,
                                       attributes: compared, types: types)
            records[side.stack.name + "|" + side.storePath] = recordsHere
            result.append(.init(stack: side.stack.name, store: side.storePath, entity: side.entity, records: recordsHere.count))
        }
        guard sides.count > 1 else { return (result, []) }
        var findings: [Finding] = []
        let writer = (side: writerSide, records: records[writerSide.stack.name + "|" + writerSide.storePath] ?? SideRecords())
        if !rule.identity.isEmpty, let duplicates = duplicateImport(rule: rule, writer: writer) { findings.append(duplicates) }
        for side in sides where !(side.stack.name == writerSide.stack.name && side.storePath == writerSide.storePath) {
            let other = (side: side, records: records[side.stack.name + "|" + side.storePath] ?? SideRecords())
            findings += differences(rule: rule, other: other, writer: writer, compared: compared)
        }
        return (result, findings)
    }

    /// The finding for the identities the writer's side holds more than once; nil when none does.
    func duplicateImport(rule: Manifest.EntityRule, writer: (side: SideSource, records: SideRecords)) -> Finding? {
        let duplicates = writer.records.byKey.filter { $0.value.count > 1 }.sorted { $0.key < $1.key }
        guard !duplicates.isEmpty else { return nil }
        return Finding(
            id: "duplicate-import", severity: .error, store: writer.side.storePath, entity: rule.current,
            message: "\(plural(duplicates.count, "record")) of \(rule.current) exist\(duplicates.count == 1 ? "s" : "") more than once by identity (\(rule.identity.joined(separator: ", "))).",
            evidence: ["count": .int(duplicates.count),
                       "records": .list(duplicates.prefix(evidenceLimit).map { .record([("identity", .string($0.key)), ("pks", .list($0.value.map { .string($0.pk) }))]) })],
            explanation: "An import that ran twice (or two stacks inserting the same record) leaves duplicates that users see twice.",
            suggestion: "Remove the extra copies, keeping the most recently updated one: `storelens repair --manifest` does this.")
    }

    /// How another side differs from the writer's: by count alone when the rule names no
    /// identity; else the records missing on either side, and the values that differ.
    func differences(rule: Manifest.EntityRule, other: (side: SideSource, records: SideRecords),
                     writer: (side: SideSource, records: SideRecords), compared: [String]) -> [Finding] {
        let (side, theirs) = other, (writerSide, ours) = writer
        let sameKind = side.stack.kind == writerSide.stack.kind
        guard !rule.identity.isEmpty else {
            guard theirs.count != ours.count else { return [] }
            return [Finding(
                id: "count-mismatch", severity: .info, store: side.storePath, entity: rule.current,
                message: "\(side.stack.name) has \(theirs.count) records of \(side.entity); \(writerSide.stack.name) has \(ours.count) of \(rule.current).",
                evidence: ["\(side.stack.name)": .int(theirs.count), "\(writerSide.stack.name)": .int(ours.count)],
                explanation: "Without identity attributes in the manifest, records can only be counted, not matched.",
                suggestion: "Add \"identity\" to the entity's rule so missing and duplicated records can be named.")]
        }
        var findings: [Finding] = []
        let missing = theirs.byKey.keys.filter { ours.byKey[$0] == nil }.sorted()
        let extra = ours.byKey.keys.filter { theirs.byKey[$0] == nil }.sorted()
        if !missing.isEmpty {
            let id = side.json != nil ? "json-not-imported" : sameKind ? "copy-diverged" : "not-migrated"
            let what = side.json != nil ? "the legacy JSON file" : "\(side.stack.name)"
            findings.append(Finding(
                id: id, severity: sameKind ? .warning : .error, store: side.storePath, entity: rule.current,
                message: "\(plural(missing.count, "record")) of \(side.entity) in \(what) \(missing.count == 1 ? "is" : "are") missing from \(writerSide.stack.name)'s \(rule.current).",
                evidence: ["count": .int(missing.count), "identities": .list(missing.prefix(evidenceLimit).map(EvidenceValue.string)),
                           "pks": .list(missing.prefix(evidenceLimit).compactMap { theirs.byKey[$0]?.first?.pk }.map(EvidenceValue.string))],
                explanation: sameKind
                    ? "Two copies of one store have drifted apart: each holds records the other lacks."
                    : "These records were never migrated: after the legacy side is removed, users lose them.",
                suggestion: sameKind ? "Decide which copy is authoritative and stop writing the other." : "Import the missing records: `storelens repair --manifest` does this."))
        }
        if !extra.isEmpty && sameKind {
            findings.append(Finding(
                id: "copy-diverged", severity: .warning, store: writerSide.storePath, entity: rule.current,
                message: "\(plural(extra.count, "record")) of \(rule.current) in \(writerSide.stack.name) \(extra.count == 1 ? "is" : "are") missing from \(side.stack.name).",
                evidence: ["count": .int(extra.count), "identities": .list(extra.prefix(evidenceLimit).map(EvidenceValue.string))],
                explanation: "Two copies of one store have drifted apart.",
                suggestion: "Decide which copy is authoritative and stop writing the other."))
        }
        if let mismatch = valueMismatch(rule: rule, other: other, writer: writer, compared: compared) { findings.append(mismatch) }
        return findings
    }

    /// Values of records present on both sides, compared through the attribute renames: the
    /// finding naming the records and attributes that differ; nil when none does.
    func valueMismatch(rule: Manifest.EntityRule, other: (side: SideSource, records: SideRecords),
                       writer: (side: SideSource, records: SideRecords), compared: [String]) -> Finding? {
        var differing: [EvidenceValue] = []
        var differingCount = 0
        var differingAttributes = Set<String>()
        for key in other.records.byKey.keys.sorted() {
            guard let theirs = other.records.byKey[key]?.first, let ours = writer.records.byKey[key]?.first else { continue }
            var diffs: [(String, EvidenceValue)] = []
            for attribute in compared {
                guard let theirValue = theirs.values[attribute], let ourValue = ours.values[attribute] else { continue }
                if theirValue != ourValue {
                    diffs.append((attribute, .string("\(theirValue ?? "null") → \(ourValue ?? "null")")))
                    differingAttributes.insert(attribute)
                }
            }
            if !diffs.isEmpty {
                differingCount += 1
                if differing.count < evidenceLimit { differing.append(.record([("identity", .string(key))] + diffs)) }
            }
        }
        guard differingCount > 0 else { return nil }
        return Finding(
            id: "value-mismatch", severity: .warning, store: other.side.storePath, entity: rule.current,
            message: "\(plural(differingCount, "record")) of \(rule.current) differ between \(other.side.stack.name) and \(writer.side.stack.name) in \(differingAttributes.sorted().joined(separator: ", ")).",
            evidence: ["count": .int(differingCount), "records": .list(differing)],
            explanation: "The same record carries different values on the two sides: one side was edited after the migration, or the import mapped a value wrongly.",
            suggestion: "Check which side is right; if the legacy side is still being written, see writer-violation and write-after-cutover.")
    }

    /// A legacy value as read, kept for importing it (`repair --manifest`).
    enum RawValue {
        case field(FieldValue)
        case json(PositionedJSON)
    }

    /// Reads one side's records: identity key → primary key and the compared attributes (current
    /// names), values in canonical form.
    func read(side: SideSource, rule: Manifest.EntityRule, isWriter: Bool, attributes: [String],
              types: [String: ModelAttributeType],
              visit: ((_ key: String, _ raw: [String: RawValue]) -> Void)? = nil) throws -> SideRecords {
        var result = SideRecords()
        // The other side uses legacy attribute names unless it is the same kind of stack (a copy).
        func nameHere(_ current: String) -> String { isWriter ? current : rule.legacyAttribute(for: current) }
        if let url = side.json {
            // Bounded before reading: the file comes from the device.
            let size = ((try? FileManager.default.attributesOfItem(atPath: url.path))?[.size] as? NSNumber)?.intValue ?? 0
            guard size <= 64 << 20 else {
                throw ManifestError(path: side.storePath, line: 0, column: 0, field: "", problem: "the legacy JSON file is \(size) bytes, above the 64 MiB storelens reads")
            }
            guard let text = String(data: try Data(contentsOf: url), encoding: .utf8) else {
                throw ManifestError(path: side.storePath, line: 0, column: 0, field: "", problem: "the legacy JSON file is not UTF-8 text")
            }
            let root: PositionedJSON
            do { root = try PositionedJSON.parse(text, maxBytes: 64 << 20) } catch let e as PositionedJSON.SyntaxError {
                throw ManifestError(path: side.storePath, line: e.position.line, column: e.position.column, field: "", problem: "the legacy JSON file is not valid JSON: \(e.message)")
            }
            var items: [PositionedJSON] = []
            if case .array(let a, _) = root { items = a }
            else if case .object(let members, _) = root, let first = members.first(where: { if case .array = $0.value { return true }; return false }),
                    case .array(let a, _) = first.value { items = a }
            for (n, item) in items.enumerated() {
                guard case .object(let members, _) = item else { continue }
                let fields = Dictionary(members.map { ($0.key, $0.value) }, uniquingKeysWith: { a, _ in a })
                let key = rule.identity.map { id in fields[nameHere(id)].flatMap { RecordValue.canonical(json: $0, as: types[id]) } ?? "null" }.joined(separator: "|")
                var values: [String: String?] = [:]
                for a in attributes { if let v = fields[nameHere(a)] { values[a] = RecordValue.canonical(json: v, as: types[a]) } }
                if let visit {
                    var raw: [String: RawValue] = [:]
                    for a in attributes + rule.identity { if let v = fields[nameHere(a)] { raw[a] = .json(v) } }
                    visit(key, raw)
                }
                result.byKey[key, default: []].append((pk: "#\(n + 1)", values: values))
                result.count += 1
            }
            return result
        }
        guard let opened = side.opened, let mapping = side.mapping else { return result }
        let reader = RowReader(map: opened.map, entity: mapping, decoder: opened.decoder)
        try reader.forEach(opened.connection) { row in
            let fields = Dictionary(row.values.map { ($0.name, $0.value) }, uniquingKeysWith: { a, _ in a })
            func value(_ current: String) -> FieldValue? {
                fields[nameHere(current)] ?? fields[current]
            }
            let key = rule.identity.map { id in value(id).flatMap(RecordValue.canonical) ?? "null" }.joined(separator: "|")
            var values: [String: String?] = [:]
            for a in attributes { if let v = value(a) { values[a] = RecordValue.canonical(v) } }
            if let visit {
                var raw: [String: RawValue] = [:]
                for a in attributes + rule.identity { if let v = value(a) { raw[a] = .field(v) } }
                visit(key, raw)
            }
            result.byKey[key, default: []].append((pk: "\(row.entity)#\(row.pk)", values: values))
            result.count += 1
        }
        return result
    }
}
