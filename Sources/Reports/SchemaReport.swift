import CoreDataStore
import Foundation
import Operations
import StoreFormats

/// The views of `schema`: the model with its SQL map (documented in docs/json-output.md).
public enum SchemaReport: PlainView {
    public static let schemaVersion = 1

    public static func json(_ store: Storelens.StoreSchema) -> JSONValue {
        let map = store.map
        let model = map.model
        return JSONDocument.make(schemaVersion: schemaVersion, [
            ("path", .string(store.path)),
            ("modelSource", .string(model.source.rawValue)),
            ("modelOrigin", .string(model.origin)),
            ("versionIdentifiers", .array(model.versionIdentifiers.map(JSONValue.string))),
            ("modelNotes", .array(model.notes.map(JSONValue.string))),
            ("disagreements", .array(model.disagreements.map(JSONValue.string))),
            // `TABLE.COLUMN` an inferred model reads as numbers although a to-one's index is on them.
            ("uncertainColumns", .array(model.uncertainColumns.map(JSONValue.string))),
            ("entities", .array(map.entities.map(json(entity:)))),
            ("joinTables", .array(map.joinTables.map(JSONValue.string))),
            ("unknownColumns", .array(map.unknownColumns.map {
                .object([("table", .string($0.table)), ("column", .string($0.column)), ("declaredType", .string($0.declaredType))])
            })),
            ("unknownTables", .array(map.unknownTables.map(JSONValue.string))),
            ("ubiquityTables", .array(map.ubiquityTables.map(JSONValue.string))),
            ("problems", .array(map.problems.map(JSONValue.string))),
            ("derivedAttributes", .array(map.derivedAttributeTriggers.map {
                .object([("entity", .string($0.entity)), ("attribute", .string($0.attribute)),
                         ("derivation", .string($0.derivation)), ("triggers", .array($0.triggers.map(JSONValue.string)))])
            })),
        ])
    }

    static func json(entity m: EntityMapping) -> JSONValue {
        let e = m.entity
        return .object([
            ("name", .string(e.name)),
            ("number", .optional(m.number)),
            ("className", .optional(e.className)),
            ("renamingIdentifier", .optional(e.renamingIdentifier)),
            ("legacyName", .optional(e.legacyName)),
            ("parent", .optional(e.parent)),
            ("abstract", .bool(e.isAbstract)),
            ("table", .string(m.table)),
            ("tableExists", .bool(m.tableExists)),
            ("entityNumbers", .array(m.entityNumbers.map(JSONValue.int))),
            ("attributes", .array(m.attributes.map(json(attribute:)))),
            ("relationships", .array(m.relationships.map(json(relationship:)))),
            ("uniqueConstraints", .array(e.uniqueConstraints.map { .array($0.map(JSONValue.string)) })),
            ("uniqueIndexes", .array(m.uniqueConstraints.map(json(index:)))),
            ("fetchIndexes", .array(m.fetchIndexes.map(json(index:)))),
        ])
    }

    static func json(attribute m: AttributeMapping) -> JSONValue {
        let a = m.attribute
        var members: [(String, JSONValue)] = [
            ("name", .string(a.name)),
            ("renamingIdentifier", .optional(a.renamingIdentifier)),
            ("legacyName", .optional(a.legacyName)),
            ("type", .string(a.type.name)),
            ("column", .optional(m.column)),
            ("optional", .bool(a.isOptional)),
            ("declaredBy", .string(m.declaredBy)),
            ("declaredType", .optional(m.declaredType)),
            ("default", .optional(a.defaultValue)),
            ("transformer", .optional(a.valueTransformerName)),
            ("externalStorage", .bool(a.allowsExternalBinaryDataStorage)),
            ("preservedOnDeletion", .bool(a.preservesValueOnDeletion)),
            ("derivation", .optional(a.derivation)),
        ]
        // The cache's raw NSFlagsKey, so bits without a name here are not lost from view.
        if let flags = a.cacheFlags {
            members.append(("cacheFlags", .object([
                ("raw", .int(Int(truncatingIfNeeded: flags.rawValue))),
                ("fileBackedFuture", .bool(flags.contains(.fileBackedFuture))),
                ("unknownBits", .int(Int(truncatingIfNeeded: flags.unknown.rawValue))),
            ])))
        }
        if a.type == .composite { members.append(("elements", .array(m.elements.map(json(attribute:))))) }
        return .object(members)
    }

