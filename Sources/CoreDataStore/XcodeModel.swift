import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

/// Reads an Xcode data model given with `--model`: an `.xcdatamodeld` folder (the version named
/// by its `.xccurrentversion`), one `.xcdatamodel` folder, or that folder's `contents` XML.
///
/// The model XML is the developer's, not evidence, but it is still parsed defensively: its size
/// is capped, DTDs and entities are refused (no entity expansion), and nothing outside the given
/// folder is read.
public enum XcodeModelReader {
    public static let maxContentsBytes = 32 << 20

    public static func read(_ url: URL) throws(ModelError) -> StoreModel {
        let fm = FileManager.default
        var isDirectory: ObjCBool = false
        guard fm.fileExists(atPath: url.path, isDirectory: &isDirectory) else {
            throw .xcodeModelUnreadable(path: url.path, detail: "no such file or folder")
        }
        var notes: [String] = []
        var contents = url
        var origin = url.lastPathComponent
        // A pre-Xcode-4 model: an .xcdatamodel folder with `elements` (a keyed archive) and no `contents`.
        if isDirectory.boolValue, url.pathExtension == "xcdatamodel",
           !fm.fileExists(atPath: url.appendingPathComponent("contents").path),
           fm.fileExists(atPath: url.appendingPathComponent("elements").path) {
            return try LegacyXcodeModelReader.read(url.appendingPathComponent("elements"), origin: url.lastPathComponent)
        }
        if !isDirectory.boolValue, url.lastPathComponent == "elements" {
            return try LegacyXcodeModelReader.read(url, origin: url.deletingLastPathComponent().lastPathComponent + "/elements")
        }
        if isDirectory.boolValue {
            if url.pathExtension == "xcdatamodeld" || !fm.fileExists(atPath: url.appendingPathComponent("contents").path) {
                let version = try currentVersion(of: url, notes: &notes)
                contents = url.appendingPathComponent(version).appendingPathComponent("contents")
                origin = url.lastPathComponent + "/" + version
            } else {
                contents = url.appendingPathComponent("contents")
            }
        }
        let data = try ModelFile.read(contents, what: "the contents file", limit: maxContentsBytes)
        var model = try parse(data, path: contents.path)
        model.origin = origin
        model.notes = notes + model.notes
        return model
    }

    /// The `.xcdatamodel` folder to read inside an `.xcdatamodeld`.
    static func currentVersion(of bundle: URL, notes: inout [String]) throws(ModelError) -> String {
        let fm = FileManager.default
        let versions = ((try? fm.contentsOfDirectory(atPath: bundle.path)) ?? [])
            .filter { $0.hasSuffix(".xcdatamodel") }.sorted()
        let marker = bundle.appendingPathComponent(".xccurrentversion")
        if let plist = ModelFile.marker(marker),
           let name = plist["_XCCurrentVersionName"] as? String {
            // The name must be a folder directly inside the bundle.
            guard !name.contains("/"), name != "..", name != ".", versions.contains(name) else {
                throw .xcodeModelUnreadable(path: marker.path, detail: ".xccurrentversion names \"\(name)\", which is not a model version in this folder")
            }
            if versions.count > 1 {
                notes.append("\(bundle.lastPathComponent) holds \(versions.count) versions; read the current one, \(name)")
            }
            return name
        }
        guard let last = versions.last else {
            throw .xcodeModelUnreadable(path: bundle.path, detail: "no .xcdatamodel version inside")
        }
        if versions.count > 1 {
            notes.append("\(bundle.lastPathComponent) has no readable .xccurrentversion; read \(last), the last of \(versions.count) versions by name")
        }
        return last
    }

