import CoreDataStore
import Findings
import Foundation
import Operations
import SQLiteValues
import StoreFormats

/// Findings as SARIF 2.1.0 (OASIS Static Analysis Results Interchange Format), the log GitHub code
/// scanning, GitLab and most CI services show on a pull request: one rule per finding id, one
/// result per finding, at the model file and line when the finding is about a model read from an
/// Xcode model, else at the store.
public enum SARIF {
    public static let version = "2.1.0"
    public static let schema = "https://json.schemastore.org/sarif-2.1.0.json"

    /// Where a finding is: a file (relative to the working folder when it lies inside it), and
    /// the line of the element it is about.
    public struct Location: Sendable, Equatable {
        public let path: String
        public let line: Int?
        /// `path` is a store's display path: the log finds the file it is in (`SARIFPlaces.store`).
        let isStore: Bool

        public init(path: String, line: Int? = nil) {
            self.init(path: path, line: line, isStore: false)
        }

        init(path: String, line: Int?, isStore: Bool) {
            self.path = path
            self.line = line
            self.isStore = isStore
        }

        /// A store by its display path: the log locates it at the file a reviewer can open (a
        /// store inside an archive at the archive, `SARIFPlaces.store`).
        public static func store(_ displayPath: String) -> Location {
            Location(path: displayPath, line: nil, isStore: true)
        }
    }

    /// A finding and where it is.
    public struct Located: Sendable {
        public let finding: Finding
        public let location: Location?
        public init(_ finding: Finding, at location: Location?) {
            self.finding = finding
            self.location = location
        }
    }

    /// The whole log: one run of `storelens COMMAND`.
    /// - Parameter places: where the files are on disk (the command's, made with its inputs as
    ///   given: a store found in a folder input is named relative to that folder, and located
    ///   through it, as its artifact must exist relative to `SRCROOT`).
    public static func log(_ results: [Located], command: String, toolVersion: String, places: SARIFPlaces) -> JSONValue {
        let results = results.map { r in
            Located(r.finding, at: r.location.map { Location(path: places.onDisk($0.isStore ? places.store($0.path) : $0.path), line: $0.line) })
        }
        let rules = ruleOrder(results.map(\.finding))
        let ruleIndex = Dictionary(uniqueKeysWithValues: rules.enumerated().map { ($1.id, $0) })
        return .object([
            ("$schema", .string(schema)),
            ("version", .string(version)),
            ("runs", .array([.object([
                ("tool", .object([("driver", .object([
                    ("name", .string("storelens")),
                    ("semanticVersion", .string(toolVersion)),
                    ("rules", .array(rules.map(rule))),
                ]))])),
                ("automationDetails", .object([("id", .string("storelens/\(command)/"))])),
                ("originalUriBaseIds", .object([("SRCROOT", .object([("uri", .string(sourceRoot(places)))]))])),
                ("results", .array(results.map { result($0, ruleIndex: ruleIndex[$0.finding.id] ?? 0, places: places) })),
            ])])),
        ])
    }

    /// One rule per finding id, in the order first met; its texts are the finding's own
    /// explanation and suggestion, as the text and JSON views print them.
    static func ruleOrder(_ findings: [Finding]) -> [Finding] {
        var seen = Set<String>()
        return findings.filter { seen.insert($0.id).inserted }
    }

    static func rule(_ first: Finding) -> JSONValue {
        var members: [(String, JSONValue)] = [
            ("id", .string(first.id)),
            ("name", .string(ruleName(first.id))),
            ("shortDescription", .object([("text", .string(firstSentence(first.explanation)))])),
            ("fullDescription", .object([("text", .string(first.explanation))])),
            ("defaultConfiguration", .object([("level", .string(level(first.severity)))])),
        ]
        if let suggestion = first.suggestion { members.append(("help", .object([("text", .string(suggestion))]))) }
        return .object(members)
    }