    static func json(relationship m: RelationshipMapping) -> JSONValue {
        let r = m.relationship
        var column: String?
        switch m.kind {
        case .toOne: column = m.column
        case .toMany: column = m.foreignColumn.map { "\(m.foreignTable ?? "?").\($0)" }
        case .manyToMany: column = nil
        }
        return .object([
            ("name", .string(r.name)),
            ("destination", .string(r.destination)),
            ("toMany", .bool(r.isToMany)),
            ("ordered", .bool(r.isOrdered)),
            ("inverse", .optional(r.inverse)),
            ("deleteRule", .string(r.deleteRule.name)),
            ("column", .optional(column)),
            ("joinTable", .optional(m.joinTable)),
            ("kind", .string(m.kind.rawValue)),
            ("optional", .bool(r.isOptional)),
            ("minCount", .int(r.minCount)),
            ("maxCount", .int(r.maxCount)),
            ("renamingIdentifier", .optional(r.renamingIdentifier)),
            ("legacyName", .optional(r.legacyName)),
            ("declaredBy", .string(m.declaredBy)),
            ("entityKeyColumn", .optional(m.entityKeyColumn)),
            ("orderColumn", .optional(m.orderColumn)),
            ("joinColumns", m.joinTable == nil ? .null : .object([
                ("source", .optional(m.joinSourceColumn)), ("destination", .optional(m.joinDestinationColumn)),
            ])),
        ])
    }

    static func json(index: IndexMapping) -> JSONValue {
        .object([("properties", .array(index.properties.map(JSONValue.string))), ("index", .string(index.name)),
                 ("present", .bool(index.present)), ("note", .optional(index.note))])
    }

    // MARK: - Text

    static func sourceName(_ model: StoreModel) -> String {
        switch model.source {
        case .cache: return "cached model from \(model.origin)"
        case .xcdatamodel: return "Xcode model \(model.origin)"
        case .compiled: return "compiled model \(model.origin)"
        case .inferred: return "INFERRED from the SQL schema (no cached model, no --model): names and types are guesses"
        }
    }