    /// Parses the `contents` XML of one model version.
    public static func parse(_ data: Data, path: String) throws(ModelError) -> StoreModel {
        // XMLParser (libxml2) would expand entities; a model never declares any, nor a DTD.
        if let problem = XMLDeclarations.problem(in: data, allowingDoctype: false) {
            throw .xcodeModelUnreadable(path: path, detail: "the XML \(problem.hasPrefix("it ") ? String(problem.dropFirst(3)) : problem)")
        }
        let parser = XMLParser(data: data)
        let delegate = ModelXMLDelegate()
        parser.delegate = delegate
        parser.shouldResolveExternalEntities = false
        parser.shouldProcessNamespaces = false
        guard parser.parse(), delegate.sawModel else {
            let reason = parser.parserError.map { "\($0.localizedDescription)" } ?? "not a Core Data model XML (no <model> element)"
            throw .xcodeModelUnreadable(path: path, detail: "line \(parser.lineNumber): \(reason)")
        }
        if let problem = delegate.problem { throw .xcodeModelUnreadable(path: path, detail: problem) }
        guard delegate.closedModel else {
            throw .xcodeModelUnreadable(path: path, detail: "line \(parser.lineNumber): the XML ends before </model>; the file is cut off")
        }
        var model = delegate.finish()
        model.declarations = StoreModel.ModelDeclarations(file: path, lines: delegate.lines)
        return model
    }
}

/// Collects entities, attributes, relationships, constraints and indexes from the model XML.
private final class ModelXMLDelegate: NSObject, XMLParserDelegate {
    var sawModel = false
    var closedModel = false
    var versionIdentifier: String?
    var entities: [ModelEntity] = []
    /// Composite types (`<composite name=…>`), with their attributes.
    var composites: [String: [ModelAttribute]] = [:]
    /// Composite type name of each composite attribute, keyed by entity/composite and attribute name.
    var compositeTypeOf: [String: String] = [:]
    var notes: [String] = []
    var problem: String?
    /// The line each entity (`Entity`) and property (`Entity.property`) starts on.
    var lines: [String: Int] = [:]

    private var entity: ModelEntity?
    private var composite: (name: String, attributes: [ModelAttribute])?
    private var constraint: [String]?
    private var fetchIndex: ModelFetchIndex?
    private var elementCount = 0

    static func yes(_ value: String?) -> Bool { value == "YES" || value == "yes" || value == "true" }

