import Foundation
import StoreFormats

/// `storelens.json`: the team's original-name table and writer policy for a migration
/// (docs/manifest.md). It names the stacks, where each keeps its store, who writes as each
/// stack, and for every entity its legacy and current names and which stack may write it.
public struct Manifest: Sendable {
    public static let supportedVersion = 1

    public enum StackKind: String, Sendable, CaseIterable {
        case coreData = "coredata"
        case swiftData = "swiftdata"
        case json
    }

    /// The history values that identify a stack's writes. Empty lists match nothing.
    public struct Writers: Sendable, Equatable {
        public var authors: [String] = []
        public var bundleIDs: [String] = []
        public var processNames: [String] = []
        public var contextNames: [String] = []
        public var isEmpty: Bool { authors.isEmpty && bundleIDs.isEmpty && processNames.isEmpty && contextNames.isEmpty }
        public init(authors: [String] = [], bundleIDs: [String] = [], processNames: [String] = [], contextNames: [String] = []) {
            self.authors = authors
            self.bundleIDs = bundleIDs
            self.processNames = processNames
            self.contextNames = contextNames
        }
    }

    public struct Stack: Sendable {
        public let name: String
        public let kind: StackKind
        /// Path of the store inside the container; `*` and `?` glob within a path component, `**` across.
        public let store: String
        public let writers: Writers
        /// For a JSON stack: the entity its records belong to (current name).
        public let entity: String?
        public let line: Int
    }

    public struct EntityRule: Sendable {
        /// The entity's name on the legacy side, when it differs or lives elsewhere.
        public let legacy: String?
        public let current: String
        /// The one stack allowed to write this entity.
        public let writer: String
        /// Legacy attribute name → current attribute name.
        public let attributes: [String: String]
        /// Attributes (current names) that identify one record across stacks.
        public let identity: [String]
        /// After this moment the legacy side must not be written.
        public let cutover: Date?
        public let line: Int

        /// The legacy name of a current attribute.
        public func legacyAttribute(for current: String) -> String {
            attributes.first { $0.value == current }?.key ?? current
        }
    }

    public let version: Int
    public let stacks: [Stack]
    public let entities: [EntityRule]
    public let path: String

    public func stack(_ name: String) -> Stack? { stacks.first { $0.name == name } }

    /// The rule for an entity given by its current or legacy name.
    public func rule(for name: String) -> EntityRule? {
        entities.first { $0.current == name } ?? entities.first { $0.legacy == name }
    }
}

/// A manifest problem, pointing at the line, column and field.
public struct ManifestError: Error, Equatable, CustomStringConvertible, Sendable {
    public let path: String
    public let line: Int
    public let column: Int
    /// The field, as a path: `entities[0].writer`.
    public let field: String
    public let problem: String

    public var description: String {
        "\(path):\(line):\(column): \(field.isEmpty ? "" : "\(field): ")\(problem)"
    }
}