    public static func text(_ store: Storelens.StoreSchema) -> String {
        let map = store.map
        let model = map.model
        var out = "\(TextTable.sanitized(store.path))\n"
        out += "  model       \(sourceName(model))\n"
        if !model.versionIdentifiers.isEmpty {
            out += "  versions    \(model.versionIdentifiers.map { "\"\($0)\"" }.joined(separator: ", "))\n"
        }
        for note in model.notes { out += "  note        \(TextTable.sanitized(note))\n" }
        if !model.disagreements.isEmpty {
            out += "  the cached model and --model disagree:\n"
            for d in model.disagreements { out += "    - \(TextTable.sanitized(d))\n" }
        }
        for m in map.entities { out += entityText(m) }
        out += storeWideText(map)
        return out
    }

    /// One entity's block: its facts, own attributes, relationships and constraints.
    static func entityText(_ m: EntityMapping) -> String {
        var out = ""
        let e = m.entity
        out += "\n"
        var head = "  \(e.name)"
        var facts: [String] = []
        if let n = m.number { facts.append("Z_ENT \(n)") } else { facts.append("not in Z_PRIMARYKEY") }
        if let legacy = e.legacyName { facts.append("was \(legacy)") }
        if let cls = e.className { facts.append("class \(cls)") }
        if let parent = e.parent { facts.append("parent \(parent)") }
        if e.isAbstract { facts.append("abstract") }
        facts.append("table \(m.table)" + (m.tableExists ? "" : " (missing)"))
        if m.entityNumbers.count > 1 { facts.append("Z_ENT in \(m.entityNumbers.map(String.init).joined(separator: ","))") }
        head += "  (" + facts.joined(separator: ", ") + ")\n"
        out += TextTable.sanitized(String(head.dropLast())) + "\n"
        let own = m.attributes.filter { $0.declaredBy == e.name }
        let inherited = m.attributes.count - own.count
        if !own.isEmpty || inherited > 0 {
            var rows: [[String]] = []
            for a in own { rows += attributeRows(a, indent: "") }
            if !rows.isEmpty {
                out += "    attributes\n" + TextTable.render(rows, indent: 6)
            }
            if inherited > 0 {
                out += "      (+ \(inherited) inherited from \(m.lineage.dropLast().joined(separator: " > ")))\n"
            }
        }
        let ownRelationships = m.relationships.filter { $0.declaredBy == e.name }
        if !ownRelationships.isEmpty {
            var rows: [[String]] = []
            for r in ownRelationships {
                let rel = r.relationship
                var kind = r.kind.rawValue
                if rel.isOrdered { kind += ", ordered" }
                var storage: String
                switch r.kind {
                case .toOne:
                    storage = r.column ?? "(no column)"
                    if let fek = r.entityKeyColumn { storage += " + \(fek)" }
                    if let fok = r.orderColumn { storage += " + \(fok)" }
                case .toMany:
                    storage = r.foreignColumn.map { "\(r.foreignTable ?? "?").\($0)" } ?? "(no column)"
                    if let fok = r.orderColumn { storage += " + \(fok)" }
                case .manyToMany:
                    storage = r.joinTable.map { "\($0) (\(r.joinSourceColumn ?? "?") → \(r.joinDestinationColumn ?? "?"))" } ?? "(no join table)"
                    if let fok = r.orderColumn { storage += " + \(fok)" }
                }
                var name = rel.name
                if let legacy = rel.legacyName { name += " (was \(legacy))" }
                rows.append([name, kind, rel.destination.isEmpty ? "?" : rel.destination,
                             rel.inverse.map { "inverse \($0)" } ?? "no inverse", rel.deleteRule.name, storage])
            }
            out += "    relationships\n" + TextTable.render(rows, indent: 6)
        }
        if !m.uniqueConstraints.isEmpty || !m.fetchIndexes.isEmpty {
            var rows: [[String]] = []
            for u in m.uniqueConstraints {
                rows.append(["unique", u.properties.joined(separator: ", "), u.name + (u.present ? "" : " (missing)") + (u.note.map { " (\($0))" } ?? "")])
            }
            for f in m.fetchIndexes {
                rows.append(["fetch index", f.properties.joined(separator: ", "), f.name + (f.present || f.note != nil ? "" : " (missing)") + (f.note.map { " (\($0))" } ?? "")])
            }
            out += "    constraints\n" + TextTable.render(rows, indent: 6)
        }
        return out
    }

    /// What holds for the whole store: unknown columns, derived attributes, ubiquity and unknown
    /// tables, problems.
    static func storeWideText(_ map: SchemaMap) -> String {
        var out = ""
        out += "\n"
        if map.unknownColumns.isEmpty {
            out += "  every column of every entity table is mapped\n"
        } else {
            out += "  unknown columns (no property of the model claims them)\n"
            for c in map.unknownColumns { out += "    " + TextTable.sanitized("\(c.table).\(c.column) \(c.declaredType)") + "\n" }
        }
        if !map.derivedAttributeTriggers.isEmpty {
            out += "  derived attributes (kept by Z_DA_ triggers that call functions only Core Data registers)\n"
            for d in map.derivedAttributeTriggers {
                out += "    " + TextTable.sanitized("\(d.entity).\(d.attribute) = \(d.derivation)") + "\n"
                for t in d.triggers { out += "      " + TextTable.sanitized(t) + "\n" }
                if d.triggers.isEmpty { out += "      (no Z_DA_ trigger in the store)\n" }
            }
        }
        if !map.ubiquityTables.isEmpty {
            out += "  ubiquity metadata (Core Data's legacy iCloud sync): " + TextTable.sanitized(map.ubiquityTables.joined(separator: ", ")) + "\n"
        }
        if !map.unknownTables.isEmpty {
            out += "  unknown tables: " + TextTable.sanitized(map.unknownTables.joined(separator: ", ")) + "\n"
        }
        if !map.problems.isEmpty {
            out += "  problems\n"
            for p in map.problems { out += "    - " + TextTable.sanitized(p) + "\n" }
        }
        return out
    }

    static func attributeRows(_ a: AttributeMapping, indent: String) -> [[String]] {
        let attribute = a.attribute
        var name = indent + attribute.name
        if let legacy = attribute.legacyName { name += " (was \(legacy))" }
        var facts: [String] = [attribute.isOptional ? "optional" : "required"]
        if let d = attribute.defaultValue { facts.append("default \(d)") }
        if let t = attribute.valueTransformerName { facts.append("transformer \(t)") }
        if attribute.allowsExternalBinaryDataStorage { facts.append("external storage") }
        if attribute.preservesValueOnDeletion { facts.append("preserved on deletion") }
        if attribute.cacheFlags?.contains(.fileBackedFuture) == true { facts.append("file-backed future") }
        if let unknown = attribute.cacheFlags?.unknown, !unknown.isEmpty {
            facts.append("unknown cache flags 0x" + String(unknown.rawValue, radix: 16))
        }
        if let d = attribute.derivation { facts.append("derived: \(d)") }
        var rows = [[name, attribute.type.name, a.elements.isEmpty ? (a.column ?? "(no column)") : "", facts.joined(separator: ", ")]]
        for element in a.elements { rows += attributeRows(element, indent: indent + "  .") }
        return rows
    }
}