    func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
                attributes a: [String: String]) {
        elementCount += 1
        if elementCount > 2_000_000 { problem = "the model has too many XML elements"; parser.abortParsing(); return }
        switch name {
        case "model":
            sawModel = true
            versionIdentifier = a["userDefinedModelVersionIdentifier"]
        case "entity":
            var e = ModelEntity(name: a["name"] ?? "")
            e.className = a["representedClassName"] ?? "NSManagedObject"
            e.parent = a["parentEntity"]
            e.isAbstract = Self.yes(a["isAbstract"])
            e.renamingIdentifier = a["renamingIdentifier"] ?? a["elementID"] ?? e.name
            e.versionHashModifier = a["versionHashModifier"]
            entity = e
            lines[e.name] = lines[e.name] ?? parser.lineNumber
        case "composite":
            composite = (a["name"] ?? "", [])
        case "attribute":
            let attributeName = a["name"] ?? ""
            let typeName = a["attributeType"] ?? "Undefined"
            var type = ModelAttributeType(xmlName: typeName) ?? .undefined
            if ModelAttributeType(xmlName: typeName) == nil {
                notes.append("attribute \(attributeName) has an unknown attributeType \"\(typeName)\"; read as Undefined")
            }
            if a["composite"] != nil { type = .composite }
            var attribute = ModelAttribute(name: attributeName, type: type)
            attribute.valueClassName = a["customClassName"]
            attribute.isOptional = Self.yes(a["optional"])
            attribute.isTransient = Self.yes(a["transient"])
            attribute.defaultValue = a["defaultValueString"] ?? a["defaultDateTimeInterval"]
            attribute.renamingIdentifier = a["renamingIdentifier"] ?? a["elementID"] ?? attributeName
            attribute.valueTransformerName = a["valueTransformerName"]
            attribute.allowsExternalBinaryDataStorage = Self.yes(a["allowsExternalBinaryDataStorage"])
            attribute.preservesValueOnDeletion = Self.yes(a["preserveAfterDeletion"])
            if composite != nil {
                if let compositeType = a["composite"] { compositeTypeOf["composite:\(composite!.name).\(attributeName)"] = compositeType }
                composite!.attributes.append(attribute)
            } else if entity != nil {
                if let compositeType = a["composite"] { compositeTypeOf["\(entity!.name).\(attributeName)"] = compositeType }
                entity!.attributes.append(attribute)
                lines[entity!.name + "." + attributeName] = parser.lineNumber
            }
        case "relationship":
            guard entity != nil else { return }
            let relationshipName = a["name"] ?? ""
            let toMany = Self.yes(a["toMany"])
            let maxCount = a["maxCount"].flatMap(Int.init) ?? (toMany ? 0 : 1)
            var r = ModelRelationship(name: relationshipName, destination: a["destinationEntity"] ?? "",
                                      inverse: a["inverseName"], isToMany: toMany,
                                      isOrdered: Self.yes(a["ordered"]), isOptional: Self.yes(a["optional"]),
                                      isTransient: Self.yes(a["transient"]),
                                      minCount: a["minCount"].flatMap(Int.init) ?? 0,
                                      maxCount: toMany ? (maxCount == 1 ? 0 : maxCount) : 1,
                                      deleteRule: a["deletionRule"].flatMap(ModelRelationship.DeleteRule.init(xmlName:)) ?? .nullify,
                                      renamingIdentifier: a["renamingIdentifier"] ?? a["elementID"] ?? relationshipName)
            if toMany && maxCount == 1 { r.maxCount = 0 }
            entity!.relationships.append(r)
            lines[entity!.name + "." + relationshipName] = parser.lineNumber
        case "uniquenessConstraint":
            constraint = []
        case "constraint":
            if constraint != nil, let value = a["value"] { constraint!.append(value) }
        case "fetchIndex":
            fetchIndex = ModelFetchIndex(name: a["name"] ?? "", elements: [])
        case "fetchIndexElement":
            if fetchIndex != nil, let property = a["property"] {
                fetchIndex!.elements.append(.init(property: property, ascending: a["order"] != "descending",
                                                  kind: a["type"] ?? "Binary"))
            }
        default:
            break
        }
    }

    func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
        switch name {
        case "model":
            closedModel = true
        case "entity":
            if let e = entity { entities.append(e) }
            entity = nil
        case "composite":
            if let c = composite { composites[c.name] = c.attributes }
            composite = nil
        case "uniquenessConstraint":
            if let c = constraint, !c.isEmpty { entity?.uniqueConstraints.append(c) }
            constraint = nil
        case "fetchIndex":
            if let f = fetchIndex { entity?.fetchIndexes.append(f) }
            fetchIndex = nil
        default:
            break
        }
    }

    func finish() -> StoreModel {
        // Composite attributes take their elements from the <composite> they name.
        func resolve(_ attribute: ModelAttribute, key: String, depth: Int) -> ModelAttribute {
            var attribute = attribute
            guard attribute.type == .composite, let typeName = compositeTypeOf[key] else { return attribute }
            guard depth < 8, let members = composites[typeName] else {
                notes.append("composite attribute \(attribute.name) names an unknown composite \(typeName)")
                return attribute
            }
            attribute.elements = members.map { resolve($0, key: "composite:\(typeName).\($0.name)", depth: depth + 1) }
            return attribute
        }
        var result: [ModelEntity] = []
        for var e in entities {
            e.attributes = e.attributes.map { resolve($0, key: "\(e.name).\($0.name)", depth: 0) }.sorted { $0.name < $1.name }
            e.relationships.sort { $0.name < $1.name }
            result.append(e)
        }
        return StoreModel(source: .xcdatamodel, entities: result.sorted { $0.name < $1.name },
                          versionIdentifiers: versionIdentifier.map { [$0] } ?? [], origin: "", notes: notes)
    }
}