extension Manifest {
    /// Reads and validates a manifest file.
    public static func load(path: String) throws -> Manifest {
        let data: Data
        do {
            let attributes = try FileManager.default.attributesOfItem(atPath: path)
            guard ((attributes[.size] as? NSNumber)?.intValue ?? 0) <= 4 << 20 else {
                throw ManifestError(path: path, line: 1, column: 1, field: "", problem: "the manifest is larger than 4 MiB")
            }
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch let error as ManifestError {
            throw error
        } catch {
            throw ManifestError(path: path, line: 0, column: 0, field: "", problem: "cannot be read (\(error.localizedDescription)); check the path given to --manifest")
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw ManifestError(path: path, line: 1, column: 1, field: "", problem: "is not UTF-8 text")
        }
        return try parse(text, path: path)
    }

    /// Parses and validates manifest text.
    public static func parse(_ text: String, path: String) throws -> Manifest {
        let root: PositionedJSON
        do {
            root = try PositionedJSON.parse(text)
        } catch let e as PositionedJSON.SyntaxError {
            throw ManifestError(path: path, line: e.position.line, column: e.position.column, field: "", problem: "not valid JSON: \(e.message)")
        }
        let reader = FieldReader(path: path)
        let top = try reader.object(root, field: "", allowed: ["manifestVersion", "stacks", "entities", "$comment"])
        guard let versionValue = top["manifestVersion"] else {
            throw reader.error(root, "", "manifestVersion is missing; add \"manifestVersion\": 1")
        }
        let version = try reader.int(versionValue, field: "manifestVersion")
        guard version == supportedVersion else {
            throw reader.error(versionValue, "manifestVersion", "version \(version) is not supported; this storelens reads version \(supportedVersion)")
        }

        var stacks: [Stack] = []
        for (i, item) in try reader.array(top["stacks"], field: "stacks", required: true, in: root).enumerated() {
            stacks.append(try parseStack(item, index: i, after: stacks, reader: reader))
        }
        var rules: [EntityRule] = []
        var currentByLegacy: [String: String] = [:]
        for (i, item) in try reader.array(top["entities"], field: "entities", required: true, in: root).enumerated() {
            rules.append(try parseRule(item, index: i, stacks: stacks, after: rules, currentByLegacy: &currentByLegacy, reader: reader))
        }
        for (i, stack) in stacks.enumerated() where stack.kind == .json {
            if let entity = stack.entity, !rules.contains(where: { $0.current == entity || $0.legacy == entity }) {
                throw ManifestError(path: path, line: stack.line, column: 1, field: "stacks[\(i)].entity",
                                    problem: "\"\(entity)\" has no rule in entities")
            }
        }
        return Manifest(version: version, stacks: stacks, entities: rules, path: path)
    }

    /// One entry of `stacks`, its name unique among the stacks before it.
    static func parseStack(_ item: PositionedJSON, index i: Int, after stacks: [Stack], reader: FieldReader) throws -> Stack {
        let field = "stacks[\(i)]"
        let o = try reader.object(item, field: field, allowed: ["name", "kind", "store", "writers", "entity", "$comment"])
        let name = try reader.string(o["name"], field: field + ".name", in: item)
        guard !stacks.contains(where: { $0.name == name }) else {
            throw reader.error(o["name"] ?? item, field + ".name", "a stack named \"\(name)\" is already defined")
        }
        let kindText = try reader.string(o["kind"], field: field + ".kind", in: item)
        guard let kind = StackKind(rawValue: kindText) else {
            throw reader.error(o["kind"] ?? item, field + ".kind", "unknown kind \"\(kindText)\"; use one of \(StackKind.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        let store = try reader.string(o["store"], field: field + ".store", in: item)
        var writers = Writers()
        if let w = o["writers"] {
            let wo = try reader.object(w, field: field + ".writers", allowed: ["authors", "bundleIDs", "processNames", "contextNames"])
            writers.authors = try reader.strings(wo["authors"], field: field + ".writers.authors")
            writers.bundleIDs = try reader.strings(wo["bundleIDs"], field: field + ".writers.bundleIDs")
            writers.processNames = try reader.strings(wo["processNames"], field: field + ".writers.processNames")
            writers.contextNames = try reader.strings(wo["contextNames"], field: field + ".writers.contextNames")
        }
        let entity = try o["entity"].map { try reader.string($0, field: field + ".entity", in: item) }
        if kind == .json && entity == nil {
            throw reader.error(item, field + ".entity", "a json stack must name the entity its records belong to")
        }
        return Stack(name: name, kind: kind, store: store, writers: writers, entity: entity, line: item.position.line)
    }

    /// One entry of `entities`: one rule per current entity, one current entity per legacy name
    /// (kept in `currentByLegacy`), a writer among the stacks.
    static func parseRule(_ item: PositionedJSON, index i: Int, stacks: [Stack], after rules: [EntityRule],
                          currentByLegacy: inout [String: String], reader: FieldReader) throws -> EntityRule {
        let field = "entities[\(i)]"
        let o = try reader.object(item, field: field, allowed: ["legacy", "current", "writer", "attributes", "identity", "cutover", "$comment"])
        let current = try reader.string(o["current"], field: field + ".current", in: item)
        let legacy = try o["legacy"].map { try reader.string($0, field: field + ".legacy", in: item) }
        if rules.contains(where: { $0.current == current }) {
            throw reader.error(o["current"] ?? item, field + ".current", "\"\(current)\" already has a rule; give each current entity one rule")
        }
        if let legacy {
            if let other = currentByLegacy[legacy], other != current {
                throw reader.error(o["legacy"] ?? item, field + ".legacy", "legacy name \"\(legacy)\" is already mapped to \"\(other)\"")
            }
            currentByLegacy[legacy] = current
        }
        let writerValue = o["writer"]
        let writer = try reader.string(writerValue, field: field + ".writer", in: item)
        guard stacks.contains(where: { $0.name == writer }) else {
            throw reader.error(writerValue ?? item, field + ".writer", "no stack is named \"\(writer)\"; stacks are \(stacks.map(\.name).joined(separator: ", "))")
        }
        let attributes = try o["attributes"].map { try attributeRenames($0, field: field + ".attributes", reader: reader) } ?? [:]
        let identity = try reader.strings(o["identity"], field: field + ".identity")
        var cutover: Date?
        if let c = o["cutover"] {
            let text = try reader.string(c, field: field + ".cutover", in: item)
            guard let date = ISO8601DateFormatter().date(from: text) else {
                throw reader.error(c, field + ".cutover", "\"\(text)\" is not an ISO 8601 date such as 2026-03-01T00:00:00Z")
            }
            cutover = date
        }
        return EntityRule(legacy: legacy, current: current, writer: writer, attributes: attributes,
                          identity: identity, cutover: cutover, line: item.position.line)
    }

    /// A rule's `attributes`: legacy name → current name, no two legacy names mapped to one.
    static func attributeRenames(_ a: PositionedJSON, field: String, reader: FieldReader) throws -> [String: String] {
        guard case .object(let members, _) = a else { throw reader.error(a, field, "must be an object of legacy name → current name") }
        var attributes: [String: String] = [:]
        var currentAttributes = Set<String>()
        for member in members {
            let target = try reader.string(member.value, field: field + ".\(member.key)", in: a)
            guard currentAttributes.insert(target).inserted else {
                throw reader.error(member.value, field + ".\(member.key)", "two legacy attributes map to \"\(target)\"")
            }
            attributes[member.key] = target
        }
        return attributes
    }
}

/// Reads typed fields from positioned JSON, with errors that say where and what was expected.
struct FieldReader {
    let path: String

    func error(_ value: PositionedJSON, _ field: String, _ problem: String) -> ManifestError {
        ManifestError(path: path, line: value.position.line, column: value.position.column, field: field, problem: problem)
    }

    func object(_ value: PositionedJSON, field: String, allowed: Set<String>) throws -> [String: PositionedJSON] {
        guard case .object(let members, _) = value else {
            throw error(value, field, "must be an object, not \(value.typeName)")
        }
        var result: [String: PositionedJSON] = [:]
        for member in members {
            let name = field.isEmpty ? member.key : field + "." + member.key
            guard allowed.contains(member.key) else {
                throw ManifestError(path: path, line: member.keyPosition.line, column: member.keyPosition.column, field: name,
                                    problem: "unknown field; expected one of \(allowed.filter { !$0.hasPrefix("$") }.sorted().joined(separator: ", "))")
            }
            guard result[member.key] == nil else {
                throw ManifestError(path: path, line: member.keyPosition.line, column: member.keyPosition.column, field: name, problem: "given twice")
            }
            result[member.key] = member.value
        }
        return result
    }

    func array(_ value: PositionedJSON?, field: String, required: Bool, in parent: PositionedJSON) throws -> [PositionedJSON] {
        guard let value else {
            if required { throw error(parent, field, "is missing") }
            return []
        }
        guard case .array(let items, _) = value else { throw error(value, field, "must be an array, not \(value.typeName)") }
        return items
    }

    func string(_ value: PositionedJSON?, field: String, in parent: PositionedJSON) throws -> String {
        guard let value else { throw error(parent, field, "is missing") }
        guard case .string(let s, _) = value else { throw error(value, field, "must be a string, not \(value.typeName)") }
        guard !s.isEmpty else { throw error(value, field, "must not be empty") }
        return s
    }

    func strings(_ value: PositionedJSON?, field: String) throws -> [String] {
        guard let value else { return [] }
        guard case .array(let items, _) = value else { throw error(value, field, "must be an array of strings, not \(value.typeName)") }
        return try items.enumerated().map { i, item in
            guard case .string(let s, _) = item else { throw error(item, "\(field)[\(i)]", "must be a string, not \(item.typeName)") }
            return s
        }
    }

    func int(_ value: PositionedJSON, field: String) throws -> Int {
        guard case .number(let n, _) = value, n == n.rounded(), let i = Int(exactly: n) else {
            throw error(value, field, "must be a whole number, not \(value.typeName)")
        }
        return i
    }
}

extension ManifestError: DescribedError {
    public var errorClass: ErrorClass { .input }
}
