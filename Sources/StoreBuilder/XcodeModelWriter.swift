import Foundation

/// Writes a `ModelDescription` as an Xcode data model (`contents` XML inside `.xcdatamodel`
/// folders of an `.xcdatamodeld`, with `.xccurrentversion`), for testing `--model`.
/// Renaming identifiers are written as `elementID`, as Xcode's "Renaming ID" field stores them.
public enum XcodeModelWriter {
    /// The `contents` XML of one model version.
    public static func contents(_ model: ModelDescription) -> String {
        var out = "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n"
        out += "<model userDefinedModelVersionIdentifier=\"\(escape(model.versionIdentifiers.first ?? ""))\" type=\"com.apple.IDECoreDataModeler.DataModel\" documentVersion=\"1.0\" lastSavedToolsVersion=\"22522\" systemVersion=\"23A344\" minimumToolsVersion=\"Automatic\" sourceLanguage=\"Swift\" userDefinedModelVersionIdentifier2=\"\">\n"
        var composites: [(String, [AttributeDescription])] = []
        for e in model.entities {
            var tag = "    <entity name=\"\(escape(e.name))\" representedClassName=\"\(escape(e.className))\""
            if let parent = e.parent { tag += " parentEntity=\"\(escape(parent))\"" }
            if e.isAbstract { tag += " isAbstract=\"YES\"" }
            if let id = e.renamingIdentifier { tag += " elementID=\"\(escape(id))\"" }
            out += tag + " syncable=\"YES\">\n"
            for a in e.attributes {
                out += "        " + attribute(a, compositeName: a.type == .composite ? compositeName(e.name, a.name) : nil) + "\n"
                if a.type == .composite { composites.append((compositeName(e.name, a.name), a.elements)) }
            }
            for r in e.relationships {
                var tag = "<relationship name=\"\(escape(r.name))\""
                if r.isOptional { tag += " optional=\"YES\"" }
                if r.isToMany { tag += " toMany=\"YES\"" } else { tag += " maxCount=\"1\"" }
                if r.minCount > 0 { tag += " minCount=\"\(r.minCount)\"" }
                if r.isOrdered { tag += " ordered=\"YES\"" }
                let rule = ["No Action", "Nullify", "Cascade", "Deny"][r.deleteRule.rawValue]
                tag += " deletionRule=\"\(rule)\" destinationEntity=\"\(escape(r.destination))\""
                if let inverse = r.inverse { tag += " inverseName=\"\(escape(inverse))\" inverseEntity=\"\(escape(r.destination))\"" }
                if let id = r.renamingIdentifier { tag += " elementID=\"\(escape(id))\"" }
                out += "        " + tag + "/>\n"
            }
            for index in e.fetchIndexes {
                out += "        <fetchIndex name=\"\(escape(index.name))\">\n"
                for p in index.properties {
                    out += "            <fetchIndexElement property=\"\(escape(p))\" type=\"Binary\" order=\"ascending\"/>\n"
                }
                out += "        </fetchIndex>\n"
            }
            if !e.uniqueConstraints.isEmpty {
                out += "        <uniquenessConstraints>\n"
                for c in e.uniqueConstraints {
                    out += "            <uniquenessConstraint>\n"
                    for p in c { out += "                <constraint value=\"\(escape(p))\"/>\n" }
                    out += "            </uniquenessConstraint>\n"
                }
                out += "        </uniquenessConstraints>\n"
            }
            out += "    </entity>\n"
        }
        for (name, elements) in composites {
            out += "    <composite name=\"\(escape(name))\">\n"
            for a in elements { out += "        " + attribute(a, compositeName: nil) + "\n" }
            out += "    </composite>\n"
        }
        out += "</model>\n"
        return out
    }

    static func compositeName(_ entity: String, _ attribute: String) -> String {
        entity + attribute.prefix(1).uppercased() + attribute.dropFirst()
    }

    static func attribute(_ a: AttributeDescription, compositeName: String?) -> String {
        let typeName: String
        switch a.type {
        case .integer16: typeName = "Integer 16"
        case .integer32: typeName = "Integer 32"
        case .integer64: typeName = "Integer 64"
        case .decimal: typeName = "Decimal"
        case .double: typeName = "Double"
        case .float: typeName = "Float"
        case .string: typeName = "String"
        case .boolean: typeName = "Boolean"
        case .date: typeName = "Date"
        case .binaryData: typeName = "Binary"
        case .uuid: typeName = "UUID"
        case .uri: typeName = "URI"
        case .transformable: typeName = "Transformable"
        case .objectID: typeName = "Object ID"
        case .composite: typeName = "Composite"
        }
        var tag = "<attribute name=\"\(escape(a.name))\""
        if a.isOptional { tag += " optional=\"YES\"" }
        tag += " attributeType=\"\(typeName)\""
        if let compositeName { tag += " composite=\"\(escape(compositeName))\"" }
        if a.allowsExternalBinaryDataStorage { tag += " allowsExternalBinaryDataStorage=\"YES\"" }
        if let t = a.valueTransformerName { tag += " valueTransformerName=\"\(escape(t))\"" }
        if let id = a.renamingIdentifier { tag += " elementID=\"\(escape(id))\"" }
        if case .string(let s)? = a.defaultValue { tag += " defaultValueString=\"\(escape(s))\"" }
        if case .int(let i)? = a.defaultValue { tag += " defaultValueString=\"\(i)\"" }
        tag += " usesScalarValueType=\"NO\"/>"
        return tag
    }

    static func escape(_ s: String) -> String {
        s.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }

    /// Writes `<name>.xcdatamodeld/<version>.xcdatamodel/contents` for each version, and
    /// `.xccurrentversion` naming `current` (the last version when nil). Returns the bundle's URL.
    @discardableResult
    public static func write(versions: [(name: String, model: ModelDescription)], current: String? = nil,
                             to bundle: URL) throws -> URL {
        for (name, model) in versions {
            let folder = bundle.appendingPathComponent("\(name).xcdatamodel")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            try Data(contents(model).utf8).write(to: folder.appendingPathComponent("contents"))
        }
        let currentName = (current ?? versions.last?.name ?? "Model") + ".xcdatamodel"
        let plist = """
            <?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
            <plist version="1.0">
            <dict>
            \t<key>_XCCurrentVersionName</key>
            \t<string>\(escape(currentName))</string>
            </dict>
            </plist>

            """
        try Data(plist.utf8).write(to: bundle.appendingPathComponent(".xccurrentversion"))
        return bundle
    }
}