    static func result(_ located: Located, ruleIndex: Int, places: SARIFPlaces) -> JSONValue {
        let f = located.finding
        var members: [(String, JSONValue)] = [
            ("ruleId", .string(f.id)),
            ("ruleIndex", .int(ruleIndex)),
            ("level", .string(level(f.severity))),
            ("message", .object([("text", .string(f.message))])),
        ]
        var location: [(String, JSONValue)] = []
        if let place = located.location {
            // A store is a binary file: its results are at line 1, which code scanning requires
            // of every result (GH1003), as it places results on binary files.
            let physical: [(String, JSONValue)] = [("artifactLocation", artifact(place.path, places: places)),
                                                   ("region", .object([("startLine", .int(max(place.line ?? 1, 1)))]))]
            location.append(("physicalLocation", .object(physical)))
        }
        if let entity = f.entity {
            location.append(("logicalLocations", .array([.object([("name", .string(entity)), ("kind", .string("type"))])])))
        }
        if !location.isEmpty { members.append(("locations", .array([.object(location)]))) }
        members.append(("partialFingerprints", .object([("storelens/v1", .string(fingerprint(f, at: located.location.map { places.canonical($0.path) })))])))
        if !f.evidence.isEmpty {
            let evidence = f.evidence.sorted { $0.key < $1.key }.map { ($0.key, FindingsReport.json($0.value)) }
            members.append(("properties", .object([("evidence", .object(evidence))])))
        }
        return .object(members)
    }

    /// The same for the same problem in the same place, run after run: the id, the store, the
    /// entity and the evidence that names what is affected (relationship, column, attributes),
    /// never counts or keys, which change as the data does.
    /// The store is named by where it is, not how it was typed (`default.store`, `./x/../default.store`
    /// and its absolute path are one place): `canonical`, the file's resolved path relative to the
    /// working folder's (`SARIFPlaces.canonical`).
    static func fingerprint(_ f: Finding, at canonical: String? = nil) -> String {
        let naming = ["relationship", "column", "attributes", "relationships", "attribute", "table", "index"]
        let place = canonical ?? f.store ?? ""
        let parts = [f.id, place, f.entity ?? ""] + naming.compactMap { key in f.evidence[key].map { "\(key)=\($0.text)" } }
        var hasher = SHA256()
        hasher.update(Data(parts.joined(separator: "\u{1F}").utf8))
        return hasher.finalizeHex()
    }

    /// SARIF's levels: `error`, `warning`, `note`.
    static func level(_ severity: Finding.Severity) -> String {
        switch severity {
        case .error: return "error"
        case .warning: return "warning"
        case .info: return "note"
        }
    }

    /// `zmax-below-max-pk` → `ZmaxBelowMaxPk`, the rule's name in SARIF's PascalCase habit.
    static func ruleName(_ id: String) -> String {
        id.split(separator: "-").map { $0.prefix(1).uppercased() + $0.dropFirst() }.joined()
    }

    static func firstSentence(_ text: String) -> String {
        guard let end = text.range(of: ". ") else { return text }
        return String(text[..<end.lowerBound]) + "."
    }

    /// The working folder as a `file:` URI ending in `/`: relative artifact paths are relative to it.
    static func sourceRoot(_ places: SARIFPlaces) -> String {
        URL(fileURLWithPath: places.workingFolder, isDirectory: true).absoluteString
    }

    /// A path inside the working folder as a relative URI against `SRCROOT`, anything else as an
    /// absolute `file:` URI. Percent-encoded either way (a store path may hold any byte).
    static func artifact(_ path: String, places: SARIFPlaces) -> JSONValue {
        let root = URL(fileURLWithPath: places.workingFolder, isDirectory: true).standardizedFileURL.path
        let absolute = URL(fileURLWithPath: path, relativeTo: URL(fileURLWithPath: root, isDirectory: true)).standardizedFileURL
        let prefix = root.hasSuffix("/") ? root : root + "/"
        if absolute.path.hasPrefix(prefix) {
            let relative = String(absolute.path.dropFirst(prefix.count))
            return .object([("uri", .string(URIPath.escaped(relative))), ("uriBaseId", .string("SRCROOT"))])
        }
        return .object([("uri", .string(absolute.absoluteString))])
    }
}

extension SARIF {
    /// Where a finding about a model is: the line of its entity (or of the first property its
    /// evidence names) in the Xcode model file the model was read from; nil for a model read
    /// from elsewhere (a store's cache, a compiled model).
    public static func location(of finding: Finding, declaredIn declarations: StoreModel.ModelDeclarations?) -> Location? {
        guard let declarations, let entity = finding.entity else { return nil }
        // `migration`'s findings name their property alone (`property`); `lint`'s list them.
        let named: String? = { if case .string(let p)? = finding.evidence["property"] { return p } else { return nil } }()
        let property = named ?? ["attributes", "relationships"].lazy.compactMap { key -> String? in
            guard case .list(let names)? = finding.evidence[key], case .string(let name)? = names.first else { return nil }
            // "relationship → Destination" names the relationship first.
            return String(name.split(separator: " ").first ?? "")
        }.first
        return Location(path: declarations.file, line: declarations.line(entity: entity, property: property))
    }
}
